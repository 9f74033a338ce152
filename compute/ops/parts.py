"""`Part`: a lazily sliced piece of a fused tensor, for trace recording without extra torch ops.

Layer functions compute fused projections (one matmul for q|k|v|…) and record their pieces with
`part(base, index, shape)`: for a torch base a lazy `Part`, which `to_numpy` converts once and slices in numpy
(cheap) instead of dispatching one torch view per piece; for a numpy base (the engine's CPU backend) the view
itself. Nothing here imports torch.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from compute.ops.xp import ops


class Part(NamedTuple):
    base: Any  # a torch tensor
    index: Any  # a numpy/torch basic index (tuple of slices / ints)
    shape: tuple[int, ...] | None = None  # reshape after indexing (None = keep)


def part(base: Any, index: Any, shape: tuple[int, ...] | None = None) -> Any:
    """A piece of a fused array for the trace: a lazy `Part` of a torch tensor, the view itself for numpy
    (a numpy view costs less than the Part)."""
    if isinstance(base, np.ndarray):
        a = base[index]
        return a if shape is None else a.reshape(shape)
    return Part(base, index, shape)


def to_numpy(v: Any, cache: dict[int, np.ndarray]) -> Any:
    """numpy for a torch tensor or a Part (None and numpy arrays pass through). `cache` maps id(base) → numpy base."""
    if v is None or isinstance(v, np.ndarray):
        return v
    if isinstance(v, Part):
        a = cache.get(id(v.base))
        if a is None:
            a = cache[id(v.base)] = _np(v.base)
        a = a[v.index]
        return a if v.shape is None else a.reshape(v.shape)
    return _np(v)


def _np(t: Any) -> np.ndarray:
    """numpy for a numpy array (itself) or a torch tensor (without importing torch here)."""
    if isinstance(t, np.ndarray):
        return t
    if t.device.type == "cpu" and not t.requires_grad:
        return t.numpy()
    return t.detach().cpu().numpy()


def const(value: float, like: Any) -> Any:
    """A scalar for tensor ⊙ scalar in like's library (see compute.ops.xp: a cached 0-dim tensor for torch)."""
    return ops(like).const(value, like)
