"""Independent float64 reference for the KDA recurrence.

Semantics follow `naive_recurrent_kda` of fla-org/flash-linear-attention, `fla/ops/kda/naive.py`
(Copyright (c) 2023-2026 Songlin Yang, Yu Zhang, Zhiyuan Li; MIT license): q is scaled by `scale`
(default K^-1/2), then per step and head

    S = S * exp(g_t)[:, None]
    S = S + outer(beta_t * k_t, v_t - (k_t[:, None] * S).sum(0))
    o_t = q_t @ S

Re-written here with explicit numpy loops over batch, head and time (no torch, no einsum) so that it shares
no code with compute/ops/kda.py. Unlike fla's naive version it keeps float64 instead of casting to float32.
"""
from __future__ import annotations

import numpy as np


def naive_recurrent_kda(q, k, v, g, beta, scale=None, initial_state=None):
    """q, k [B,T,H,K]; v [B,T,H,V]; g [B,T,H,K]; beta [B,T,H]; initial_state [B,H,K,V].

    Returns (o [B,T,H,V], S [B,H,K,V]) as float64 numpy arrays.
    """
    q, k, v, g, beta = (np.asarray(x, dtype=np.float64) for x in (q, k, v, g, beta))
    B, T, H, K = q.shape
    V = v.shape[-1]
    if scale is None:
        scale = K ** -0.5
    q = q * scale
    S = np.zeros((B, H, K, V))
    if initial_state is not None:
        S = S + np.asarray(initial_state, dtype=np.float64)
    o = np.zeros((B, T, H, V))
    for b in range(B):
        for h in range(H):
            Sbh = S[b, h].copy()
            for t in range(T):
                Sbh = Sbh * np.exp(g[b, t, h])[:, None]
                pred = (k[b, t, h][:, None] * Sbh).sum(0)  # S'^T k
                Sbh = Sbh + np.outer(beta[b, t, h] * k[b, t, h], v[b, t, h] - pred)
                o[b, t, h] = q[b, t, h] @ Sbh
            S[b, h] = Sbh
    return o, S
