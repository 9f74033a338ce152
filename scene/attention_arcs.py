"""Arcs in the exploded layer from the explained token to the tokens it reads (feature I2), one colour per head.

Plain data in, GL line geometry and label candidates out: `weights` is what the explained position t reads at
the shown layer, per head: [H, T] (KDA's implicit attention A[h, t, i] — o_t = Σ_i A[t, i] v_i exactly, so it
may be negative — or MLA's softmax row; a single row [T] is one head). Each earlier position i the layout draws
as a row gets one arc per head: a half-ellipse left of the layer's first token wall, from row t to row i, bulging
further for a farther row and for each later head (the heads' arcs side by side, never averaged); its colour is
its head's (HEAD_COLOURS), its opacity |weight| / the largest |weight| of all heads, LINE_WIDTH px wide. The strongest arcs are named at their far end by the placer: the source
token, the weight (its sign kept) and the head (`label_candidates`), and a KDA layer notes that its v_i already
mixes the tokens i-3..i (its short causal convolution), which the arcs do not show.
"""
from __future__ import annotations

import numpy as np

from scene.layout import Layout

__all__ = ["first_token_wall", "row_z", "arc_lines", "arc_ends", "label_candidates", "HEAD_COLOURS",
           "head_colour"]

SEGMENTS = 20  # straight pieces per half circle
LINE_WIDTH = 3.5  # px: the arcs' GL lines (scene/explain_overlay.py draws them)
MIN_ALPHA = 0.04  # arcs fainter than this are left out
BULGE_MIN = 0.6  # world units an arc reaches left of the ladder at least
BULGE_MAX = 2.4  # ... and at most (the stack's layer numbers stand left of that)
HEAD_STEP = 0.35  # each later head's arcs bulge this much further (x its first head's bulge)
LABELLED = 3  # the strongest arcs named
KEY_DROP = 0.75  # world units the key of the strongest arcs stands under the wall's bottom
KEY_STEP = 4.2  # ... and apart along it
RUNG_RGB = (0.62, 0.66, 0.74)  # the ladder's ties to the wall's rows
ARC_PRIORITY = 2.3  # after the panel's block names (2), before the stack cap's (2.5) and the lens words (2.6)
# one colour per head (BertViz's head view does the same): distinct hues, none the route's orange / blue pair
HEAD_COLOURS = ((0.98, 0.78, 0.20), (0.30, 0.85, 0.95), (0.95, 0.40, 0.85), (0.55, 0.90, 0.35),
                (0.70, 0.55, 1.00), (1.00, 0.55, 0.45), (0.35, 0.60, 1.00), (0.85, 0.85, 0.85))


def head_colour(h: int) -> tuple[float, float, float]:
    return HEAD_COLOURS[h % len(HEAD_COLOURS)]


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


LADDER_GAP = 0.4  # world units between the ladder and the wall it stands for
RUNG_MAX = 0.9  # world units between two rungs (a token row's label height at the default framing) ...
LADDER_MAX = 8.0  # ... and the ladder's height at most (a long prompt's rungs come closer)


def ladder(layout: Layout, wall=None) -> tuple[float, list[float]] | None:
    """(x, z per drawn row) of the token ladder: the wall's rows spread out left of it, from its bottom up, so
    the arcs between them are at least a token row high on screen (the wall's rows are ~4 px apart at the
    default framing); None without a token wall. wall: first_token_wall(layout) when the caller has it."""
    wall = first_token_wall(layout) if wall is None else wall
    if wall is None:
        return None
    n = len(layout.row_positions)
    rung = max(float(wall.pitch_r), min(RUNG_MAX, LADDER_MAX / max(1, n - 1)))
    z0 = float(wall.lo[2]) + 0.15
    return float(wall.lo[0]) - LADDER_GAP, [z0 + (n - 1 - r) * rung for r in range(n)]


def _heads(weights) -> np.ndarray:
    w = np.nan_to_num(np.asarray(weights, np.float64))
    return w.reshape(1, -1) if w.ndim <= 1 else w.reshape(w.shape[0], -1)


