"""`Part`: a lazily sliced piece of a fused tensor, for trace recording without extra torch ops.

Layer functions compute fused projections (one matmul for q|k|v|…) and record their pieces as
`Part(base, index, shape)`; `to_numpy` converts the base once and slices it in numpy (cheap), instead of
dispatching one torch view per piece. `materialize` gives the torch tensor when a caller needs it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch


class Part(NamedTuple):
    base: torch.Tensor
    index: Any  # a numpy/torch basic index (tuple of slices / ints)
    shape: tuple[int, ...] | None = None  # reshape after indexing (None = keep)


def materialize(v: Any) -> Any:
    """A torch tensor for a Part (other values pass through)."""
    if isinstance(v, Part):
        t = v.base[v.index]
        return t if v.shape is None else t.reshape(v.shape)
    return v


def to_numpy(v: Any, cache: dict[int, np.ndarray]) -> Any:
    """numpy for a torch tensor or a Part (None passes through). `cache` maps id(base) → numpy base."""
    if v is None:
        return None
    if isinstance(v, Part):
        a = cache.get(id(v.base))
        if a is None:
            a = cache[id(v.base)] = _np(v.base)
        a = a[v.index]
        return a if v.shape is None else a.reshape(v.shape)
    return _np(v)


def _np(t: torch.Tensor) -> np.ndarray:
    if t.device.type == "cpu" and not t.requires_grad:
        return t.numpy()
    return t.detach().cpu().numpy()


_CONSTS: dict[tuple, torch.Tensor] = {}


def const(value: float, like: torch.Tensor) -> torch.Tensor:
    """A cached 0-dim tensor holding `value` with like's dtype and device.

    tensor ⊙ 0-dim tensor dispatches about twice as fast as tensor ⊙ Python float (no scalar wrapping),
    which matters for the engine's many tiny ops; the result is the same number.
    """
    key = (value, like.dtype, like.device)
    t = _CONSTS.get(key)
    if t is None:
        t = _CONSTS[key] = torch.tensor(value, dtype=like.dtype, device=like.device)
    return t
