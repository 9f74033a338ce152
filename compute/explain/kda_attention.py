"""KDA's implicit attention: the delta-rule output is linear in the values (docs/spec/k3-math.md §7).

The engine's KDA (compute.ops.kda, compute.fused_nb) runs, per head, with L2-normalised q_t, k_t,
per-channel retention α_t = exp(g_t) (or the α knob) and write strength β_t (or the β knob):

    S_t = (I − β_t k_t k_tᵀ) Diag(α_t) S_{t−1} + β_t k_t v_tᵀ,     o_t = S_tᵀ (scale · q_t),   S_{−1} = 0

Unrolled, with M_s = (I − β_s k_s k_sᵀ) Diag(α_s) and P_{t,i} = M_t M_{t−1} ⋯ M_{i+1} (P_{t,t} = I):

    o_t = Σ_{i ≤ t} A[t, i] v_i,     A[t, i] = scale · β_i · q_tᵀ P_{t,i} k_i

exactly (no approximation: q, k, α, β are fixed numbers of the run; only v enters linearly). A is computed
backwards: w ← q_t at i = t; A[t, i] = scale β_i (k_i · w); w ← α_i ⊙ (w − β_i k_i (k_i · w)); i ← i − 1.

What A covers: the delta-rule memory, i.e. the raw output 'kda.o'. It does NOT cover (1) the short causal
convolution before it — v_i = SiLU(conv4(W_v x))_i already mixes the projections of tokens i−3..i, and q_t, k_i
likewise —, (2) the per-head RMSNorm and the output gate after it, which `kda_output` applies with the norm's
scale frozen at its actual value (then the mixer output is linear in the v_i too), and (3) a state carried
in from an earlier pass (explanations run one prefill from position 0, so there is none).
"""
from __future__ import annotations

import numpy as np

__all__ = ["implicit_attention", "layer_attention", "layer_qkv", "kda_output", "value_contributions", "VALUE_MIX_NOTE"]

VALUE_MIX_NOTE = ("A[t, i] weighs the value v_i, and v_i is not token i alone: KDA's short convolution mixes the "
                  "projections of tokens i−3..i into it")


def implicit_attention(q: np.ndarray, k: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                       scale: float | None = None, rows=None) -> np.ndarray:
    """A with o_t = Σ_i A[h, t, i] v_i per head, for any leading batch dims (e.g. stacked layers).

    q, k [..., T, H, K] (L2-normalised, as the engine's 'kda.q_norm' / 'kda.k_norm'); alpha [..., T, H, K]
    (exp(g), 'kda.alpha'); beta [..., T, H] ('kda.beta'); scale defaults to K^-1/2 as in the engine.
    rows: the query positions to compute (default all T). Returns A [..., H, R, T] (float64), zero for i > t.
    """
    q, k, alpha, beta = (np.asarray(a, dtype=np.float64) for a in (q, k, alpha, beta))
    *lead, T, H, K = q.shape
    if scale is None:
        scale = K ** -0.5
    rows = np.arange(T) if rows is None else np.asarray(rows, dtype=np.intp).reshape(-1)
    R = rows.shape[0]
    w = np.zeros((*lead, R, H, K))
    A = np.zeros((*lead, R, H, T))
    for i in range(int(rows.max()) if R else -1, -1, -1):
        start = rows == i
        if start.any():
            w[..., start, :, :] = q[..., i:i + 1, :, :]
        ki = k[..., i, None, :, :]  # [..., 1, H, K]
        kw = np.sum(ki * w, -1)  # [..., R, H]
        bi = beta[..., i, None, :]  # [..., 1, H]
        A[..., i] = scale * bi * kw
        w = alpha[..., i, None, :, :] * (w - (bi * kw)[..., None] * ki)
    return np.swapaxes(A, -3, -2)  # [..., H, R, T]


def layer_qkv(tensors: dict, heads: int) -> tuple[np.ndarray, ...]:
    """(q, k, v, alpha, beta) of one KDA layer's trace tensors, per head: q, k, alpha [T, H, K], v [T, H, V],
    beta [T, H] (float64)."""
    q = np.asarray(tensors["kda.q_norm"], dtype=np.float64)
    T = q.shape[0]
    q = q.reshape(T, heads, -1)
    k = np.asarray(tensors["kda.k_norm"], dtype=np.float64).reshape(q.shape)
    a = np.asarray(tensors["kda.alpha"], dtype=np.float64).reshape(q.shape)
    v = np.asarray(tensors["kda.v_conv"], dtype=np.float64).reshape(T, heads, -1)
    b = np.asarray(tensors["kda.beta"], dtype=np.float64).reshape(T, heads)
    return q, k, v, a, b


def layer_attention(tensors: dict, heads: int, rows=None) -> np.ndarray:
    """A [H, R, T] of one KDA layer from its trace tensors (rows: query positions, default all)."""
    q, k, _, a, b = layer_qkv(tensors, heads)
    return implicit_attention(q, k, a, b, rows=rows)


def kda_output(A: np.ndarray, v: np.ndarray, gate: np.ndarray, norm_w: np.ndarray, W_o: np.ndarray,
               eps: float) -> np.ndarray:
    """The KDA mixer output y [R, D] from A [H, R, T] and the values v [T, H, V], as the engine finishes it:
    o = A v per head; o_h ← RMSNorm(o_h) ⊙ norm_w ⊙ gate_h (gate [R, H·V] = sigmoid(W_g x) of the query rows);
    y = concat_h(o_h) W_o. Equals the trace's 'kda.o_proj' (rows R)."""
    o = np.einsum("hrt,thv->rhv", A, v)
    c = _norm_gate(o, gate, norm_w, eps)
    return (o * c).reshape(o.shape[0], -1) @ np.asarray(W_o, dtype=np.float64)


def value_contributions(A: np.ndarray, v: np.ndarray, gate: np.ndarray, norm_w: np.ndarray, W_o: np.ndarray,
                        eps: float) -> np.ndarray:
    """Each source position's part of the mixer output, [R, T, D]: C[r, i] = Σ_h A[h, r, i] (v_{i,h} ⊙ c_{r,h}) W_o,h
    with c = norm_w ⊙ gate / rms(o_{r,h}) frozen at the actual output; Σ_i C[r, i] = kda_output(...)[r]."""
    o = np.einsum("hrt,thv->rhv", A, v)
    c = _norm_gate(o, gate, norm_w, eps)  # [R, H, V]
    H, V = v.shape[1], v.shape[2]
    Wo = np.asarray(W_o, dtype=np.float64).reshape(H, V, -1)
    part = np.einsum("hrt,thv,rhv->rthv", A, v, c)  # [R, T, H, V]
    return np.einsum("rthv,hvd->rtd", part, Wo)


def _norm_gate(o: np.ndarray, gate: np.ndarray, norm_w: np.ndarray, eps: float) -> np.ndarray:
    """norm_w ⊙ gate / sqrt(mean(o_h²) + eps) per row and head, [R, H, V]: the frozen scale of the output norm."""
    R, H, V = o.shape
    rms = np.sqrt(np.mean(o * o, -1, keepdims=True) + eps)
    return np.asarray(norm_w, dtype=np.float64) * np.asarray(gate, dtype=np.float64).reshape(R, H, V) / rms
