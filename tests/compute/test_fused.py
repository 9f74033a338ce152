"""compute.fused (the numpy backend's fused layer kernels) equals the operators block by block in float64; the
whole-loop tests run both its pure-numpy kernels and compute.fused_nb's compiled pass, when numba is installed
(tests/compute/test_fused_nb.py tests the compiled pass block by block)."""
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from compute.attnres import attn_res_weights
from compute.engine import ToyK3
from compute.kda import kda_layer
from compute.mla import mla_layer
from compute.moe import latent_moe
from compute.trace import Knobs
from tests.compute.trace_pairs import layer_tensor_pairs


from compute import fused_nb

PATHS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(not fused_nb.available(),
                                                                 reason="numba not installed (or K3_NO_NUMBA set)"))]


@pytest.fixture(scope="module", params=PATHS)
def model(request):
    m = ToyK3(device="cpu", dtype=torch.float64, backend="numpy", compiled=request.param == "numba")
    assert m.compiled == (request.param == "numba")
    return m


def test_numba_cache_goes_to_the_user_cache_even_when_the_package_folder_is_writable(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert os.access(Path(fused_nb.__file__).parent, os.W_OK)  # this checkout (or a root-owned site-packages)
    fused_nb._cache_dir_setup()
    assert fused_nb.os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "k3-explorer" / "numba")
    assert (tmp_path / "k3-explorer" / "numba").is_dir()


def test_no_numba_env_forces_the_numpy_kernels(monkeypatch):
    monkeypatch.setenv("K3_NO_NUMBA", "1")
    assert not fused_nb.available()
    m = ToyK3(device="cpu", backend="numpy", compiled=True)
    assert not m.compiled and m._pass is None
    assert m.run("Kimi K3", 1, Knobs(temperature=0.0)).passes[0].final["lm_head"].shape[0] == 2


