"""Box geometry for the layout: one merged, indexed triangle mesh per family of blocks (numpy only).

Every drawn box (a cell of a tensor grid, a slab of the stack, ...) is 24 vertices (4 per face, flat
normals) and 12 triangles. A family's mesh keeps, per block, the range of its boxes so that recolouring
writes a colour buffer only (`FamilyGeometry.box_colors` -> per-vertex colours).

Layers of the same type have the same exploded geometry (only the block ids differ), and the stack changes
with the backdrop only: `GeometryCache` keeps the last few families' arrays by what they are made of, so a layer
change usually reuses the arrays (and the GL buffers that hold them) instead of building them again. The
normals and faces of N boxes depend on N alone and are shared. Cached arrays are read-only.
"""
from __future__ import annotations

from collections import OrderedDict
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
    verts = (UNIT_V[None] * sizes[:, None] + centers[:, None]).reshape(-1, 3)
    normals, faces = _normals_faces(len(centers))
    return verts.astype(np.float32), normals.copy(), faces.copy()


_SHARED: "OrderedDict[int, tuple[np.ndarray, np.ndarray]]" = OrderedDict()  # n boxes -> (normals, faces)
_SHARED_MAX = 6


def _normals_faces(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The normals [n*24, 3] and faces [n*12, 3] of n boxes: the same for any n boxes, kept read-only for the
    last few n (each family has its own n)."""
    hit = _SHARED.get(n)
    if hit is None:
        normals = np.broadcast_to(UNIT_N[None], (n, 24, 3)).reshape(-1, 3).copy()
        faces = (UNIT_F[None] + (np.arange(n, dtype=np.uint32) * 24)[:, None, None]).reshape(-1, 3)
        for a in (normals, faces):
            a.setflags(write=False)
        hit = _SHARED[n] = (normals, faces)
        while len(_SHARED) > _SHARED_MAX:
            _SHARED.popitem(last=False)
    _SHARED.move_to_end(n)
    return hit


# the faces of a box in _FACES order: +x, -x, +y, -y, +z, -z
_FACE_POS_Y, _FACE_NEG_Y = 2, 3
BACKDROP_GAP = 0.72  # the backdrop's distance behind the nearest / farthest block of its panel (y)


def backdrop_near_y(layout: Layout, b: Block) -> float:
    """Where the backdrop's second sheet lies: as far in front of the panel's nearest block (lowest y) as the
    first sheet lies behind its walls, so that seen from behind the cells are in front of it too."""
    lo, hi = layout.block_lo, layout.block_hi
    inside = ((lo[:, 0] >= b.lo[0] - 1e-6) & (hi[:, 0] <= b.hi[0] + 1e-6)
              & (lo[:, 2] >= b.lo[2] - 1e-6) & (hi[:, 2] <= b.hi[2] + 1e-6)
              & (hi[:, 1] < b.lo[1]))  # the panel's blocks: inside its x-z rectangle, in front of it
    if not inside.any():
        return float(b.lo[1]) - 2 * BACKDROP_GAP
    return float(lo[inside, 1].min()) - BACKDROP_GAP


def backdrop_verts(b: Block, near_y: float) -> np.ndarray:
    """The 24 vertices of a backdrop drawn as two one-sided sheets: its -y face (wound to be seen from the
    front, -y) at the back (b.hi y) and its +y face (seen from behind, +y) at near_y, in front of the panel.
    With back faces culled, the camera sees only the sheet behind the cells, whichever side it looks from
    (a closed box would hide every cell seen from behind). The four side faces collapse to zero area."""
    v = (UNIT_V * b.size + b.center).astype(np.float32).reshape(6, 4, 3)
    v[_FACE_NEG_Y, :, 1] = b.hi[1]
    v[_FACE_POS_Y, :, 1] = near_y
    for f in (0, 1, 4, 5):
        v[f] = v[f, 0]
    return v.reshape(24, 3)


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


def block_signature(b: Block) -> tuple:
    """Everything block_boxes reads of a block: equal signatures give equal boxes."""
    return (b.center.tobytes(), b.size.tobytes(), b.grid, b.pitch, b.pitch_r, b.orient)


class GeometryCache:
    """The vertex arrays of the last `size` geometries of each family, by their blocks' signatures (see the
    module docstring). A hit returns the very same (read-only) arrays, so a mesh can tell that nothing changed.
    Two per family hold a KDA and an MLA layer of one AttnRes block: moving through the stack rebuilds only
    where the exploded layer's shape changes, and the cache holds little beyond what the meshes show."""

    def __init__(self, size: int = 2):
        self.size = size
        self._verts: "dict[str, OrderedDict[tuple, np.ndarray]]" = {}
        self.hits = self.misses = 0

    def verts(self, family: str, key: tuple, make) -> np.ndarray:
        """The vertices of family for key, made by make() on a miss."""
        kept = self._verts.setdefault(family, OrderedDict())
        verts = kept.get(key)
        if verts is None:
            self.misses += 1
            verts = make()
            verts.setflags(write=False)
            kept[key] = verts
            while len(kept) > self.size:
                kept.popitem(last=False)
        else:
            self.hits += 1
        kept.move_to_end(key)
        return verts

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._verts.values())


def build_families(layout: Layout, cache: GeometryCache | None = None) -> dict[str, FamilyGeometry]:
    """The merged mesh of each family of the layout's blocks; with a cache, arrays already made are reused."""
    fams: dict[str, FamilyGeometry] = {}
    for b in layout.blocks:
        fams.setdefault(b.family, FamilyGeometry(b.family, []))
        fams[b.family].blocks.append(b)
    for fam in fams.values():
        k = 0
        for b in fam.blocks:
            n = b.grid[0] * b.grid[1] if b.grid is not None else 1
            fam.ranges[b.id] = (k, n)
            k += n
        fam.n_boxes = k

        sheets = {b.id: backdrop_near_y(layout, b) for b in fam.blocks if b.part == "backdrop"}

        def make(fam=fam, sheets=sheets) -> np.ndarray:
            boxes = [block_boxes(b) for b in fam.blocks]
            verts = boxes_mesh(np.concatenate([c for c, _ in boxes]), np.concatenate([s for _, s in boxes]))[0]
            for bid, near_y in sheets.items():
                first = fam.ranges[bid][0] * VERTS_PER_BOX
                verts[first:first + VERTS_PER_BOX] = backdrop_verts(layout.by_id[bid], near_y)
            return verts
        if cache is None:
            fam.verts = make()
        else:
            key = (k, tuple(block_signature(b) for b in fam.blocks), tuple(sorted(sheets.items())))
            fam.verts = cache.verts(fam.name, key, make)
        fam.normals, fam.faces = _normals_faces(k)
    return fams


def outline_segments(lo: np.ndarray, hi: np.ndarray, pad: float = 0.04) -> np.ndarray:
    """The 12 edges of a box as 24 points (GL 'lines' mode)."""
    lo = np.asarray(lo, float) - pad
    hi = np.asarray(hi, float) + pad
    c = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    edges = [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)]
    return np.array([c[i] for e in edges for i in e], dtype=np.float32)
