"""Quantile Balancing and SiTU-GLU (compute.ops.moe) against their public definitions, in float64.

Quantile Balancing — reference: Jianlin Su, "MoE环游记：6、最优分配促均衡" (MoE World Tour 6: optimal allocation
for balance), kexue.fm/archives/11619, Feb 2026 (the blog states no code licence; only the definition is used,
re-derived here). Routing m tokens to n experts is the assignment problem

    max Σ x_ij s_ij   s.t.  Σ_j x_ij = k (every token takes k experts),  Σ_i x_ij = m·k/n (every expert its share)

(the problem as the series' next article, kexue.fm/archives/11626, restates it), whose dual gives x_ij = 1 iff
s_ij − α_i − β_j > 0. With the bias b = −β: α_i is a cut that leaves token i exactly k experts of s_ij + b_j
(any value from the (k+1)-th largest up to the k-th does; docs/spec/k3-math.md §3 takes the (k+1)-th), and the new β_j makes expert j take exactly q = ⌊m·k/n⌋
tokens: β_j is the (q+1)-th largest margin s_ij − α_i over the tokens. QB takes one such step per batch, the
new bias serving the next batch. Spelled below with Python sorting per token and per expert (no numpy
partition, no torch.topk), and checked by the property itself: with the new bias and the same α, every expert
takes q tokens (up to ties at the quantile).

SiTU-GLU — no public reference implementation was found (K3's config names `situ_glu` with β₁ = 4, β₂ = 25;
docs/spec/k3-math.md says so in its references note). Tested against a second, independent spelling in
scalar Python (tanh and the logistic written with math.exp / math.expm1), and against its public limit: for large β it
becomes SwiGLU, SiLU(g)·u (Shazeer, "GLU Variants Improve Transformer", arXiv:2002.05202), with SiLU from
torch.nn.functional.silu (PyTorch, BSD-3-Clause).
"""
import math

import numpy as np
import pytest
import torch

from compute.ops.moe import quantile_balance, situ_glu


def qb_by_definition(s, b, k):
    """One Quantile Balancing step written from the dual of the assignment problem (see the module doc)."""
    m, n = len(s), len(s[0])
    alpha = [sorted((s[i][j] + b[j] for j in range(n)), reverse=True)[k] for i in range(m)]
    q = (m * k) // n
    beta = [sorted((s[i][j] - alpha[i] for i in range(m)), reverse=True)[q] for j in range(n)]
    return [-x for x in beta], alpha, q


@pytest.mark.parametrize("m,n,k,seed", [(40, 8, 2, 0), (97, 16, 3, 1), (256, 32, 4, 2), (10, 5, 1, 3)])
def test_quantile_balance_matches_the_definition(m, n, k, seed):
    rng = np.random.default_rng(seed)
    skew = rng.normal(0, 1.5, n)
    s = 1 / (1 + np.exp(-(rng.normal(0, 1, (m, n)) + skew)))  # sigmoid scores, some experts popular
    b = rng.normal(0, 0.05, n)
    want, alpha, q = qb_by_definition(s.tolist(), b.tolist(), k)
    np.testing.assert_allclose(quantile_balance(s, b, k), want, rtol=0, atol=1e-15)  # numpy path
    got_t = quantile_balance(torch.tensor(s), torch.tensor(b), k)  # torch path
    np.testing.assert_allclose(got_t.numpy(), want, rtol=0, atol=1e-15)
    # the defining property: with α fixed, each expert now takes q tokens: at most q margins lie above its
    # threshold β_j = −b'_j and at least q+1 reach it (more than q+1 only for ties at the quantile: tokens
    # for which expert j was exactly the (k+1)-th choice all have the margin −b_j)
    margins, beta = s - np.array(alpha)[:, None], -np.asarray(want)[None, :]
    assert ((margins > beta).sum(0) <= q).all() and ((margins >= beta).sum(0) >= q + 1).all()
    assert (np.asarray(want) != b).any()  # it did move


def situ_glu_scalar(g, u, beta1, beta2):
    def tanh(y):  # (1 − e^{−2|y|}) / (1 + e^{−2|y|}), with expm1 so that tiny y keep their digits
        e = math.expm1(-2 * abs(y))
        return math.copysign(-e / (2 + e), y)

    logistic = 1 / (1 + math.exp(-g)) if g >= 0 else math.exp(g) / (1 + math.exp(g))
    return (beta1 * tanh(g / beta1) * logistic) * (beta2 * tanh(u / beta2))


@pytest.mark.parametrize("beta1,beta2", [(4.0, 25.0), (1.0, 2.0), (10.0, 0.5)])
def test_situ_glu_matches_a_second_spelling(beta1, beta2):
    rng = np.random.default_rng(int(beta1 * 10 + beta2))
    g = np.concatenate([rng.normal(0, 3, 200), [0.0, -0.0, 60.0, -60.0, 500.0, -500.0, 1e-9]])
    u = np.concatenate([rng.normal(0, 30, 200), [5.0, -5.0, 1e3, -1e3, 1e4, -1e4, 3.0]])
    want = np.array([situ_glu_scalar(a, c, beta1, beta2) for a, c in zip(g, u)])
    got = situ_glu(torch.tensor(g), torch.tensor(u), beta1, beta2).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(situ_glu(g, u, beta1, beta2), want, rtol=1e-12, atol=1e-300)  # numpy path
    assert np.abs(got).max() <= beta1 * beta2  # bounded


def test_situ_glu_becomes_swiglu_for_large_beta():
    rng = np.random.default_rng(5)
    g, u = torch.tensor(rng.normal(0, 2, 300)), torch.tensor(rng.normal(0, 2, 300))
    swiglu = torch.nn.functional.silu(g) * u
    torch.testing.assert_close(situ_glu(g, u, 1e5, 1e5), swiglu, rtol=1e-8, atol=1e-9)
    assert not torch.allclose(situ_glu(g, u, 4.0, 25.0), swiglu, rtol=1e-3)  # K3's β do bound it
