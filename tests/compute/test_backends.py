"""ToyK3's numpy backend (the CPU path: no torch tensor in the forward) gives the trace its torch backend gives
(float64), and the operators (compute.ops.kda, moe, norms, attnres) accept numpy arrays as they accept tensors."""
import numpy as np
import pytest
import torch

from compute.ops.attnres import attn_res_weights
from compute.engine import ToyK3
from compute.ops.kda import kda_chunked, kda_gate, kda_recurrent
from compute.ops.moe import route, situ_glu
from compute.ops.norms import rms_norm
from compute.trace import Knobs

PROMPT = "Kimi K3 reads the next token"


def _arrays(tr):
    for pi, ps in enumerate(tr.passes):
        yield (pi, "embedding"), ps.embedding
        yield (pi, "positions"), ps.positions
        for k, v in ps.final.items():
            yield (pi, k), v
        for lt in ps.layers:
            for k, v in lt.tensors.items():
                yield (pi, lt.index, k), v


@pytest.mark.parametrize("knobs", [Knobs(temperature=0.8, sample_seed=3),
                                   Knobs(temperature=0.0, alpha=0.4, beta=0.6, expert_bias={7: 0.5})])
def test_numpy_backend_equals_torch_backend_float64(knobs):
    a = ToyK3(device="cpu", dtype=torch.float64, backend="torch").run(PROMPT, 4, knobs)
    b = ToyK3(device="cpu", dtype=torch.float64, backend="numpy").run(PROMPT, 4, knobs)
    assert a.tokens == b.tokens
    da, db = dict(_arrays(a)), dict(_arrays(b))
    assert da.keys() == db.keys()
    for key, x in da.items():
        y = db[key]
        if x is None:
            assert y is None, key
            continue
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, key
        if x.dtype.kind in "iub":
            np.testing.assert_array_equal(x, y, err_msg=str(key))
        else:
            # the toy amplifies float64 rounding (~1e-16 per op) about a millionfold over 93 layers × 4 passes,
            # so near-zero elements (cancellations) are compared against the tensor's scale
            fin = np.isfinite(x)
            np.testing.assert_array_equal(fin, np.isfinite(y), err_msg=str(key))
            scale = float(np.abs(x[fin]).max()) if fin.any() else 0.0
            np.testing.assert_allclose(x, y, rtol=1e-7, atol=1e-9 + 1e-7 * scale, err_msg=str(key))


def test_backend_choice():
    assert ToyK3(device="cpu").backend == "numpy"
    assert ToyK3(device="cpu", backend="torch").backend == "torch"
    with pytest.raises(ValueError):
        ToyK3(device="cpu", backend="jax")


@pytest.mark.parametrize("T,C", [(1, 16), (6, 16), (7, 3), (20, 16)])
def test_kda_chunked_numpy_equals_torch_and_recurrence(T, C):
    g = torch.Generator().manual_seed(T * 31 + C)
    B, H, K, V = 2, 2, 4, 3
    q = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=g, dtype=torch.float64), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=g, dtype=torch.float64), dim=-1)
    v = torch.randn(B, T, H, V, generator=g, dtype=torch.float64)
    gl = -2 * torch.rand(B, T, H, K, generator=g, dtype=torch.float64)
    beta = torch.rand(B, T, H, generator=g, dtype=torch.float64)
    s0 = torch.randn(B, H, K, V, generator=g, dtype=torch.float64)
    o_n, S_n = kda_chunked(*(x.numpy() for x in (q, k, v, gl, beta)), chunk_size=C, initial_state=s0.numpy())
    assert isinstance(o_n, np.ndarray) and isinstance(S_n, np.ndarray)
    o_r, S_r = kda_recurrent(q, k, v, gl, beta, initial_state=s0)
    np.testing.assert_allclose(o_n, o_r.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(S_n, S_r.numpy(), rtol=1e-10, atol=1e-12)


def test_public_operators_accept_numpy():
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(5, 64, generator=g, dtype=torch.float64)
    bias = 0.1 * torch.randn(64, generator=g, dtype=torch.float64)
    w_t, i_t = route(logits, bias, 6)
    w_n, i_n = route(logits.numpy(), bias.numpy(), 6)
    np.testing.assert_array_equal(i_n, i_t.numpy())
    np.testing.assert_allclose(w_n, w_t.numpy(), rtol=1e-12)
    w_t, i_t = route(logits, bias, 6, n_group=4, topk_group=2)
    w_n, i_n = route(logits.numpy(), bias.numpy(), 6, n_group=4, topk_group=2)
    np.testing.assert_array_equal(i_n, i_t.numpy())
    a, b = torch.randn(2, 3, 7, generator=g, dtype=torch.float64) * 5
    np.testing.assert_allclose(situ_glu(a.numpy(), b.numpy()), situ_glu(a, b).numpy(), rtol=1e-12)
    f = torch.randn(3, 2, 4, generator=g, dtype=torch.float64)
    A_log, dt = torch.randn(2, generator=g, dtype=torch.float64), torch.randn(2, 4, generator=g, dtype=torch.float64)
    for lb in (-5.0, None):
        np.testing.assert_allclose(kda_gate(f.numpy(), A_log.numpy(), dt.numpy(), lb),
                                   kda_gate(f, A_log, dt, lb).numpy(), rtol=1e-12)
    p, R, w = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((3, 8), (4, 3, 8), (8,)))
    for x_n, x_t in zip(attn_res_weights(p.numpy(), R.numpy(), w.numpy()), attn_res_weights(p, R, w)):
        np.testing.assert_allclose(x_n, x_t.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rms_norm(p.numpy(), w.numpy()), rms_norm(p, w).numpy(), rtol=1e-12)
