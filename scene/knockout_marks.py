"""What an active knock-out experiment marks in the 3D view (feature I2, issue 40.1): every knocked-out
piece crossed out where it is drawn, in the knock-out colour —

* a token ("token", p): its lane of the embedding slab (the stack's bottom, split into one lane per position);
* a block ("block", layer, "mixer" | "ffn"): that half of the layer's slab (mixer left, FFN right);
* a routed expert ("expert", layer or None, id): its cell of the expert grid when its layer is the exploded one,
  and a small cross on the FFN half of its slab (None: every MoE layer's);
* an AttnRes source ("source", c): the embedding (c = 0) or block c's bracket.

Plain tuples in (no compute/ or app/ types); GL 'lines' geometry out.
"""
from __future__ import annotations

import numpy as np

from scene.layout import Layout
from scene.route_glow import half_box

__all__ = ["knockout_boxes", "knockout_lines", "CROSS_RGBA"]

CROSS_RGBA = (1.0, 0.28, 0.32, 1.0)


def _slab_half(layout: Layout, layer: int, part: str, shrink: float = 0.0):
    """The mixer's (left) or FFN's (right) half slab of a 1-based layer, as the route lights it
    (scene.route_glow.half_box); shrink: a smaller box in the middle of the half (an expert's mark)."""
    box = half_box(layout, layer, part) if layer >= 1 else None
    if box is None or not shrink:
        return box
    lo, hi = box
    c, h = (lo + hi) / 2, (hi - lo) / 2
    h[0] *= shrink
    return c - h, c + h


def _lane(box, p: int, n: int):
    """The p-th of n lanes (along x) of a box (lo, hi)."""
    lo, hi = box[0].copy(), box[1].copy()
    w = (hi[0] - lo[0]) / max(n, 1)
    lo[0], hi[0] = box[0][0] + p * w, box[0][0] + (p + 1) * w
    return lo, hi


def _expert_cell(layout: Layout, layer: int, expert: int):
    eb = layout.by_id.get(f"L{layer}/moe.experts")
    if eb is None or eb.grid is None or not 0 <= expert < eb.grid[0] * eb.grid[1]:
        return None
    r, c = divmod(expert, eb.grid[1])
    lo, hi = eb.lo.copy(), eb.hi.copy()
    lo[0], hi[0] = eb.lo[0] + c * eb.pitch, eb.lo[0] + (c + 1) * eb.pitch
    hi[2], lo[2] = eb.hi[2] - r * eb.pitch_r, eb.hi[2] - (r + 1) * eb.pitch_r
    return lo, hi


def knockout_boxes(layout: Layout, items, n_tokens: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(lo, hi) of every box a knock-out crosses out, for items as the Explain dock holds them (layers 1-based)."""
    out = []
    dims = layout.dims
    moe = [i + 1 for i, f in enumerate(dims.ffns) if f == "moe"]
    for it in items:
        kind = it[0]
        box = None
        if kind == "token":
            emb = layout.by_id.get("embedding")
            if emb is not None and 0 <= int(it[1]) < max(n_tokens, 1):
                box = _lane((emb.lo, emb.hi), int(it[1]), n_tokens)
        elif kind == "block":
            box = _slab_half(layout, int(it[1]), str(it[2]))
        elif kind == "expert":
            layers = moe if it[1] is None else [int(it[1])]
            for ly in layers:
                half = _slab_half(layout, ly, "ffn", shrink=0.25)
                if half is not None:
                    out.append(half)
                if ly == layout.layer + 1:
                    cell = _expert_cell(layout, ly, int(it[2]))
                    if cell is not None:
                        out.append(cell)
        elif kind == "source":
            c = int(it[1])
            b = layout.by_id.get("embedding" if c == 0 else f"stack.attnres_bracket/{c}")
            box = None if b is None else (b.lo.copy(), b.hi.copy())
        if box is not None:
            out.append(box)
    return out


def knockout_lines(layout: Layout, items, n_tokens: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """GL 'lines' points [2k, 3] and colours [2k, 4]: an outline and both diagonals of the front face of every
    crossed-out box, a little in front of it (the camera looks along +y); (None, None) without items."""
    pts = []
    for lo, hi in knockout_boxes(layout, items, n_tokens):
        y = float(lo[1]) - 0.05
        a, b = (float(lo[0]), y, float(lo[2])), (float(hi[0]), y, float(hi[2]))
        c, d = (float(lo[0]), y, float(hi[2])), (float(hi[0]), y, float(lo[2]))
        pts += [a, b, c, d, a, d, d, b, b, c, c, a]
    if not pts:
        return None, None
    p = np.asarray(pts, np.float32)
    return p, np.tile(np.array(CROSS_RGBA, np.float32), (len(p), 1))
