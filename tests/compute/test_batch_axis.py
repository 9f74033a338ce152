"""The mixers' batch axis (what compute.training.train runs): kda_layer / mla_layer on [B, T, D] equal the same operators
run row by row on [T, D] — numpy and torch, float64, NoPE and RoPE MLA, gated or not, KDA with and without the
lower-bound gate. A batch takes no cache."""
import numpy as np
import pytest
import torch

from compute.dims import OpArgs
from compute.engine import ToyDims
from compute.ops.kda import kda_layer
from compute.ops.mla import mla_layer
from compute.weights import draw_layout

D = ToyDims()


class _Cfg:  # just what draw_layout reads: one KDA and one MLA layer, dense FFNs
    def __init__(self, gated):
        self.num_hidden_layers, self.mixer_types, self.ffn_types = 2, ["kda", "mla"], ["dense", "dense"]
        self.n_routed_experts, self.moe_latent_size, self.n_shared_experts = 4, None, 0
        self.mla_output_gate = "sigmoid" if gated else None


def _weights(gated, lib):
    g = np.random.default_rng(3)
    layers = draw_layout(_Cfg(gated), D, 5, lambda *s, scale=1.0: g.standard_normal(s) * scale,
                         lambda n, lo, hi: g.uniform(lo, hi, n))[4]
    conv = (lambda a: torch.from_numpy(a)) if lib == "torch" else (lambda a: a)
    return [{k: conv(v) for k, v in w[m].items()} for w, m in zip(layers, ("kda", "mla"))]


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("variant", [dict(gated=True, rope=None, lb=-5.0), dict(gated=False, rope=10000.0, lb=None)])
def test_a_batch_is_its_rows(lib, variant):
    kw, mw = _weights(variant["gated"], lib)
    x = np.random.default_rng(5).standard_normal((3, 7, D.hidden))
    x = torch.from_numpy(x) if lib == "torch" else x
    pos = torch.arange(7) if lib == "torch" else np.arange(7)
    args = OpArgs(kda_heads=D.kda_heads, kda_head_dim=D.kda_head_dim, kda_lower_bound=variant["lb"],
                  mla_heads=D.mla_heads, nope=D.nope, rope=D.rope, v=D.v, kv_lora=D.kv_lora,
                  mla_gated=variant["gated"], rope_theta=variant["rope"])
    yk = kda_layer(x, kw, args, chunk_size=7)[0]
    ym = mla_layer(x, mw, args, pos)[0]
    assert tuple(yk.shape) == tuple(ym.shape) == (3, 7, D.hidden)
    for b in range(3):
        rk = kda_layer(x[b], kw, args)[0]
        rm = mla_layer(x[b], mw, args, pos)[0]
        assert np.allclose(np.asarray(yk[b]), np.asarray(rk), rtol=0, atol=1e-12)
        assert np.allclose(np.asarray(ym[b]), np.asarray(rm), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="no cache"):
        kda_layer(x, kw, args, cache={"conv": None, "state": None})
