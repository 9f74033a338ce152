"""Gated Multi-head Latent Attention (docs/spec/k3-math.md §2; DeepSeek-V3 `inference/model.py` class MLA + K3 gate).

The cache holds, per token, the latent c_kv [kv_lora] and the shared k_rot [rope] — not per-head K/V.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from compute.ops.norms import rms_norm
from compute.ops.parts import part
from compute.ops.xp import ops

if TYPE_CHECKING:
    from compute.dims import OpArgs

__all__ = ["mla_attention", "apply_rope", "mla_layer"]


def apply_rope(x: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Rotary embedding on the last dim (pairs (2i, 2i+1)). x [T, ..., R] with R even; positions [T]."""
    R = x.shape[-1]
    shape = (x.shape[0],) + (1,) * (len(x.shape) - 2) + (R // 2,)
    if isinstance(x, np.ndarray):
        inv = theta ** (-np.arange(0, R, 2, dtype=x.dtype) / R)  # [R/2]
        ang = np.asarray(positions).astype(x.dtype)[:, None] * inv[None]  # [T, R/2]
        cos, sin = np.cos(ang).reshape(shape), np.sin(ang).reshape(shape)
    else:
        import torch

        inv = theta ** (-torch.arange(0, R, 2, dtype=x.dtype, device=x.device) / R)
        ang = positions.to(x.dtype)[:, None] * inv[None]
        cos, sin = ang.cos().reshape(shape), ang.sin().reshape(shape)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return ops(x).stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).reshape(x.shape)


def mla_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_pos: torch.Tensor | None, scale: float
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal softmax attention per head.

    q [T, H, dq], k [S, H, dq], v [S, H, dv]; q_pos [T] absolute positions of the queries (keys are at
    0..S-1); None = the queries are the last T keys (prefill / decode with a cache).
    Returns (scores [H, T, S] with masked entries −inf, softmax [H, T, S], o [T, H, dv]).
    """
    T, S = q.shape[0], k.shape[0]
    o = ops(q)
    scores = (q.swapaxes(0, 1) @ o.permute(k, (1, 2, 0))) * o.const(scale, q)  # [H, T, S]
    if q_pos is not None:
        masked = o.causal_mask(S, S, q)[q_pos]  # [T, S]
        scores = o.masked_fill(scores, masked, float("-inf"))
    elif T > 1:
        scores = o.masked_fill(scores, o.causal_mask(T, S, q), float("-inf"))
    p = o.softmax(scores, -1)
    return scores, p, (p @ v.swapaxes(0, 1)).swapaxes(0, 1)  # o [T, H, dv]


def mla_layer(x: torch.Tensor, w: dict, args: OpArgs, positions: torch.Tensor, cache: dict | None = None
              ) -> tuple[torch.Tensor, dict, dict]:
    """One Gated MLA mixer on x = RMSNorm'd layer input [T, D], or a batch of sequences [B, T, D]
    (compute.training.train: positions [T] for every row, no cache; attention takes the batch as extra heads, which is
    exact — attention is per head).

    w: 'in' [D, q_lora + kv_lora + rope (+ H·v if gated)] fused (W_qa | W_kva | W_g), 'q_a_norm' [q_lora],
    'q_b' [q_lora, H·(nope+rope)], 'kv_a_norm' [kv_lora], 'kv_b' [kv_lora, H·(nope+v)], 'o' [H·v, D].
    cache: {'c_kv': [S0, kv_lora], 'k_rope': [S0, rope]} of earlier tokens. positions [T] absolute.
    args: the model's record (compute.dims.OpArgs): H = mla_heads, nope, rope, v, kv_lora, ε; K3 is NoPE
    (args.rope_theta None: nothing rotated); args.mla_gated adds o ⊙ sigmoid(W_g x).
    Returns (y [T, D], tensors, new cache); a batch returns (y [B, T, D], {}, {}).
    """
    heads, nope, rope, v_dim, kv_lora = args.mla_heads, args.nope, args.rope, args.v, args.kv_lora
    gated, rope_theta, eps = args.mla_gated, args.rope_theta, args.eps
    batched = len(x.shape) == 3
    if batched:
        if cache is not None:
            raise ValueError("a batch of sequences starts at position 0: no cache")
        x = x.swapaxes(0, 1)  # time first [T, B, D]: the rotary embedding and the causal mask index axis 0
    T = x.shape[0]
    mid = tuple(x.shape[1:-1])  # () or (B,)
    H = heads
    xp = ops(x)
    z = x @ w["in"]
    q_lora = w["q_a_norm"].shape[0]
    q_a = z[..., :q_lora]
    kv_a = z[..., q_lora: q_lora + kv_lora + rope]
    q_a_n = rms_norm(q_a, w["q_a_norm"], eps)
    q_b = q_a_n @ w["q_b"]
    q = q_b.reshape(T, *mid, H, nope + rope)
    c_new, kr_new = kv_a[..., :kv_lora], kv_a[..., kv_lora:]
    if rope_theta is not None:
        q = xp.cat([q[..., :nope], apply_rope(q[..., nope:], positions, rope_theta)], -1)
        kr_new = apply_rope(kr_new, positions, rope_theta)
    if cache is None:
        c_kv, k_rope = c_new, kr_new
    else:
        c_kv, k_rope = xp.cat([cache["c_kv"], c_new], 0), xp.cat([cache["k_rope"], kr_new], 0)
    S = c_kv.shape[0]
    kv_b = rms_norm(c_kv, w["kv_a_norm"], eps) @ w["kv_b"]
    kv = kv_b.reshape(S, *mid, H, nope + v_dim)
    k = xp.cat([kv[..., :nope], xp.expand(k_rope[..., None, :], (S, *mid, H, rope))], -1)
    v = kv[..., nope:]
    if batched:  # the batch as extra heads: [T, B, H, e] → [T, B·H, e]
        BH = mid[0] * H
        q, k, v = q.reshape(T, BH, nope + rope), k.reshape(S, BH, nope + rope), v.reshape(S, BH, v_dim)
    scores, p, o = mla_attention(q, k, v, None, 1.0 / math.sqrt(nope + rope))
    o = o.reshape(T, *mid, H * v_dim)
    if batched:
        og = o * xp.sigmoid(z[..., q_lora + kv_lora + rope:]) if gated else o
        return (og @ w["o"]).swapaxes(0, 1), {}, {}
    tensors = {"mla.q_a": part(z, (slice(None), slice(0, q_lora))), "mla.q_a_norm": q_a_n, "mla.q_b": q_b,
               "mla.kv_a": part(z, (slice(None), slice(q_lora, q_lora + kv_lora + rope))),
               "mla.c_kv": c_kv, "mla.k_rope": k_rope, "mla.kv_b": kv_b,
               "mla.scores": scores, "mla.softmax": p, "mla.o": o}
    if gated:
        gate = xp.sigmoid(z[:, q_lora + kv_lora + rope:])
        og = o * gate
    else:
        gate, og = xp.full(o.shape, 1.0, o), o
    y = og @ w["o"]
    tensors.update({"mla.gate": gate, "mla.o_gated": og, "mla.o_proj": y})
    return y, tensors, {"c_kv": c_kv, "k_rope": k_rope}
