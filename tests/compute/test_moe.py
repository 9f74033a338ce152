"""Router (vs DeepSeek-V3's gate), Quantile Balancing, SiTU-GLU, the latent MoE layer."""
import math

import numpy as np
import pytest
import torch

from compute.dims import OpArgs
from compute.ops.moe import latent_moe, max_load_ratio, quantile_balance, route, situ_glu
from compute.ops.norms import rms_norm
from tests.compute.reference_dsv3_gate import dsv3_gate


@pytest.mark.parametrize("E,k,n_group,topk_group,scale,with_bias", [
    (896, 16, 1, 1, 1.0, True),   # K3
    (256, 8, 8, 4, 2.5, True),    # DeepSeek-V3
    (256, 8, 8, 4, 2.5, False),
    (64, 6, 4, 2, 1.0, True),
    (32, 4, 1, 1, 1.0, False),
])
def test_route_matches_dsv3_gate(E, k, n_group, topk_group, scale, with_bias):
    g = torch.Generator().manual_seed(E + k)
    logits = torch.randn(12, E, generator=g, dtype=torch.float64) * 2
    bias = torch.randn(E, generator=g, dtype=torch.float64) * 0.3 if with_bias else None
    w, idx = route(logits, bias, k, scale, n_group, topk_group)
    w_ref, idx_ref = dsv3_gate(logits.numpy(), None if bias is None else bias.numpy(), k, scale, n_group, topk_group)
    np.testing.assert_array_equal(idx.numpy(), idx_ref)  # both in descending score order
    np.testing.assert_allclose(w.numpy(), w_ref, rtol=1e-12)


