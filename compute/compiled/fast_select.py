"""Compiled selection loops for the operators' batched paths (compute.ops.xp_torch's top-k on a CPU, compute.ops.moe's
Quantile Balancing): the same answers as torch.topk / np.partition, faster on the router's [160, 896] (CPU
training's slowest steps). Each returns None when numba is not usable or the input is not one it answers (then the
caller's own spelling runs): the loops live in compute.compiled._fused_nb_math, beside the pass kernel's top-k."""
from __future__ import annotations

import numpy as np

from compute.compiled import numba_setup

__all__ = ["kth_largest_cols", "topk_rows"]

_LOOPS = None  # compute.compiled._fused_nb_math, or False when numba is unavailable


def _loops():
    global _LOOPS
    if _LOOPS is None:
        _LOOPS = False
        if not numba_setup.disabled_by_env():
            numba_setup.cache_dir_setup()
            try:
                from compute.compiled import _fused_nb_math
            except ImportError:
                pass
            else:
                _LOOPS = _fused_nb_math
    return _LOOPS or None


def _float(x: np.ndarray) -> bool:
    return x.ndim == 2 and x.dtype in (np.float32, np.float64) and not np.isnan(x).any()


def topk_rows(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(idx [T, k] int64, tied [T] bool): the k largest of each row of x [T, E] (float32 / float64), largest first,
    by the pass's O(E) top-k (~5x faster than torch.topk on [160, 896]); tied marks the rows where equal values
    make the answer depend on a tie rule (two of the row's k+1 largest are equal): there a caller that must match
    another top-k (torch's, whose tie order is its own) asks that one. None when numba is not usable, k is out of
    1..E-1 or x holds a NaN."""
    if not (_float(x) and 0 < k < x.shape[1]) or _loops() is None:
        return None
    idx, tied = np.empty((x.shape[0], k), np.int64), np.empty(x.shape[0], np.bool_)
    _loops().topk_rows(np.ascontiguousarray(x), k, idx, tied)
    return idx, tied


def kth_largest_cols(a: np.ndarray, j: int) -> np.ndarray | None:
    """[n]: the (j+1)-th largest of each column of a [m, n] (float32 / float64), duplicates counted: the value
    np.partition(a, m - j - 1, 0)[m - j - 1] holds, in one pass over the rows (~4x faster on [160, 896]). None when
    numba is not usable, j is out of 0..min(m, 64) - 1 or a holds a NaN."""
    if not (_float(a) and 0 <= j < min(a.shape[0], 64)) or _loops() is None:
        return None
    out = np.empty(a.shape[1], a.dtype)
    _loops().kth_largest_cols(np.ascontiguousarray(a), j, out)
    return out
