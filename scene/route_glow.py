"""The contribution route lit through the 3D stack (feature I3).

`lit_blocks` takes plain (layer, part, value) direct contributions to the chosen word's logit and a threshold
and returns the blocks that glow: |value| >= threshold, with the sign that picks the colour (orange: the block
promotes the word, blue: it suppresses it — the cell value map's two ends). Routed experts and the shared
expert fold into their layer's "ffn" (the 3D stack draws one slab per layer: its left half is the mixer, its
right half the FFN). `route_lines` turns them into GL line geometry: an outline around each lit half slab (or
the embedding) and a spine joining the lit blocks bottom to top, into the LM head.
"""
from __future__ import annotations

import numpy as np

from scene.geometry import outline_segments
from scene.layout import Layout

__all__ = ["block_values", "half_box", "lit_blocks", "lit_layers", "route_lines", "threshold_of"]

_POS = (0.98, 0.55, 0.16, 1.0)
_NEG = (0.30, 0.55, 1.0, 1.0)
_SPINE = (0.92, 0.93, 0.95, 0.55)


def block_values(contributions) -> dict[tuple[int, str], float]:
    """(layer, part) -> value, with "expert N" and "shared" summed into (layer, "ffn")."""
    out: dict[tuple[int, str], float] = {}
    for layer, part, value in contributions:
        key_part = "ffn" if (part.startswith("expert") or part == "shared") else part
        key = (int(layer), key_part)
        out[key] = out.get(key, 0.0) + float(value)
    return out


def threshold_of(contributions, fraction: float) -> float:
    """The absolute threshold that is `fraction` (0..1) of the largest |block value|."""
    vals = [abs(v) for v in block_values(contributions).values()]
    return float(fraction) * (max(vals) if vals else 0.0)


def lit_blocks(contributions, threshold: float) -> dict[tuple[int, str], int]:
    """(layer, part) -> +1 / -1 for every block with |value| >= threshold (threshold must be >= 0)."""
    if not threshold >= 0:
        raise ValueError(f"route threshold must be >= 0, got {threshold!r}")
    return {k: (1 if v >= 0 else -1) for k, v in block_values(contributions).items() if abs(v) >= threshold}


def lit_layers(lit: dict[tuple[int, str], int]) -> set[int]:
    """The 1-based layers with a lit block (the stack keeps them bright, dims the others)."""
    return {layer for layer, _part in lit if layer >= 1}


def half_box(layout: Layout, layer: int, part: str):
    """(lo, hi) of what glows for a block: the embedding, or the mixer's (left) / FFN's (right) half slab."""
    if layer == 0:
        b = layout.by_id.get("embedding")
        return None if b is None else (b.lo.copy(), b.hi.copy())
    b = layout.by_id.get(f"L{layer}/stack.layer")
    if b is None:
        return None
    lo, hi = b.lo.copy(), b.hi.copy()
    mid = float(b.center[0])
    if part == "mixer":
        hi[0] = mid - 0.04
    else:
        lo[0] = mid + 0.04
    return lo, hi


def route_lines(layout: Layout, lit: dict[tuple[int, str], int]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """GL 'lines' points [2k, 3] and per-point colours [2k, 4] of the route, or (None, None) when nothing is lit."""
    pts, cols, spine = [], [], []
    for (layer, part), sign in sorted(lit.items(), key=lambda kv: (kv[0][0], kv[0][1] != "mixer")):
        box = half_box(layout, layer, part)
        if box is None:
            continue
        seg = outline_segments(box[0], box[1], pad=0.03)
        pts.append(seg)
        cols.append(np.tile(np.array(_POS if sign > 0 else _NEG, np.float32), (len(seg), 1)))
        lo, hi = box
        spine.append(((lo[0] + hi[0]) / 2, lo[1] - 0.03, (lo[2] + hi[2]) / 2))
    if not pts:
        return None, None
    head = layout.by_id.get("lm_head")
    if head is not None:
        spine.append((float(head.center[0]), float(head.lo[1]) - 0.03, float(head.center[2])))
    if len(spine) > 1:
        seg = np.array([p for a, b in zip(spine[:-1], spine[1:]) for p in (a, b)], np.float32)
        pts.append(seg)
        cols.append(np.tile(np.array(_SPINE, np.float32), (len(seg), 1)))
    return np.concatenate(pts).astype(np.float32), np.concatenate(cols).astype(np.float32)
