"""Where the drawn blocks are on screen, for the label placement (scene/labels.py): a label must not cover a block
other than its own. Qt geometry only (QRectF / QPolygonF), no painting.

Each block's outline on screen is the convex hull of its eight projected corners (a weight plate lying in front of
its wall is a trapezoid seen from above, a wall nearly its face): a label is tested against the blocks' bounding
boxes at once (numpy), and against the hull only where a box is hit.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPolygonF

from scene.camera import Camera, project

# decoration drawn behind everything (the exploded layer's dark backdrop): labels may sit on it
IGNORED_PARTS = ("backdrop",)

_CORNERS = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)  # [8, 3] of lo/hi


def _hull(points: np.ndarray) -> list[tuple[float, float]]:
    """Convex hull (monotone chain) of a few 2-D points, counter-clockwise."""
    pts = sorted(set((float(x), float(y)) for x, y in points))
    if len(pts) <= 2:
        return pts

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


class BlockOutlines:
    """The projected outline of every drawn block of a layout for one camera and view size (logical px)."""

    def __init__(self, layout, cam: Camera, width: float, height: float):
        keep = [i for i, b in enumerate(layout.blocks) if b.part not in IGNORED_PARTS]
        self.ids = [layout.blocks[i].id for i in keep]
        if not keep:
            self.box = np.zeros((0, 4))
            self._pts = np.zeros((0, 8, 2))
            self._x0 = self._y0 = self._x1 = self._y1 = np.zeros(0)
            self._hulls: dict[int, QPolygonF] = {}
            self._index = {}
            return
        lo, hi = layout.block_lo[keep], layout.block_hi[keep]
        world = lo[:, None, :] + _CORNERS[None] * (hi - lo)[:, None, :]  # [n, 8, 3]
        pts, ok = project(world.reshape(-1, 3), cam, width, height)
        pts = pts.reshape(-1, 8, 2)
        ok = ok.reshape(-1, 8).all(axis=1)  # a block partly behind the camera is left out (as block_screen_box does)
        box = np.c_[pts.min(axis=1), pts.max(axis=1)]  # x0, y0, x1, y1
        box[~ok] = np.nan  # never hit
        self.box, self._pts = box, pts
        self._x0, self._y0, self._x1, self._y1 = (np.ascontiguousarray(box[:, k]) for k in range(4))
        self._hulls = {}
        self._index = {bid: i for i, bid in enumerate(self.ids)}

    def screen_box(self, block_id: str) -> QRectF | None:
        """The block's projected bounding box (as scene.labels.block_screen_box), None when it is partly behind the
        camera or not drawn."""
        i = self._index.get(block_id)
        if i is None or not np.isfinite(self._x0[i]):
            return None
        x0, y0, x1, y1 = (float(a[i]) for a in (self._x0, self._y0, self._x1, self._y1))
        return QRectF(x0, y0, x1 - x0, y1 - y0)

    def _boxes_hit(self, r: QRectF) -> np.ndarray:
        return np.flatnonzero((self._x0 < r.right()) & (self._x1 > r.left()) & (self._y0 < r.bottom())
                              & (self._y1 > r.top()))

    def outline(self, i: int) -> QPolygonF:
        if i not in self._hulls:
            self._hulls[i] = QPolygonF([QPointF(x, y) for x, y in _hull(self._pts[i])])
        return self._hulls[i]

    def hits(self, r: QRectF, own: str = "") -> list[str]:
        """Ids of the blocks (other than `own`) whose outline the rectangle r overlaps (touching is not)."""
        poly = QPolygonF(r)
        return [self.ids[i] for i in self._boxes_hit(r) if self.ids[i] != own and self.outline(int(i)).intersects(poly)]

    def clear(self, r: QRectF, own: str = "", graze: float = 0.0) -> bool:
        """True when the rectangle covers no block but its own; `graze` px of its edges may touch one (a
        label above its wall may meet the front edge of the station over it)."""
        if graze:
            r = r.adjusted(graze, graze, -graze, -graze)
        hit = self._boxes_hit(r)
        if not hit.size:
            return True
        poly = QPolygonF(r)
        return not any(self.ids[i] != own and self.outline(int(i)).intersects(poly) for i in hit)