def arc_ends(layout: Layout, position: int, weights, wall=None) -> list[tuple]:
    """Every drawn arc: (head, source position, weight, alpha, points [SEGMENTS + 1, 3] from row t to row i),
    strongest first; [] when the position's row is not drawn or nothing is read. wall: as ladder's (the wall
    search walks the exploded layer's blocks: once per drawing, not once per use)."""
    wall = first_token_wall(layout) if wall is None else wall
    lad = ladder(layout, wall) if wall is not None else None
    rows = list(layout.row_positions)
    w = _heads(weights)
    if lad is None or position not in rows or w.size == 0:
        return []
    top = float(np.abs(w[:, :position + 1]).max()) if w.shape[1] else 0.0
    if top <= 0:
        return []
    H = w.shape[0]
    x0, zs_rows = lad
    y = float(wall.lo[1]) - 0.02
    zt = zs_rows[rows.index(position)]
    ang = np.linspace(0.0, np.pi, SEGMENTS + 1)
    out = []
    for h in range(H):
        for i, wi in enumerate(w[h, :position + 1]):
            if i == position or i not in rows:
                continue
            alpha = abs(float(wi)) / top
            if alpha < MIN_ALPHA:
                continue
            zi = zs_rows[rows.index(i)]
            mid, r = (zt + zi) / 2, abs(zt - zi) / 2
            sign = 1.0 if zi > zt else -1.0  # from t's row round to i's, bulging left
            bulge = min(BULGE_MAX, (BULGE_MIN + 0.5 * r) * (1 + HEAD_STEP * h * 2 / max(1, H)))
            xs = x0 - bulge * np.sin(ang)
            zs = mid - sign * r * np.cos(ang)
            out.append((h, i, float(wi), alpha, np.stack([xs, np.full_like(xs, y), zs], axis=1)))
    out.sort(key=lambda a: -a[3])
    return out


def arc_lines(layout: Layout, position: int, weights) -> tuple[np.ndarray | None, np.ndarray | None]:
    """GL 'lines' points [2k, 3] and RGBA per point [2k, 4] of the arcs from `position`'s row to the rows of the
    positions it reads, per head, strongest last (drawn on top); (None, None) when its row is not drawn or
    nothing is read."""
    wall = first_token_wall(layout)
    arcs = arc_ends(layout, position, weights, wall)
    if not arcs:
        return None, None
    pts, cols = [], []
    x0, zs_rows = ladder(layout, wall)
    y = float(wall.lo[1]) - 0.02
    for r, z in enumerate(zs_rows):  # each rung tied to its row of the wall (faint)
        pts.append(np.array([[x0, y, z], [float(wall.lo[0]) - 0.02, y, row_z(wall, r)]]))
        cols.append(np.tile(np.r_[RUNG_RGB, 0.45], (2, 1)))
    for h, _i, _w, alpha, p in reversed(arcs):
        seg = np.repeat(p, 2, axis=0)[1:-1]  # consecutive pairs: (p0,p1),(p1,p2),...
        pts.append(seg)
        cols.append(np.tile(np.r_[head_colour(h), 0.3 + 0.7 * alpha], (len(seg), 1)))
    return np.concatenate(pts).astype(np.float32), np.concatenate(cols).astype(np.float32)


def label_candidates(layout: Layout, position: int, weights, tokens, tr, mixer: str = "") -> list[tuple]:
    """The label placer's candidates (priority, anchor, name, shape, role, id, where): the LABELLED strongest
    arcs as a key in a row under the token wall (between the stack and the wall there is no room for text at
    the default framing) — "'piece' +0.42" with "head 2" as its shape, in its head's colour, the sign kept —
    and, in a KDA layer, the short convolution's note after them."""
    wall = first_token_wall(layout)
    arcs = arc_ends(layout, position, weights, wall)
    if not arcs or wall is None:
        return []
    rows = list(layout.row_positions)
    z = float(wall.lo[2]) - KEY_DROP
    x = float(wall.lo[0]) - 0.3
    out = []
    for k, (h, i, wi, _alpha, _p) in enumerate(arcs[:LABELLED]):
        r = rows.index(i)
        piece = tokens[r] if tokens is not None and r < len(tokens) else ""
        shown = piece.replace("\n", "\\n")
        out.append((ARC_PRIORITY + 1e-3 * k, np.array([x + k * KEY_STEP, float(wall.lo[1]), z]),
                    f"'{shown}' {wi:+.2f}", tr("scene.arcs.head", n=h + 1), tuple(head_colour(h)) + (1.0,),
                    f"arc/{h}/{i}", "key"))
    if mixer == "kda":
        out.append((ARC_PRIORITY + 0.01, np.array([x + LABELLED * KEY_STEP, float(wall.lo[1]), z]),
                    tr("scene.arcs.conv"), "", "text", "arc/conv", "key"))
    return out
