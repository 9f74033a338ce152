"""Small float64 helpers shared by compute.explain's modules (the same formulas as compute.ops.attnres / norms)."""
from __future__ import annotations

import numpy as np

ATTNRES_EPS = 1e-6  # compute.ops.attnres.BlockAttnRes's eps (the engine's AttnRes, every kernel)


def f64(a) -> np.ndarray:
    """A float64 numpy copy-or-view of a trace array."""
    return np.asarray(a, dtype=np.float64)


def rms_normalize(x: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x², last dim) + eps) (RMSNorm without its weight)."""
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps)


def attn_res_mix(sets: list[list[np.ndarray]], w: np.ndarray, eps: float) -> np.ndarray:
    """AttnRes(V; w) = Σ_c softmax_c(RMS-normalised V_c · w) V_c for each list of candidate vectors [D]
    (lists may differ in length: padded and masked). Returns [len(sets), D]."""
    n = len(sets)
    C = max(len(s) for s in sets)
    D = w.shape[0]
    V = np.zeros((n, C, D))
    valid = np.zeros((n, C), bool)
    for j, s in enumerate(sets):
        V[j, :len(s)] = s
        valid[j, :len(s)] = True
    s = rms_normalize(V, eps) @ w
    s = np.where(valid, s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return np.einsum("nc,ncd->nd", a, V)
