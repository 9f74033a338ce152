"""KDA operators: recurrence vs chunked form, vs an independent reference, gates, conv, the 1-D example."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from compute.ops.kda import kda_chunked, kda_gate, kda_recurrent, kda_step, l2_norm, short_conv
from tests.compute.reference_fla_naive import naive_recurrent_kda


def _inputs(seed, B, T, H, K, V, dtype=torch.float64, lower=-5.0):
    g = torch.Generator().manual_seed(seed)
    q = l2_norm(torch.randn(B, T, H, K, generator=g, dtype=dtype))
    k = l2_norm(torch.randn(B, T, H, K, generator=g, dtype=dtype))
    v = torch.randn(B, T, H, V, generator=g, dtype=dtype)
    gg = lower * torch.rand(B, T, H, K, generator=g, dtype=dtype)
    beta = torch.rand(B, T, H, generator=g, dtype=dtype)
    S0 = torch.randn(B, H, K, V, generator=g, dtype=dtype)
    return q, k, v, gg, beta, S0


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 2), T=st.integers(1, 40), H=st.integers(1, 3), K=st.integers(1, 6), V=st.integers(1, 6),
       C=st.sampled_from([1, 2, 3, 4, 8, 16, 64]), with_state=st.booleans(), seed=st.integers(0, 10_000))
def test_chunked_equals_recurrent(B, T, H, K, V, C, with_state, seed):
    q, k, v, g, beta, S0 = _inputs(seed, B, T, H, K, V)
    init = S0 if with_state else None
    o1, s1 = kda_recurrent(q, k, v, g, beta, initial_state=init)
    o2, s2 = kda_chunked(q, k, v, g, beta, chunk_size=C, initial_state=init)
    assert o2.shape == (B, T, H, V) and s2.shape == (B, H, K, V)
    torch.testing.assert_close(o2, o1, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(s2, s1, rtol=1e-10, atol=1e-10)


def test_chunked_float32_close():
    q, k, v, g, beta, S0 = _inputs(3, 2, 50, 2, 4, 4, dtype=torch.float32)
    o1, s1 = kda_recurrent(q, k, v, g, beta, initial_state=S0)
    o2, s2 = kda_chunked(q, k, v, g, beta, chunk_size=16, initial_state=S0)
    assert o2.dtype == torch.float32
    torch.testing.assert_close(o2, o1, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(s2, s1, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1), (2, 7, 3, 4, 5), (1, 20, 2, 8, 3)])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_recurrent_matches_fla_naive_reference(shape, scale):
    q, k, v, g, beta, S0 = _inputs(11, *shape)
    o, s = kda_recurrent(q, k, v, g, beta, scale=scale, initial_state=S0)
    o_ref, s_ref = naive_recurrent_kda(q.numpy(), k.numpy(), v.numpy(), g.numpy(), beta.numpy(), scale, S0.numpy())
    np.testing.assert_allclose(o.numpy(), o_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.numpy(), s_ref, rtol=1e-12, atol=1e-12)


def test_one_dimensional_teaching_example():
    # k = q = 1, scalar S, scale 1: S̄ = α S_prev; err = v − S̄; S_new = S̄ + β err; out = S_new (by hand).
    S_prev, alpha, beta, v = 0.3, 0.8, 0.5, 1.0
    S_bar = alpha * S_prev  # 0.24
    S_new = S_bar + beta * (v - S_bar)  # 0.24 + 0.5 * 0.76 = 0.62
    one = torch.ones(1, 1, 1, 1, dtype=torch.float64)
    o, S = kda_recurrent(one, one, torch.full((1, 1, 1, 1), v, dtype=torch.float64),
                         torch.full((1, 1, 1, 1), math.log(alpha), dtype=torch.float64),
                         torch.full((1, 1, 1), beta, dtype=torch.float64), scale=1.0,
                         initial_state=torch.full((1, 1, 1, 1), S_prev, dtype=torch.float64))
    assert S.item() == pytest.approx(0.62, abs=1e-15)
    assert o.item() == pytest.approx(S_new, abs=1e-15)


def test_state_read_after_update_and_constant_size():
    q, k, v, g, beta, _ = _inputs(5, 1, 9, 2, 3, 4)
    o, S = kda_recurrent(q, k, v, g, beta)
    assert S.shape == (1, 2, 3, 4)
    # output of the last step reads the final state: o_T = S_Tᵀ (scale q_T)
    torch.testing.assert_close(o[0, -1], torch.einsum("hk,hkv->hv", q[0, -1] * 3 ** -0.5, S[0]))


def test_gate_lower_bound_form_by_hand():
    f = torch.tensor([[[[0.5, -1.0]]]], dtype=torch.float64)  # [1,1,H=1,K=2]
    A_log = torch.tensor([math.log(2.0)], dtype=torch.float64)
    dt = torch.tensor([[0.1, 0.2]], dtype=torch.float64)
    g = kda_gate(f, A_log, dt, lower_bound=-5.0)
    expect = [-5.0 / (1 + math.exp(-2.0 * (0.5 + 0.1))), -5.0 / (1 + math.exp(-2.0 * (-1.0 + 0.2)))]
    np.testing.assert_allclose(g.flatten().numpy(), expect, rtol=1e-14)
    big = kda_gate(torch.randn(3, 5, 2, 4, dtype=torch.float64) * 10, torch.randn(2, dtype=torch.float64),
                   torch.randn(2, 4, dtype=torch.float64))
    assert (big >= -5.0).all() and (big <= 0).all()  # (-5, 0), closed only by rounding at saturation


def test_gate_softplus_form_by_hand():
    f = torch.tensor([[[[0.5, -1.0]]]], dtype=torch.float64)
    A_log = torch.tensor([math.log(3.0)], dtype=torch.float64)
    dt = torch.tensor([[0.1, 0.2]], dtype=torch.float64)
    g = kda_gate(f, A_log, dt, lower_bound=None)
    sp = lambda x: math.log1p(math.exp(x))  # noqa: E731
    np.testing.assert_allclose(g.flatten().numpy(), [-3.0 * sp(0.6), -3.0 * sp(-0.8)], rtol=1e-14)


def test_short_conv_causal_and_cached():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(7, 3, generator=gen, dtype=torch.float64)
    w = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    y, cache = short_conv(x, w)
    # explicit loop with zero left padding
    for t in range(7):
        for c in range(3):
            ref = sum(w[c, j].item() * (x[t - 3 + j, c].item() if t - 3 + j >= 0 else 0.0) for j in range(4))
            assert y[t, c].item() == pytest.approx(ref, abs=1e-13)
    torch.testing.assert_close(cache, x[-3:])
    # running in two pieces with the cache equals one run
    y1, c1 = short_conv(x[:4], w)
    y2, _ = short_conv(x[4:], w, c1)
    torch.testing.assert_close(torch.cat([y1, y2]), y)
    # a 1-token first piece (cache must still hold K-1 rows)
    ya, ca = short_conv(x[:1], w)
    yb, _ = short_conv(x[1:], w, ca)
    torch.testing.assert_close(torch.cat([ya, yb]), y)


def test_l2_norm():
    x = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    np.testing.assert_allclose(l2_norm(x).numpy(), [[3 / math.sqrt(25 + 1e-6), 4 / math.sqrt(25 + 1e-6)]])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    q, k, v, g, beta, S0 = _inputs(2, 1, 20, 2, 4, 4)
    o1, s1 = kda_chunked(q, k, v, g, beta, initial_state=S0)
    o2, s2 = kda_chunked(*(t.cuda() for t in (q, k, v, g, beta)), initial_state=S0.cuda())
    torch.testing.assert_close(o2.cpu(), o1)
    torch.testing.assert_close(s2.cpu(), s1)


@pytest.mark.parametrize("with_state", [False, True])
def test_decode_step_equals_recurrence(with_state):
    q, k, v, g, beta, S0 = _inputs(9, 1, 1, 3, 4, 5)
    o1, s1 = kda_recurrent(q, k, v, g, beta, initial_state=S0 if with_state else None)
    o2, s2 = kda_step(q[0, 0], k[0, 0], v[0, 0], g[0, 0].exp(), beta[0, 0], S0[0] if with_state else None)
    torch.testing.assert_close(o2, o1[0, 0], rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(s2, s1[0], rtol=1e-13, atol=1e-13)
