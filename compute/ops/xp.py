"""Array namespace: the few operations that torch and numpy spell differently.

The operators are written once against `ops(x)`, so the same code runs on torch tensors (any device, any
dtype: tests, CUDA; the torch spellings live in compute.ops.xp_torch, loaded only for a torch tensor, so numpy
callers never import torch) and on numpy arrays (ToyK3's numpy backend: its layer loop, the reference CPU tier, runs every block of
every config until, for K3, compute.fused_nb's compiled pass takes over). Everything else
the operators use (`@`, `*`, `+`, basic and integer-array indexing, `[..., None]`, `.reshape`, `.sum(axis)`,
`.swapaxes`, `.T`, `.shape`) is spelled the same in both libraries.

`const(value, like)` gives what to multiply/add a scalar with: a cached 0-dim tensor / array of like's dtype
(about twice as fast as a Python float in torch, ~0.25 µs less per op in numpy; the same numbers).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["ops", "TorchOps", "NumpyOps"]

_NP_CONSTS: dict[tuple, np.ndarray] = {}


def _np_sigmoid(x: np.ndarray) -> np.ndarray:
    y = np.negative(x)
    np.exp(y, out=y)
    y += 1.0
    return np.reciprocal(y, out=y)


def _np_silu(x: np.ndarray) -> np.ndarray:
    y = np.negative(x)
    np.exp(y, out=y)
    y += 1.0
    return np.divide(x, y, out=y)


def _np_rsqrt(x: np.ndarray) -> np.ndarray:
    y = np.sqrt(x)
    return np.reciprocal(y, out=y)


def _to_np(v: Any) -> Any:
    if isinstance(v, tuple):
        return tuple(_to_np(x) for x in v)
    if hasattr(v, "numpy") and not isinstance(v, np.ndarray):  # a torch tensor
        return v.numpy()
    return v


class NumpyOps:
    """numpy spellings (CPU)."""

    @staticmethod
    def const(value: float, like: np.ndarray) -> np.ndarray:
        key = (value, like.dtype)
        c = _NP_CONSTS.get(key)
        if c is None:
            c = _NP_CONSTS[key] = np.array(value, like.dtype)
            c.setflags(write=False)
        return c

    sigmoid = staticmethod(_np_sigmoid)
    silu = staticmethod(_np_silu)
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    tanh = staticmethod(np.tanh)
    rsqrt = staticmethod(_np_rsqrt)

    @staticmethod
    def scaled_rsqrt(x: np.ndarray, c: float) -> np.ndarray:
        y = np.sqrt(x)
        return np.divide(c, y, out=y)

    @staticmethod
    def softplus(x: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, x)

    @staticmethod
    def sum_keep(x: np.ndarray) -> np.ndarray:
        return np.add.reduce(x, -1, keepdims=True)

    @staticmethod
    def sum(x: np.ndarray, axis: int) -> np.ndarray:
        return np.add.reduce(x, axis)  # ndarray.sum adds a Python-level wrapper call

    @staticmethod
    def softmax(x: np.ndarray, axis: int) -> np.ndarray:
        e = np.exp(x - np.maximum.reduce(x, axis, keepdims=True))
        e /= np.add.reduce(e, axis, keepdims=True)
        return e

    @staticmethod
    def cat(xs, axis: int) -> np.ndarray:
        return np.concatenate(xs, axis)

    @staticmethod
    def stack(xs, axis: int = 0) -> np.ndarray:
        return np.stack(xs, axis)

    @staticmethod
    def permute(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return x.transpose(axes)

    @staticmethod
    def expand(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """x repeated along its size-1 dims up to shape (a copy: cheaper than np.broadcast_to here)."""
        for axis, (n, m) in enumerate(zip(x.shape, shape)):
            if n != m:
                x = x.repeat(m, axis)
        return x

    @staticmethod
    def zeros(shape: tuple[int, ...], like: np.ndarray) -> np.ndarray:
        return np.zeros(shape, like.dtype)

    @staticmethod
    def full(shape: tuple[int, ...], value: float, like: np.ndarray) -> np.ndarray:
        return np.full(shape, value, like.dtype)

    @staticmethod
    def maximum(x: np.ndarray, value: float) -> np.ndarray:
        return np.maximum(x, value)

    @staticmethod
    def masked_fill(x: np.ndarray, mask: np.ndarray, value: float) -> np.ndarray:
        return np.where(mask, x.dtype.type(value), x)

    @staticmethod
    def causal_mask(T: int, S: int, like: np.ndarray) -> np.ndarray:
        return _above(T, S, S - T)

    @staticmethod
    def topk_idx(x: np.ndarray, k: int) -> np.ndarray:
        """Partition, then sort the k winners, largest first (exact ties in partition order); ~2× faster than
        torch.topk on the router's [T, 896] in the engine. Any leading dims."""
        if x.ndim != 2:
            lead = x.shape[:-1]
            return NumpyOps.topk_idx(x.reshape(-1, x.shape[-1]), k).reshape(lead + (k,))
        n = x.shape[1]
        part = np.argpartition(x, n - k, -1)[:, n - k:]
        rows = _rows(x.shape[0])
        return part[rows, np.argsort(np.negative(x[rows, part]), -1, kind="stable")]

    @staticmethod
    def gather(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        if x.ndim == 2:
            return x[_rows(x.shape[0]), idx]
        return np.take_along_axis(x, idx, -1)

    @staticmethod
    def windows(x: np.ndarray, K: int) -> np.ndarray:
        x = np.ascontiguousarray(x)
        s0, s1 = x.strides
        return np.ndarray((x.shape[0] - K + 1, x.shape[1], K), x.dtype, x, 0, (s0, s1, s0))

    @staticmethod
    def tril(x: np.ndarray, k: int = 0) -> np.ndarray:
        n, m = x.shape[-2:]
        return np.where(_above(n, m, k), x.dtype.type(0), x)

    @staticmethod
    def eye(n: int, like: np.ndarray) -> np.ndarray:
        return np.eye(n, dtype=like.dtype)

    @staticmethod
    def diag_embed(x: np.ndarray) -> np.ndarray:
        return x[..., None] * np.eye(x.shape[-1], dtype=x.dtype)

    @staticmethod
    def pad_time(x: np.ndarray, pad: int) -> np.ndarray:
        return np.concatenate([x, np.zeros((x.shape[0], pad) + x.shape[2:], x.dtype)], 1)

    @staticmethod
    def solve_unit_lower(L: np.ndarray, B: np.ndarray) -> np.ndarray:
        """(I + N)^{-1} B with N the strictly lower part of L (nilpotent, N^n = 0), as the product
        (I − N)(I + N²)(I + N⁴)… — a few matmuls instead of one step per row."""
        n = L.shape[-1]
        N = np.where(_above(n, n, -1), L.dtype.type(0), L)  # strictly lower
        inv = np.eye(n, dtype=L.dtype) - N
        P, span = N, 2
        while span < n:
            P = P @ P
            inv = inv @ (P + np.eye(n, dtype=L.dtype))
            span *= 2
        return inv @ B

    @staticmethod
    def cast(x: np.ndarray, like: np.ndarray) -> np.ndarray:
        return x.astype(like.dtype, copy=False)

    @staticmethod
    def via_torch(fn: Callable, *args: Any):
        """fn on zero-copy torch views of numpy arguments; tensor results come back as numpy (needs torch: only
        for torch-only helpers, which the engine's numpy path does not use)."""
        import torch

        return _to_np(fn(*(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)))


_MASKS: dict[tuple[int, int, int], np.ndarray] = {}


def _above(n: int, m: int, k: int) -> np.ndarray:
    """Cached read-only bool [n, m]: True where column c > row r + k (above diagonal k)."""
    key = (n, m, k)
    a = _MASKS.get(key)
    if a is None:
        a = _MASKS[key] = np.arange(m)[None, :] > np.arange(n)[:, None] + k
        a.setflags(write=False)
    return a


_ROWS: dict[int, np.ndarray] = {}


def _rows(n: int) -> np.ndarray:
    """Cached read-only column [n, 1] of row indices (for x[rows, idx] gathers)."""
    r = _ROWS.get(n)
    if r is None:
        r = _ROWS[n] = np.arange(n)[:, None]
        r.setflags(write=False)
    return r


def ops(x: Any) -> type:
    """The namespace for x's library: NumpyOps for numpy arrays, compute.ops.xp_torch.TorchOps (imported on first
    use, so numpy callers never load torch) for anything else."""
    if isinstance(x, np.ndarray):
        return NumpyOps
    return _torch_ops()


def _torch_ops() -> type:
    global _TORCH_OPS
    if _TORCH_OPS is None:
        from compute.ops.xp_torch import TorchOps

        _TORCH_OPS = TorchOps
    return _TORCH_OPS


_TORCH_OPS = None


def __getattr__(name: str):
    if name == "TorchOps":  # compute.ops.xp.TorchOps still works; loading it loads torch
        from compute.ops.xp_torch import TorchOps

        return TorchOps
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
