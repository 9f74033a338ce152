"""Normalisations used by K3: RMSNorm and the per-head L2 norm of KDA's q and k (torch or numpy arrays)."""
from __future__ import annotations

import math


from compute.ops.xp import ops


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm(x) = x / sqrt(mean(x², last dim) + eps) ⊙ weight.

    x [..., D], weight [D] (None = 1). Returns [..., D].
    """
    D = x.shape[-1]
    o = ops(x)
    # mean(x²) + eps = (Σx² + D·eps) / D; a sum is cheaper than a mean for tiny tensors
    y = x * o.scaled_rsqrt(o.sum_keep(x * x) + o.const(D * eps, x), math.sqrt(D))
    return y if weight is None else y * weight


def l2_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / ‖x‖ with ‖x‖ = sqrt(Σ x² + eps) over the last dim (KDA: per head). x [..., K]."""
    o = ops(x)
    return x * o.rsqrt(o.sum_keep(x * x) + o.const(eps, x))


class RMSNorm:
    """A callable RMSNorm with a fixed weight [D] (y = rms_norm(x, weight, eps))."""

    def __init__(self, weight: torch.Tensor, eps: float = 1e-6):
        self.weight = weight
        self.eps = eps

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)
