"""Line geometry of the highlights (numpy only): block / cell outlines, "follow one number" (S6), the blocks
a trace step highlights and the conceptual data-flow polylines of a trace step (S7). Everything is computed
from the layout's blocks; what a step highlights comes from the step table (scene/steps.py)."""
from __future__ import annotations

import numpy as np

from scene.block_kinds import LINEAR_IN  # y = x @ W kind -> the kind of x
from scene.geometry import outline_segments
from scene.layout import Block, Layout
from scene.steps import LAYER_FOCUS, STEP_TABLE

FLOW_STEPS = tuple(kind for kind, spec in STEP_TABLE.items() if spec.flow)
BEHIND = 0.08  # flow lines run just behind the walls: the blocks stay readable, the lines show in the gaps


def cell_box(b: Block, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    """Outline (24 points, GL 'lines') of the cells rows r0..r1 x cols c0..c1 of a grid block."""
    p, pr = b.pitch, b.pitch_r
    lo, hi = b.lo.copy(), b.hi.copy()
    lo[0], hi[0] = b.lo[0] + c0 * p, b.lo[0] + (c1 + 1) * p
    if b.orient == "wall":
        hi[2], lo[2] = b.hi[2] - r0 * pr, b.hi[2] - (r1 + 1) * pr
    else:
        hi[1], lo[1] = b.hi[1] - r0 * pr, b.hi[1] - (r1 + 1) * pr
    return outline_segments(lo, hi, pad=0.03)


def block_outline(layout: Layout, block_id: str | None) -> np.ndarray | None:
    b = layout.by_id.get(block_id) if block_id else None
    return None if b is None else outline_segments(b.lo, b.hi)


def resolve_kinds(layout: Layout, kinds) -> tuple[str, ...]:
    """Block ids of these kinds in the layout: a global block ("lm_head"), the shown layer's block
    ("L37/kda.state"), or every numbered global block of that kind ("stack.attnres_bracket/1", ...)."""
    ids: list[str] = []
    for kind in kinds:
        if kind in layout.by_id:
            ids.append(kind)
            continue
        local = f"L{layout.layer + 1}/{kind}"
        if local in layout.by_id:
            ids.append(local)
            continue
        ids += sorted(i for i in layout.by_id if i.startswith(kind + "/"))
    return tuple(ids)


def step_blocks(layout: Layout, step_kind: str | None) -> tuple[str, ...]:
    """The block ids a trace step highlights in this layout (the table's `blocks`)."""
    spec = STEP_TABLE.get(step_kind or "")
    return resolve_kinds(layout, spec.blocks) if spec is not None else ()


def step_focus_boxes(layout: Layout, step_kind: str | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(lo, hi) boxes the camera frames for a trace step (the table's `focus`)."""
    spec = STEP_TABLE.get(step_kind or "")
    boxes = []
    for kind in spec.focus if spec is not None else ():
        if kind == LAYER_FOCUS:
            if layout.panel_bounds is not None:
                boxes.append(layout.panel_bounds)
            continue
        boxes += [(layout.by_id[i].lo, layout.by_id[i].hi) for i in resolve_kinds(layout, (kind,))]
    return boxes


def step_outlines(layout: Layout, block_ids) -> np.ndarray | None:
    segs = [outline_segments(layout.by_id[i].lo, layout.by_id[i].hi, pad=0.06) for i in block_ids]
    return np.concatenate(segs) if segs else None


def follow_segments(layout: Layout, follow: tuple[str, int, int] | None, expert: int | None) -> np.ndarray | None:
    """S6: the output cell y[row, col], the input row x[row, :] and the weight column W[:, col]; plus the
    selected expert's cell in the expert grid."""
    segs = []
    if follow is not None:
        bid, row, col = follow
        b = layout.by_id.get(bid)
        if b is not None and b.grid is not None:
            segs.append(cell_box(b, row, row, col, col))
            src = LINEAR_IN.get(b.kind)
            sb = layout.by_id.get(f"L{b.layer}/{src}") if src else None
            if sb is not None and sb.grid is not None and row < sb.grid[0]:
                segs.append(cell_box(sb, row, row, 0, sb.grid[1] - 1))
            wb = layout.by_id.get(f"{bid}/W")
            if wb is not None and col < wb.grid[1]:
                segs.append(cell_box(wb, 0, wb.grid[0] - 1, col, col))
    if expert is not None:
        eb = layout.by_id.get(f"L{layout.layer + 1}/moe.experts")
        if eb is not None and 0 <= expert < eb.grid[0] * eb.grid[1]:
            r, c = divmod(expert, eb.grid[1])
            segs.append(cell_box(eb, r, r, c, c))
    return np.concatenate(segs) if segs else None


def flow_lines(layout: Layout, edges: list[tuple[str, str]]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Polylines (GL 'lines' point pairs) for the edges, and one arrival point per edge."""
    pts = []
    for a, b in edges:
        A, B = layout.by_id[a], layout.by_id[b]
        y = max(A.hi[1], B.hi[1]) + BEHIND
        p0 = np.array([A.center[0], y, A.hi[2]])
        p3 = np.array([B.center[0], y, B.lo[2]])
        if p3[2] < p0[2]:  # target lower (the next column): leave sideways, come in from below
            p0 = np.array([A.hi[0], y, A.center[2]])
            p3 = np.array([B.lo[0], y, B.lo[2]])
            x_mid = p3[0] - 0.3
            z_low = p3[2] - 0.3
            route = [p0, (x_mid, y, p0[2]), (x_mid, y, z_low), (p3[0] + 0.4, y, z_low), (p3[0] + 0.4, y, p3[2])]
        else:
            zm = (p0[2] + p3[2]) / 2
            route = [p0, (p0[0], y, zm), (p3[0], y, zm), p3]
        route = [np.asarray(q, float) for q in route]
        for q0, q1 in zip(route, route[1:]):
            pts += [q0, q1]
    if not pts:
        return None, None
    heads = np.array([[layout.by_id[b].center[0], layout.by_id[b].hi[1] + BEHIND, layout.by_id[b].lo[2]]
                      for _, b in edges], np.float32)
    return np.array(pts, np.float32), heads
