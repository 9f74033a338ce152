"""The torch spellings of compute.ops.xp's array namespace (imported by compute.ops.xp.ops for a torch tensor only)."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

__all__ = ["TorchOps"]

_CONSTS: dict[tuple, torch.Tensor] = {}


class TorchOps:
    """torch spellings (any device)."""

    @staticmethod
    def const(value: float, like: torch.Tensor) -> torch.Tensor:
        key = (value, like.dtype, like.device)
        t = _CONSTS.get(key)
        if t is None:
            t = _CONSTS[key] = torch.tensor(value, dtype=like.dtype, device=like.device)
        return t

    sigmoid = staticmethod(torch.sigmoid)
    silu = staticmethod(F.silu)
    softplus = staticmethod(F.softplus)
    exp = staticmethod(torch.exp)
    log = staticmethod(torch.log)
    tanh = staticmethod(torch.tanh)
    rsqrt = staticmethod(torch.rsqrt)

    @staticmethod
    def scaled_rsqrt(x: torch.Tensor, c: float) -> torch.Tensor:
        """c / sqrt(x)."""
        return torch.rsqrt(x) * TorchOps.const(c, x)

    @staticmethod
    def sum_keep(x: torch.Tensor) -> torch.Tensor:
        """Σ over the last dim, kept as size 1."""
        return x.sum(-1, keepdim=True)

    @staticmethod
    def sum(x: torch.Tensor, axis: int) -> torch.Tensor:
        return x.sum(axis)

    @staticmethod
    def softmax(x: torch.Tensor, axis: int) -> torch.Tensor:
        return x.softmax(axis)

    @staticmethod
    def cat(xs, axis: int) -> torch.Tensor:
        return torch.cat(xs, axis)

    @staticmethod
    def stack(xs, axis: int = 0) -> torch.Tensor:
        return torch.stack(xs, axis)

    @staticmethod
    def permute(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
        return x.permute(axes)

    @staticmethod
    def expand(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        return x.expand(shape)

    @staticmethod
    def zeros(shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        return like.new_zeros(shape)

    @staticmethod
    def full(shape: tuple[int, ...], value: float, like: torch.Tensor) -> torch.Tensor:
        return torch.full(shape, value, dtype=like.dtype, device=like.device)

    @staticmethod
    def maximum(x: torch.Tensor, value: float) -> torch.Tensor:
        return x.clamp_min(value)

    @staticmethod
    def masked_fill(x: torch.Tensor, mask: torch.Tensor, value: float) -> torch.Tensor:
        return x.masked_fill(mask, value)

    @staticmethod
    def causal_mask(T: int, S: int, like: torch.Tensor) -> torch.Tensor:
        """[T, S] True where key s lies after query t (queries = the last T of S keys)."""
        return torch.ones(T, S, dtype=torch.bool, device=like.device).triu(S - T + 1)

    @staticmethod
    def topk_idx(x: torch.Tensor, k: int) -> torch.Tensor:
        """Indices of the k largest along the last dim, largest first (torch.topk's answer, its tie order too). On
        a CPU tensor [T, E] the compiled top-k (compute.compiled.fast_select.topk_rows) answers every row without equal values
        among its k+1 largest, where the answer is unique; torch.topk the others (it treats each row on its own).
        torch.topk was the slowest step of CPU training."""
        if x.device.type == "cpu" and x.dim() == 2:
            from compute.compiled import fast_select

            got = fast_select.topk_rows(x.detach().numpy(), k)
            if got is not None:
                idx, tied = torch.from_numpy(got[0]), torch.from_numpy(got[1])
                if bool(tied.any()):
                    idx[tied] = x.detach()[tied].topk(k, -1)[1]
                return idx
        return x.topk(k, -1)[1]

    @staticmethod
    def gather(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """x[..., idx] row by row along the last dim (x [T, E], idx [T, k] → [T, k])."""
        return x.gather(-1, idx)

    @staticmethod
    def windows(x: torch.Tensor, K: int) -> torch.Tensor:
        """Sliding windows along dim 0: x [T+K-1, C] → [T, C, K] (a view)."""
        return x.unfold(0, K, 1)

    @staticmethod
    def tril(x: torch.Tensor, k: int = 0) -> torch.Tensor:
        """Lower triangle of the last two dims (entries above diagonal k zeroed)."""
        return x.tril(k)

    @staticmethod
    def eye(n: int, like: torch.Tensor) -> torch.Tensor:
        return torch.eye(n, dtype=like.dtype, device=like.device)

    @staticmethod
    def diag_embed(x: torch.Tensor) -> torch.Tensor:
        """[..., n] → [..., n, n] with x on the diagonal."""
        return torch.diag_embed(x)

    @staticmethod
    def pad_time(x: torch.Tensor, pad: int) -> torch.Tensor:
        """Zero rows appended along dim 1 (the time axis of [B, T, ...])."""
        return F.pad(x, (0, 0) * (x.dim() - 2) + (0, pad))

    @staticmethod
    def solve_unit_lower(L: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """X with L X = B for unit lower-triangular L (batched over leading dims)."""
        return torch.linalg.solve_triangular(L, B, upper=False, unitriangular=True)

    @staticmethod
    def cast(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        return x.to(like.dtype)

    @staticmethod
    def via_torch(fn: Callable, *args: Any):
        """fn on torch tensors (here: the arguments as they are)."""
        return fn(*args)