def test_group_limit_really_limits():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(20, 256, generator=g, dtype=torch.float64)
    _, idx = route(logits, torch.zeros(256, dtype=torch.float64), 8, 2.5, n_group=8, topk_group=4)
    groups = idx // 32
    assert all(len(set(row.tolist())) <= 4 for row in groups)
    _, idx1 = route(logits, torch.zeros(256, dtype=torch.float64), 8, 2.5)
    assert any(len(set((r // 32).tolist())) > 4 for r in idx1)  # without limiting some tokens use > 4 groups


def test_bias_selects_but_does_not_weight():
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]], dtype=torch.float64)
    bias = torch.tensor([10.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    w, idx = route(logits, bias, 2)
    assert idx.tolist() == [[0, 3]]
    s0, s3 = 0.5, 1 / (1 + math.exp(-3.0))
    np.testing.assert_allclose(w.numpy(), [[s0 / (s0 + s3), s3 / (s0 + s3)]])


def test_quantile_balancing_flattens_a_skewed_router():
    m, n, k = 3584, 896, 16
    g = torch.Generator().manual_seed(7)
    popularity = torch.linspace(-2.5, 2.5, n, dtype=torch.float64)[torch.randperm(n, generator=g)]
    logits = torch.randn(m, n, generator=g, dtype=torch.float64) + popularity  # some experts favoured by all
    s = torch.sigmoid(logits)
    bias = torch.zeros(n, dtype=torch.float64)
    before = max_load_ratio(route(logits, bias, k)[1], n)
    assert before > 4.0
    ratios = []
    for _ in range(5):
        bias = quantile_balance(s, bias, k)
        ratios.append(max_load_ratio(route(logits, bias, k)[1], n))
    assert min(ratios) < 1.2, ratios
    assert ratios[-1] < 1.2, ratios


def test_quantile_balance_formula_small_by_hand():
    # m=4 tokens, n=4 experts, k=1 → q = 1: b_j' = −(2nd largest margin of expert j)
    s = torch.tensor([[0.9, 0.1, 0.2, 0.3],
                      [0.8, 0.2, 0.1, 0.4],
                      [0.7, 0.6, 0.3, 0.1],
                      [0.6, 0.5, 0.4, 0.2]], dtype=torch.float64)
    b = torch.zeros(4, dtype=torch.float64)
    # α_i = 2nd largest of s_i: 0.3, 0.4, 0.6, 0.5
    alpha = np.array([0.3, 0.4, 0.6, 0.5])
    margins = s.numpy() - alpha[:, None]
    expect = -np.sort(margins, axis=0)[::-1][1]
    np.testing.assert_allclose(quantile_balance(s, b, 1).numpy(), expect, rtol=1e-14)


def test_situ_glu_by_hand():
    for gv, uv in [(0.0, 1.0), (1.0, 2.0), (-3.0, 0.5), (50.0, 500.0), (-0.01, -7.0)]:
        expect = (4 * math.tanh(gv / 4) / (1 + math.exp(-gv))) * (25 * math.tanh(uv / 25))
        got = situ_glu(torch.tensor(gv, dtype=torch.float64), torch.tensor(uv, dtype=torch.float64)).item()
        assert got == pytest.approx(expect, rel=1e-13, abs=1e-15)
    big = situ_glu(torch.tensor(1e6), torch.tensor(1e6))
    assert big.item() <= 100.0 + 1e-4  # bounded by β₁β₂
    # near 0 it behaves like SwiGLU: silu(g) * u
    gv, uv = 0.05, 0.03
    assert situ_glu(torch.tensor(gv, dtype=torch.float64), torch.tensor(uv, dtype=torch.float64)).item() == \
        pytest.approx(gv / (1 + math.exp(-gv)) * uv, rel=1e-3)


def test_latent_moe_vs_loop_over_experts():
    g = torch.Generator().manual_seed(3)
    D, E, L, F, k, T = 8, 40, 4, 4, 5, 3
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    w = {"router": r(D, E), "down": r(D, L), "w13": r(E, L, 2 * F), "w2": r(E, F, L), "norm": r(L).abs() + 0.5,
         "up": r(L, D), "shared13": r(D, 2 * 8), "shared2": r(8, D)}
    bias = r(E) * 0.1
    x = r(T, D)
    y, t = latent_moe(x, w, OpArgs(top_k=k), bias)
    for i in range(T):
        s = 1 / (1 + np.exp(-(x[i] @ w["router"]).numpy()))
        chosen = np.argsort(-(s + bias.numpy()))[:k]
        ww = s[chosen] / s[chosen].sum()
        z = x[i] @ w["down"]
        mix = torch.zeros(L, dtype=torch.float64)
        for j, e in enumerate(chosen):
            h = z @ w["w13"][e]
            out = situ_glu(h[:F], h[F:]) @ w["w2"][e]
            torch.testing.assert_close(t["moe.experts"][i, j], out)
            mix = mix + ww[j] * out
        hs = x[i] @ w["shared13"]
        ref = rms_norm(mix, w["norm"]) @ w["up"] + situ_glu(hs[:8], hs[8:]) @ w["shared2"]
        torch.testing.assert_close(y[i], ref)
        np.testing.assert_array_equal(t["moe.topk_idx"][i].numpy(), chosen)


@pytest.mark.parametrize("n_group,topk_group,with_bias", [(1, 1, True), (8, 4, True), (8, 3, False), (256, 16, True)])
def test_route_numpy_equals_torch(n_group, topk_group, with_bias):
    """The numpy spelling (the engine's CPU path and the QB simulator run it without torch) selects the same
    experts with the same weights, also with DeepSeek-V3 group limiting."""
    g = torch.Generator().manual_seed(n_group + topk_group)
    logits = torch.randn(12, 256, generator=g, dtype=torch.float64) * 2
    bias = torch.randn(256, generator=g, dtype=torch.float64) * 0.3 if with_bias else None
    w_t, i_t = route(logits, bias, 8, 2.5, n_group, topk_group)
    w_n, i_n = route(logits.numpy(), None if bias is None else bias.numpy(), 8, 2.5, n_group, topk_group)
    assert isinstance(i_n, np.ndarray)
    np.testing.assert_array_equal(i_n, i_t.numpy())
    np.testing.assert_allclose(w_n, w_t.numpy(), rtol=1e-12)


def test_quantile_balance_numpy_equals_torch():
    g = torch.Generator().manual_seed(3)
    s = torch.rand(64, 32, generator=g, dtype=torch.float64)
    b = torch.randn(32, generator=g, dtype=torch.float64) * 0.1
    np.testing.assert_array_equal(quantile_balance(s.numpy(), b.numpy(), 4), quantile_balance(s, b, 4).numpy())