def _rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def _same(fused: dict, ref: dict):
    assert fused.keys() == ref.keys()
    for k, r in ref.items():
        f = np.asarray(fused[k])
        r = np.asarray(r)
        assert f.shape == r.shape, k
        if r.dtype.kind in "iu":
            np.testing.assert_array_equal(f, r, err_msg=k)
        else:
            np.testing.assert_allclose(f, r, rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("T,cached,knobs", [(1, True, Knobs()), (1, False, Knobs()), (6, False, Knobs()),
                                            (5, True, Knobs()), (40, True, Knobs()),
                                            (3, True, Knobs(alpha=0.3, beta=0.7))])
def test_kda_block(model, T, cached, knobs):
    li = 1
    w, c, d = model.layers[li]["kda"], model.config, model.dims
    x = _rand(T, T, d.hidden)
    cache = None
    if cached:
        cache = {"conv": _rand(50 + T, d.conv - 1, 3 * d.kda_heads * d.kda_head_dim),
                 "state": 0.3 * _rand(60 + T, d.kda_heads, d.kda_head_dim, d.kda_head_dim)}
    y_r, t_r, c_r = kda_layer(x, w, d.kda_heads, d.kda_head_dim, c.kda_gate_lower_bound, cache, knobs.alpha,
                              knobs.beta, eps=c.rms_norm_eps)
    y_f, t_f, c_f = model._fused.mixer(li, x, cache, knobs)
    np.testing.assert_allclose(y_f, y_r, rtol=1e-10, atol=1e-12)
    _same(t_f, t_r)
    _same(c_f, c_r)


@pytest.mark.parametrize("T,S0", [(1, 0), (1, 7), (6, 0), (3, 4)])
def test_mla_block(model, T, S0):
    li = model.config.mla_layers[0]  # 0-based (3 in K3)
    assert model.config.mixer_types[li] == "mla"
    w, c, d = model.layers[li]["mla"], model.config, model.dims
    x = _rand(T + 10, T, d.hidden)
    cache = None if not S0 else {"c_kv": _rand(S0, S0, d.kv_lora), "k_rope": _rand(S0 + 1, S0, d.rope)}
    pos = np.arange(S0, S0 + T)
    y_r, t_r, c_r = mla_layer(x, w, d.mla_heads, d.nope, d.rope, d.v, d.kv_lora, pos, cache, gated=True,
                              rope_theta=None, eps=c.rms_norm_eps)
    y_f, t_f, c_f = model._fused.mixer(li, x, cache, Knobs())
    np.testing.assert_allclose(y_f, y_r, rtol=1e-10, atol=1e-12)
    _same(t_f, t_r)
    _same(c_f, c_r)


@pytest.mark.parametrize("T", [1, 6])
def test_moe_block(model, T):
    li = 5
    mw, c = model.layers[li]["moe"], model.config
    x = _rand(T + 20, T, model.dims.hidden)
    bias = mw["bias"] + 0.05 * _rand(3, mw["bias"].shape[0])
    y_r, t_r = latent_moe(x, mw, c.num_experts_per_tok, bias, c.routed_scaling_factor, c.n_group, c.topk_group,
                          c.hidden_act, c.situ_glu_beta1, c.situ_glu_beta2, c.rms_norm_eps)
    y_f, t_f = model._fused.ffn(li, x, bias)
    np.testing.assert_allclose(y_f, y_r, rtol=1e-10, atol=1e-12)
    _same(t_f, t_r)


@pytest.mark.parametrize("scale", [1.0, 400.0])
def test_attnres_mix_equals_operator_also_where_an_unshifted_softmax_would_overflow(model, scale):
    """The fused AttnRes may skip the softmax max-shift for speed; with pseudo-query weights scaled until
    exp(logit) overflows float64 (scale 400) the fused run must still equal the operator loop and stay finite."""
    import copy

    ids = [tid for _, tid in model.tokenizer.encode("Kimi K3 reads the next token")]
    runs = {}
    for kernels in ("operators", "auto"):
        big = copy.copy(model)  # the same engine with scaled AttnRes pseudo-queries
        big.layers = [dict(w, w_attn=w["w_attn"] * scale, w_mlp=w["w_mlp"] * scale) for w in model.layers]
        big.w_out = model.w_out * scale
        big.kernels = kernels
        big._pick_kernels()  # "operators": compute.attnres.BlockAttnRes; "auto": fused.BufferedAttnRes
        runs[kernels] = big.forward(ids, 0, Knobs())
    (ref, _, logits_ref), (fused, _, logits_f) = runs["operators"], runs["auto"]
    assert np.isfinite(logits_f).all()
    for li in (0, 11, 12, 13, 47, 92):
        for key in ("attnres.mixer", "attnres.mixer.out", "attnres.ffn", "attnres.ffn.out"):
            r, f = ref["layers"][li][key], fused["layers"][li][key]
            if r is None:  # nothing to mix yet (the first layer's mixer input is the embedding)
                assert f is None, (li, key)
                continue
            r, f = np.asarray(r), np.asarray(f)
            np.testing.assert_allclose(f, r, rtol=1e-7, atol=1e-9 * max(1.0, np.abs(r).max()), err_msg=(li, key))
    np.testing.assert_allclose(logits_f, logits_ref, rtol=1e-6, atol=1e-6 * np.abs(logits_ref).max())


@pytest.mark.parametrize("prompt,knobs", [("Kimi K3 reads the next token", Knobs(temperature=0.0)),
                                          ("로봇이 컵을 집었다", Knobs(alpha=0.4, beta=0.6, expert_bias={7: 2.0}))])
def test_one_layer_loop_fused_blocks_equal_operator_blocks(model, prompt, knobs):
    """The same layer loop with every block on the operators (kernels="operators") and on the fused kernels:
    every trace tensor of prefill and decode passes agrees in float64."""
    ops = ToyK3(device="cpu", dtype="float64", kernels="operators")
    assert model.fused_blocks == 2 * model.config.num_hidden_layers - 1 and ops.fused_blocks == 0  # dense layer 0
    a, b = ops.run(prompt, 3, knobs), model.run(prompt, 3, knobs)
    assert a.tokens == b.tokens
    for la, _, k, ra, fb in layer_tensor_pairs(a, b):
        ra, fb = np.asarray(ra), np.asarray(fb)
        if k == "mla.scores":
            ra, fb = np.where(np.isinf(ra), 0, ra), np.where(np.isinf(fb), 0, fb)
        np.testing.assert_allclose(fb, ra, rtol=1e-7, atol=1e-8 * max(1.0, np.abs(ra).max()), err_msg=(la.index, k))
    for pa, pb in zip(a.passes, b.passes):
        np.testing.assert_allclose(pb.final["lm_head"], pa.final["lm_head"], rtol=1e-7, atol=1e-7)


def test_forward_attnres_weights_equal_operator(model):
    """Layer 20's AttnRes weights in a fused run equal attn_res_weights over the stored residuals of the trace."""
    tr = model.run("Kimi K3 reads the next token", 1, Knobs(temperature=0.0))
    ps = tr.passes[0]
    bs = model.config.attn_res_block_size
    li = 20
    stored = [ps.embedding] + [ps.layers[j - 1].tensors["residual"] for j in range(bs, li + 1, bs)]
    mix, wts = attn_res_weights(ps.layers[li - 1].tensors["residual"], np.stack(stored), model.layers[li]["w_attn"])
    np.testing.assert_allclose(ps.layers[li].tensors["attnres.mixer"], wts, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ps.layers[li].tensors["attnres.mixer.out"], mix, rtol=1e-10, atol=1e-12)
