"""CPU picking: a vectorised ray-AABB (slab) test over the layout's blocks, then the cell within the block.

Never GLViewWidget.itemsAt (docs/spec/platform.md: ~300 ms). Works in logical pixels with the same matrices the
renderer uses, so HiDPI (device pixel ratio != 1) does not shift the hit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scene.camera import Camera, ray
from scene.layout import Layout


@dataclass
class Hit:
    block_id: str
    distance: float
    point: np.ndarray
    cell: tuple[int, int] | None


class Picker:
    def __init__(self, layout: Layout):
        self.layout = layout
        keep = np.array([b.part != "backdrop" for b in layout.blocks])
        self.blocks = [b for b, k in zip(layout.blocks, keep) if k]
        self.lo, self.hi = layout.block_lo[keep], layout.block_hi[keep]

    def pick_ray(self, origin: np.ndarray, direction: np.ndarray) -> Hit | None:
        d = np.where(np.abs(direction) < 1e-12, 1e-12, direction)
        inv = 1.0 / d
        t1 = (self.lo - origin) * inv
        t2 = (self.hi - origin) * inv
        tmin = np.max(np.minimum(t1, t2), axis=1)
        tmax = np.min(np.maximum(t1, t2), axis=1)
        ok = (tmax >= np.maximum(tmin, 0.0))
        if not ok.any():
            return None
        tnear = np.where(ok, np.maximum(tmin, 0.0), np.inf)
        i = int(np.argmin(tnear))
        b = self.blocks[i]
        point = origin + direction * tnear[i]
        return Hit(b.id, float(tnear[i]), point, b.cell_at(point))

    def pick(self, cam: Camera, x: float, y: float, width: float, height: float) -> Hit | None:
        """Block (and cell) under logical pixel (x, y) of a width x height view."""
        o, d = ray(cam, x, y, width, height)
        return self.pick_ray(o, d)
