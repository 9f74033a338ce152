"""Gated MLA vs an independent per-head numpy implementation; the latent cache continues a sequence exactly."""
import math
from dataclasses import replace

import numpy as np
import torch

from compute.dims import OpArgs
from compute.ops.mla import apply_rope, mla_layer
from compute.ops.norms import RMSNorm, rms_norm

D, H, QL, KL, NOPE, ROPE, V = 8, 2, 4, 3, 4, 2, 4
ARGS = OpArgs(mla_heads=H, nope=NOPE, rope=ROPE, v=V, kv_lora=KL)  # gated, NoPE: K3's MLA


def _weights(seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    return {"in": r(D, QL + KL + ROPE + H * V), "q_a_norm": r(QL).abs() + 0.5, "q_b": r(QL, H * (NOPE + ROPE)),
            "kv_a_norm": r(KL).abs() + 0.5, "kv_b": r(KL, H * (NOPE + V)), "o": r(H * V, D)}


def _np_rms(x, w, eps=1e-6):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * w


def _reference(x, w):
    """Spec §2 written per token and head in numpy (K3: NoPE, sigmoid output gate)."""
    x = x.numpy()
    W = {k: v.numpy() for k, v in w.items()}
    Wqa, Wkva, Wg = W["in"][:, :QL], W["in"][:, QL:QL + KL + ROPE], W["in"][:, QL + KL + ROPE:]
    T = x.shape[0]
    out = np.zeros((T, D))
    for t in range(T):
        q = _np_rms(x[t] @ Wqa, W["q_a_norm"]) @ W["q_b"]
        o_heads = []
        for h in range(H):
            qh = q[h * (NOPE + ROPE):(h + 1) * (NOPE + ROPE)]
            scores, vals = [], []
            for s in range(t + 1):  # causal: keys 0..t
                kv_a = x[s] @ Wkva
                c, kr = kv_a[:KL], kv_a[KL:]
                kvb = _np_rms(c, W["kv_a_norm"]) @ W["kv_b"]
                kh = np.concatenate([kvb[h * (NOPE + V):h * (NOPE + V) + NOPE], kr])
                vals.append(kvb[h * (NOPE + V) + NOPE:(h + 1) * (NOPE + V)])
                scores.append(qh @ kh / math.sqrt(NOPE + ROPE))
            p = np.exp(np.array(scores) - max(scores))
            p /= p.sum()
            o_heads.append(sum(pi * vi for pi, vi in zip(p, vals)))
        o = np.concatenate(o_heads)
        gate = 1 / (1 + np.exp(-(x[t] @ Wg)))
        out[t] = (o * gate) @ W["o"]
    return out


def test_mla_matches_reference():
    w = _weights()
    x = torch.randn(5, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y, t, cache = mla_layer(x, w, ARGS, torch.arange(5))
    np.testing.assert_allclose(y.numpy(), _reference(x, w), rtol=1e-11, atol=1e-12)
    assert cache["c_kv"].shape == (5, KL) and t["mla.scores"].shape == (H, 5, 5)
    assert torch.isinf(t["mla.scores"][:, 0, 1:]).all()  # causal mask


def test_latent_cache_continues_exactly():
    w = _weights(2)
    x = torch.randn(6, D, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    full, tf, _ = mla_layer(x, w, ARGS, torch.arange(6))
    _, _, cache = mla_layer(x[:4], w, ARGS, torch.arange(4))
    outs = []
    for i in (4, 5):
        y, t, cache = mla_layer(x[i:i + 1], w, ARGS, torch.tensor([i]), cache)
        outs.append(y)
    torch.testing.assert_close(torch.cat(outs), full[4:])
    torch.testing.assert_close(cache["c_kv"], tf["mla.c_kv"])
    assert cache["c_kv"].shape[1] + cache["k_rope"].shape[1] == KL + ROPE  # what one token costs in the cache


def test_ungated_with_rope_is_deepseek_style():
    w = _weights(4)
    w["in"] = w["in"][:, :QL + KL + ROPE]
    x = torch.randn(3, D, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    y, t, _ = mla_layer(x, w, replace(ARGS, mla_gated=False, rope_theta=10000.0), torch.arange(3))
    assert torch.equal(t["mla.o_gated"], t["mla.o"])
    # rotation preserves norms and position 0 is unrotated
    kr = x @ w["in"][:, QL + KL:]
    torch.testing.assert_close(t["mla.k_rope"][0], kr[0])
    torch.testing.assert_close(t["mla.k_rope"].norm(dim=-1), kr.norm(dim=-1))
    # by hand for one pair: angle = pos * theta^0 = pos
    r = apply_rope(torch.tensor([[1.0, 0.0]], dtype=torch.float64), torch.tensor([2]), 10000.0)
    np.testing.assert_allclose(r.numpy(), [[math.cos(2), math.sin(2)]], rtol=1e-14)


def test_rmsnorm_by_hand():
    x = torch.tensor([[1.0, 2.0, 2.0]], dtype=torch.float64)
    w = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
    r = math.sqrt((1 + 4 + 4) / 3 + 1e-6)
    np.testing.assert_allclose(rms_norm(x, w).numpy(), [[1 / r, 1 / r, 4 / r]], rtol=1e-14)
    np.testing.assert_allclose(RMSNorm(w)(x).numpy(), rms_norm(x, w).numpy())
