"""The causal-tracing map on the real stack (issue 39.2): every slab split into T token lanes, each lit by the
restored fraction of the answer when the clean residual stream after that layer at that position is patched
into the corrupted run (row 0 = the embedding). The mention's lane carries the answer up to the layer where it
moves to the last position; the last position's lane carries it from there to the LM head.

Plain tuples in (a [L+1][T] grid), box geometry out: thin plates on each slab's front face, one per position,
left = position 0.
"""
from __future__ import annotations

import numpy as np

from scene.layout import Layout

__all__ = ["lane_boxes", "lane_colours"]

_DARK = np.array([0.13, 0.15, 0.19])
_LIT = np.array([0.98, 0.82, 0.30])  # the lens column's amber: "the answer is here"
_NEG = np.array([0.30, 0.55, 1.0])  # patching there moves away from the answer
PLATE_D = 0.05


def lane_boxes(layout: Layout, lanes) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]], np.ndarray]:
    """Centres [n, 3], sizes [n, 3], the (row, position) of each box and its value, for a grid lanes[row][t]
    (rows the layout lacks are left out)."""
    centres, sizes, keys, vals = [], [], [], []
    for row, values in enumerate(lanes):
        b = layout.by_id.get("embedding" if row == 0 else f"L{row}/stack.layer")
        if b is None or not len(values):
            continue
        T = len(values)
        w = (b.hi[0] - b.lo[0]) / T
        for t, v in enumerate(values):
            centres.append((b.lo[0] + (t + 0.5) * w, b.lo[1] - PLATE_D / 2 - 0.01, b.center[2]))
            sizes.append((w * 0.86, PLATE_D, b.hi[2] - b.lo[2]))
            keys.append((row, t))
            vals.append(float(v))
    n = len(centres)
    return (np.asarray(centres, np.float32).reshape(n, 3), np.asarray(sizes, np.float32).reshape(n, 3), keys,
            np.asarray(vals, np.float64))


def lane_colours(values) -> np.ndarray:
    """[n, 4] RGBA: dark at 0, amber at a restored fraction of 1 (square-root ramp, as the lens strip), blue
    for a negative fraction (patching there moves the run away from the answer)."""
    v = np.nan_to_num(np.asarray(values, np.float64))
    t = np.sqrt(np.clip(np.abs(v), 0.0, 1.0))[:, None]
    rgb = np.where(v[:, None] >= 0, _DARK + t * (_LIT - _DARK), _DARK + t * (_NEG - _DARK))
    return np.concatenate([rgb, np.ones((len(v), 1))], axis=1).astype(np.float32)
