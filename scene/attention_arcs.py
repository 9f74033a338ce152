"""Arcs in the exploded layer from the explained token to the tokens it reads (feature I2).

Plain data in, GL line geometry out: `weights` is what the explained position t reads at the shown layer, one
number per position 0..t (the head mean of KDA's implicit attention A[t, i] — o_t = Σ_i A[t, i] v_i exactly,
so it may be negative — or of MLA's softmax row). Each earlier position i the layout draws as a row gets a
half-circle left of the layer's first token wall, from row t to row i; its opacity is |weight| / max |weight|
and its colour the sign (orange: reads with a positive weight, blue: negative), as the cell value map.
"""
from __future__ import annotations

import numpy as np

from scene.layout import Layout

__all__ = ["first_token_wall", "row_z", "arc_lines"]

SEGMENTS = 20  # straight pieces per half circle
_POS = np.array([0.98, 0.55, 0.16])
_NEG = np.array([0.30, 0.55, 1.0])
MIN_ALPHA = 0.04  # arcs fainter than this are left out
BULGE_MAX = 2.4  # world units an arc reaches left of its wall


def first_token_wall(layout: Layout):
    """The exploded layer's first wall whose rows are tokens (lowest, then leftmost): where the token names and
    the arcs go; None without one."""
    first = None
    for b in layout.layer_blocks():
        if b.grid is not None and b.rows_are_tokens and b.orient == "wall":
            if first is None or (b.lo[2], b.lo[0]) < (first.lo[2], first.lo[0]):
                first = b
    return first


def row_z(b, r: int) -> float:
    """z of the centre of row r of a wall block."""
    return float(b.hi[2] - (r + 0.5) * b.pitch_r)


def arc_lines(layout: Layout, position: int, weights) -> tuple[np.ndarray | None, np.ndarray | None]:
    """GL 'lines' points [2k, 3] and RGBA per point [2k, 4] of the arcs from `position`'s row to the rows of the
    positions it reads; (None, None) when its row is not drawn or nothing is read."""
    wall = first_token_wall(layout)
    rows = list(layout.row_positions)
    w = np.nan_to_num(np.asarray(weights, np.float64).reshape(-1))
    if wall is None or position not in rows or w.size == 0:
        return None, None
    top = float(np.abs(w).max())
    if top <= 0:
        return None, None
    t_row = rows.index(position)
    x0 = float(wall.lo[0]) - 0.1
    y = float(wall.lo[1]) - 0.02
    zt = row_z(wall, t_row)
    pts, cols = [], []
    ang = np.linspace(0.0, np.pi, SEGMENTS + 1)
    for i, wi in enumerate(w[:position + 1]):
        if i == position or i not in rows:
            continue
        alpha = abs(float(wi)) / top
        if alpha < MIN_ALPHA:
            continue
        zi = row_z(wall, rows.index(i))
        mid, r = (zt + zi) / 2, abs(zt - zi) / 2
        sign = 1.0 if zi > zt else -1.0  # from t's row round to i's, bulging left
        xs = x0 - min(BULGE_MAX, 0.3 + 2.2 * r) * np.sin(ang)  # wider than round: the rows are close
        zs = mid - sign * r * np.cos(ang)
        p = np.stack([xs, np.full_like(xs, y), zs], axis=1)
        seg = np.repeat(p, 2, axis=0)[1:-1]  # consecutive pairs: (p0,p1),(p1,p2),...
        pts.append(seg)
        rgb = _POS if wi >= 0 else _NEG
        cols.append(np.tile(np.r_[rgb, 0.25 + 0.75 * alpha], (len(seg), 1)))
    if not pts:
        return None, None
    return np.concatenate(pts).astype(np.float32), np.concatenate(cols).astype(np.float32)
