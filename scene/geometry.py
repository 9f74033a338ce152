"""Box geometry for the layout: one merged, indexed triangle mesh per family of blocks (numpy only).

Every drawn box (a cell of a tensor grid, a slab of the stack, ...) is 24 vertices (4 per face, flat
normals) and 12 triangles. A family's mesh keeps, per block, the range of its boxes so that recolouring
writes a colour buffer only (`FamilyGeometry.box_colors` -> per-vertex colours).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scene.layout import CELL_FILL, Block, Layout

# unit cube faces: (normal, 4 corners in [-0.5, 0.5]^3, counter-clockwise seen from outside)
_FACES = [
    ((1, 0, 0), [(.5, -.5, -.5), (.5, .5, -.5), (.5, .5, .5), (.5, -.5, .5)]),
    ((-1, 0, 0), [(-.5, .5, -.5), (-.5, -.5, -.5), (-.5, -.5, .5), (-.5, .5, .5)]),
    ((0, 1, 0), [(.5, .5, -.5), (-.5, .5, -.5), (-.5, .5, .5), (.5, .5, .5)]),
    ((0, -1, 0), [(-.5, -.5, -.5), (.5, -.5, -.5), (.5, -.5, .5), (-.5, -.5, .5)]),
    ((0, 0, 1), [(-.5, -.5, .5), (.5, -.5, .5), (.5, .5, .5), (-.5, .5, .5)]),
    ((0, 0, -1), [(-.5, .5, -.5), (.5, .5, -.5), (.5, -.5, -.5), (-.5, -.5, -.5)]),
]
UNIT_V = np.array([c for _, cs in _FACES for c in cs], dtype=np.float32)  # [24, 3]
UNIT_N = np.array([n for n, cs in _FACES for _ in cs], dtype=np.float32)  # [24, 3]
UNIT_F = np.array([[4 * f, 4 * f + 1, 4 * f + 2] for f in range(6)] +
                  [[4 * f, 4 * f + 2, 4 * f + 3] for f in range(6)], dtype=np.uint32)  # [12, 3]
VERTS_PER_BOX = 24
TRIS_PER_BOX = 12


def boxes_mesh(centers: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vertices [N*24, 3], normals [N*24, 3], faces [N*12, 3] (uint32) of N axis-aligned boxes."""
    centers = np.asarray(centers, np.float32).reshape(-1, 3)
    sizes = np.asarray(sizes, np.float32).reshape(-1, 3)
    n = len(centers)
    verts = (UNIT_V[None] * sizes[:, None] + centers[:, None]).reshape(-1, 3)
    normals = np.broadcast_to(UNIT_N[None], (n, 24, 3)).reshape(-1, 3).copy()
    faces = (UNIT_F[None] + (np.arange(n, dtype=np.uint32) * 24)[:, None, None]).reshape(-1, 3)
    return verts.astype(np.float32), normals, faces


def block_boxes(b: Block) -> tuple[np.ndarray, np.ndarray]:
    """Centres and sizes of the boxes a block is drawn with: one per cell, or one box."""
    if b.grid is None:
        return b.center[None], b.size[None]
    cc = b.cell_centers()
    s = b.pitch * CELL_FILL
    sr = b.pitch_r - b.pitch * (1 - CELL_FILL)  # the same gap between rows as between columns
    if b.orient == "wall":
        size = np.array([s, b.size[1], sr])
    else:
        size = np.array([s, sr, b.size[2]])
    return cc, np.broadcast_to(size, cc.shape)


@dataclass
class FamilyGeometry:
    name: str
    blocks: list[Block]
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # block id -> (first box, n boxes)
    verts: np.ndarray | None = None
    normals: np.ndarray | None = None
    faces: np.ndarray | None = None
    n_boxes: int = 0

    def box_colors_to_vertex(self, box_rgba: np.ndarray) -> np.ndarray:
        """[n_boxes, 4] -> per-vertex colours [n_boxes*24, 4] float32."""
        return np.repeat(np.asarray(box_rgba, np.float32), VERTS_PER_BOX, axis=0)


def build_families(layout: Layout) -> dict[str, FamilyGeometry]:
    fams: dict[str, FamilyGeometry] = {}
    for b in layout.blocks:
        fams.setdefault(b.family, FamilyGeometry(b.family, []))
        fams[b.family].blocks.append(b)
    for fam in fams.values():
        cs, ss = [], []
        k = 0
        for b in fam.blocks:
            c, s = block_boxes(b)
            fam.ranges[b.id] = (k, len(c))
            k += len(c)
            cs.append(c)
            ss.append(s)
        fam.n_boxes = k
        fam.verts, fam.normals, fam.faces = boxes_mesh(np.concatenate(cs), np.concatenate(ss))
    return fams


def outline_segments(lo: np.ndarray, hi: np.ndarray, pad: float = 0.04) -> np.ndarray:
    """The 12 edges of a box as 24 points (GL 'lines' mode)."""
    lo = np.asarray(lo, float) - pad
    hi = np.asarray(hi, float) + pad
    c = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    edges = [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)]
    return np.array([c[i] for e in edges for i in e], dtype=np.float32)
