"""The one declarative layout of the scene: model config (+ toy shapes) -> list of `Block` records.

Meshes, CPU picking, labels, the inspector and the trace highlights all read this list; nothing exists only
in GL. Qt-free and GL-free (numpy only).

World coordinates: z is up, the camera's default view looks along +y (the front of every tensor wall faces
-y). Two parts:

* the stack (S1): 93 flat slabs (x, y) stacked along z, bottom = layer 1, with the embedding below, the
  final AttnRes / RMSNorm / LM head / sampling above, and an AttnRes bracket every 12 layers;
* the exploded selected layer (S2), to the right of the stack: every sub-operation of the layer's real type
  is a cell grid (rows = tokens, columns = features) standing in the x-z plane ("wall"); a linear block
  y = x W also has its weight W lying as a horizontal "plate" in front of it (rows of W = input features
  running towards the viewer, column j of W directly under column j of y). The mixer part flows upwards in
  the left column, the FFN part in the right column.

Block sizes follow the toy dims (the numbers actually computed); labels carry the real K3 shapes.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from compute.config import ModelConfig
from compute.dims import ModelDims
from scene import block_kinds
from scene.block_kinds import label_key, mixer_key
# the shape and role tables live in scene/layout_shapes.py; their names stay importable from here
from scene.block_kinds import role_of
from scene.layout_shapes import (FFN_STATIONS, FLOW, MIXER_STATIONS, PLATE_IN, PLATE_KINDS, ROLE_OF,  # noqa: F401
                                 TOY_DIMS, _k3_shapes, _toy_shapes, fmt_int, stored_candidates)

DEFAULT_TOKENS = 6
MAX_ROWS = 24  # at most this many token rows are drawn (the last positions)

# geometry constants (world units)
PITCH = 0.30  # cell pitch of tensor grids
ROWS_BUDGET = 2.7  # token rows of one block fill at most this height (rows get flatter for long prompts)
CELL_FILL = 0.82  # fraction of the pitch a cell occupies
WALL_T = 0.12  # thickness of a wall grid (y)
PLATE_T = 0.08  # thickness of a weight plate (z)
EXPERT_PITCH = 0.22
SLAB_W, SLAB_D, SLAB_H, SLAB_STEP = 6.4, 4.4, 0.21, 0.33
STACK_X = 0.0
PANEL_X0 = 7.4  # x where the exploded layer starts
COL_GAP = 1.6
BLOCK_GAP = 0.6
STATION_GAP = 1.05


@functools.lru_cache(maxsize=8)
def _expert_grid(n: int) -> tuple[int, int]:
    """(rows, cols) holding exactly n experts, as square as possible (K3's experts: 28 x 32)."""
    best = (1, n)
    for c in range(1, n + 1):
        if n % c == 0 and abs(c - (n / c) * 8 / 7) < abs(best[1] - best[0] * 8 / 7):
            best = (n // c, c)
    return best


@dataclass
class Block:
    """One drawn thing. `id` is "L{layer}/{kind}" (layer 1-based), "L{layer}/{kind}/W" for a weight plate,
    or "{kind}" / "{kind}/{n}" for global blocks."""

    id: str
    kind: str
    layer: int  # 1-based; 0 = global
    role: str  # colour role (scene/palette.py)
    family: str  # mesh family: "stack" | "cells" | "experts"
    center: np.ndarray
    size: np.ndarray
    part: str = "tensor"  # "tensor" | "weight" | "slab" | "bracket" | "global" | "shared_experts"
    tensor_key: str | None = None
    label_key: str = ""
    k3_shape: str = ""
    toy_shape: tuple[int, ...] = ()
    grid: tuple[int, int] | None = None  # (rows, cols) of cells, None = one solid box
    orient: str = "wall"  # "wall": cols along +x, rows down -z; "plate": cols along +x, rows along -y
    pitch: float = PITCH  # column pitch (x)
    pitch_r: float = 0.0  # row pitch (z for walls, y for plates); 0 = same as pitch
    label: bool = True  # draw a label in the overlay
    rows_are_tokens: bool = True
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.pitch_r:
            self.pitch_r = self.pitch

    @property
    def lo(self) -> np.ndarray:
        return self.center - self.size / 2

    @property
    def hi(self) -> np.ndarray:
        return self.center + self.size / 2

    def cell_centers(self) -> np.ndarray:
        """[rows*cols, 3] world centres of the cells, row-major."""
        rows, cols = self.grid
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        u = self.lo[0] + (c.ravel() + 0.5) * self.pitch
        out = np.empty((rows * cols, 3))
        out[:, 0] = u
        if self.orient == "wall":
            out[:, 2] = self.hi[2] - (r.ravel() + 0.5) * self.pitch_r
            out[:, 1] = self.center[1]
        else:
            out[:, 1] = self.hi[1] - (r.ravel() + 0.5) * self.pitch_r  # row 0 at the back edge
            out[:, 2] = self.center[2]
        return out

    def cell_at(self, point: np.ndarray) -> tuple[int, int] | None:
        """(row, col) of the cell containing a world point on/in the block, or None."""
        if self.grid is None:
            return None
        rows, cols = self.grid
        col = int(np.floor((point[0] - self.lo[0]) / self.pitch))
        if self.orient == "wall":
            row = int(np.floor((self.hi[2] - point[2]) / self.pitch_r))
        else:
            row = int(np.floor((self.hi[1] - point[1]) / self.pitch_r))
        return min(max(row, 0), rows - 1), min(max(col, 0), cols - 1)


@dataclass
class Layout:
    blocks: list[Block]
    dims: ModelDims
    layer: int  # selected layer, 0-based
    rows: int  # token rows drawn
    row_positions: list[int]  # absolute token position of each drawn row
    by_id: dict[str, Block] = field(default_factory=dict)
    bounds: tuple[np.ndarray, np.ndarray] | None = None
    panel_bounds: tuple[np.ndarray, np.ndarray] | None = None
    stack_bounds: tuple[np.ndarray, np.ndarray] | None = None
    flow: list[tuple[str, str]] = field(default_factory=list)  # conceptual data-flow edges of the layer
    trace_ok: bool = False  # the trace was made by this model's structure (else: structure only)

    def __post_init__(self):
        self.by_id = {b.id: b for b in self.blocks}
        # every block's corners as two [n, 3] arrays, made once (bounds here, the picker's boxes)
        centers = np.array([b.center for b in self.blocks], float)
        half = np.array([b.size for b in self.blocks], float) / 2
        self.block_lo, self.block_hi = centers - half, centers + half
        self.bounds = (self.block_lo.min(axis=0), self.block_hi.max(axis=0))
        pan = np.array([b.layer == self.layer + 1 and (b.family != "stack" or b.part == "backdrop")
                        for b in self.blocks])
        if pan.any():
            self.panel_bounds = (self.block_lo[pan].min(axis=0), self.block_hi[pan].max(axis=0))
        st = np.array([b.family == "stack" for b in self.blocks])
        self.stack_bounds = (self.block_lo[st].min(axis=0), self.block_hi[st].max(axis=0))

    def layer_blocks(self) -> list[Block]:
        return [b for b in self.blocks if b.layer == self.layer + 1 and b.family != "stack"]


# ---------------------------------------------------------------------------------------------------------
def _rows_of(kind: str) -> str:
    """What the rows of a kind's tensor are (scene/block_kinds.py; "" for a kind the table does not know)."""
    e = block_kinds.entry(kind)
    return e.rows if e is not None else ""


def _cols_of(kind: str) -> str:
    e = block_kinds.entry(kind)
    return e.cols if e is not None else ""


def _per_token(kind: str) -> bool:
    e = block_kinds.entry(kind)
    return e is not None and e.per_token


def _grid_of(kind: str, shape: tuple, n_experts: int) -> tuple[tuple[int, int], float, bool]:
    """(rows, cols), pitch, rows_are_tokens for a tensor of the given toy shape."""
    e = block_kinds.entry(kind)
    if e is not None and e.per_token:  # one token's router scores / chosen experts as an expert grid
        return _expert_grid(n_experts), EXPERT_PITCH, False
    if e is not None and e.rows in ("head_dk", "head_query"):  # [H, dk, dv] / [H, T, S] -> heads stacked vertically
        return (shape[0] * shape[1], shape[2]), PITCH, False
    rows, cols = shape[0], (shape[1] if len(shape) > 1 else 1)
    return (max(rows, 1), max(cols, 1)), PITCH, True


def trace_fits(trace, dims: ModelDims) -> bool:
    """True when the trace has this model's layers with the same mixer / FFN types."""
    if not trace.passes or trace.n_layers != dims.n_layers:
        return False
    layers = trace.passes[0].layers
    return all(lt.mixer == dims.mixers[i] and lt.ffn == dims.ffns[i] for i, lt in enumerate(layers))


def token_rows(trace) -> list[int]:
    """Absolute token position of each drawn grid row (the last MAX_ROWS positions of the trace)."""
    if trace is not None and trace.tokens:
        total = len(trace.tokens)
        return list(range(max(0, total - MAX_ROWS), total))
    return list(range(DEFAULT_TOKENS))


def build_layout(cfg: ModelConfig | None = None, layer0: int | None = None, trace=None, pass_index: int = 0) -> Layout:
    """The whole scene for config `cfg` with layer `layer0` (0-based; None: the model's default layer) exploded.

    Token rows: all positions of the trace (prompt + generated, at most MAX_ROWS, the last ones); without a
    trace DEFAULT_TOKENS placeholder rows (coloured neutrally, never with made-up numbers)."""
    dims = ModelDims.from_config(cfg)
    n = dims.n_layers
    if layer0 is None:
        from compute.config import default_config
        from compute.model_defaults import default_layer

        layer0 = default_layer(cfg if cfg is not None else default_config()) - 1
    layer0 = int(min(max(layer0, 0), n - 1))
    if trace is not None and not trace_fits(trace, dims):
        trace = None  # e.g. a K3 trace while another model's config is shown: draw structure, no numbers
    positions = token_rows(trace)
    rows = len(positions)
    blocks: list[Block] = []
    k3 = _k3_shapes(dims, layer0)

    # ---- the stack --------------------------------------------------------------------------------
    z0 = 1.2  # bottom of layer 1
    for i in range(n):
        mixer = dims.mixers[i] if i < len(dims.mixers) else "kda"
        ffn = dims.ffns[i] if i < len(dims.ffns) else "moe"
        zc = z0 + i * SLAB_STEP + SLAB_H / 2
        blocks.append(Block(
            id=f"L{i + 1}/stack.layer", kind="stack.layer", layer=i + 1, role=mixer, family="stack",
            center=np.array([STACK_X, 0.0, zc]), size=np.array([SLAB_W, SLAB_D, SLAB_H]), part="slab",
            label_key=f"scene.layer.{mixer_key(mixer, dims.mla_gate)}", k3_shape=f"{mixer.upper()} + {'dense MLP' if ffn == 'dense' else 'MoE'}",
            label=False, meta=dict(mixer=mixer, ffn=ffn)))
        if ffn == "dense":  # amber marker on the slab's front edge: this layer's FFN is dense
            blocks.append(Block(
                id=f"L{i + 1}/stack.layer/dense", kind="stack.layer", layer=i + 1, role="dense", family="stack",
                center=np.array([STACK_X + SLAB_W / 2 - 0.55, -SLAB_D / 2 - 0.06, zc]),
                size=np.array([1.0, 0.14, SLAB_H * 1.05]), part="marker", label_key="scene.dense_marker",
                label=False))
    top = z0 + n * SLAB_STEP
    bs = dims.block_size
    if bs:
        for b, start in enumerate(range(0, n, bs)):
            end = min(start + bs, n)
            zlo, zhi = z0 + start * SLAB_STEP, z0 + end * SLAB_STEP - (SLAB_STEP - SLAB_H)
            blocks.append(Block(
                id=f"stack.attnres_bracket/{b + 1}", kind="stack.attnres_bracket", layer=0, role="attnres",
                family="stack", center=np.array([STACK_X - SLAB_W / 2 - 0.45, -SLAB_D / 2 + 0.2, (zlo + zhi) / 2]),
                size=np.array([0.16, 0.16, zhi - zlo - 0.06]), part="bracket",
                label_key="scene.bracket", k3_shape=f"{start + 1}–{end}", label=True,
                meta=dict(first=start + 1, last=end, index=b + 1)))
    blocks.append(Block(
        id="embedding", kind="embedding", layer=0, role="embedding", family="stack",
        center=np.array([STACK_X, 0.0, 0.45]), size=np.array([SLAB_W * 0.92, SLAB_D * 0.92, 0.5]),
        part="global", tensor_key="embedding", label_key="block.embedding", k3_shape=k3["embedding"]))
    gz = top + 0.35
    for kind, h, w in (("final.attnres", 0.3, 0.8), ("final.norm", 0.25, 0.84), ("lm_head", 0.5, 0.96),
                       ("sampling", 0.35, 0.5)):
        if not block_kinds.has(kind, dims):  # no AttnRes: no final AttnRes
            continue
        blocks.append(Block(
            id=kind, kind=kind, layer=0, role=role_of(kind), family="stack",
            center=np.array([STACK_X, 0.0, gz + h / 2]), size=np.array([SLAB_W * w, SLAB_D * w, h]),
            part="global", tensor_key=kind, label_key=f"block.{kind}", k3_shape=k3[kind]))
        gz += h + 0.28

    # ---- the exploded layer -------------------------------------------------------------------------
    mixer = dims.mixers[layer0] if layer0 < len(dims.mixers) else "kda"
    ffn = dims.ffns[layer0] if layer0 < len(dims.ffns) else "moe"
    seq = rows
    shapes = _toy_shapes(trace, layer0, dims, rows, seq)
    L = layer0 + 1
    wts = trace.weights[layer0] if trace is not None and layer0 < len(getattr(trace, "weights", [])) else {}

    def plate_shape(kind: str) -> tuple[int, int]:
        if kind in wts and getattr(wts[kind], "ndim", 0) == 2:
            return tuple(wts[kind].shape)
        src = PLATE_IN[kind]
        din = TOY_DIMS.hidden if src == "hidden" else shapes[src][-1]
        return din, shapes[kind][-1]

    # which sub-operations this model has (K3 has all; e.g. DeepSeek-V3 has no AttnRes and no latent MoE)
    # (the block-kind table's features: no AttnRes, no MoE latent, no query compression, no output gate, no shared
    # experts in a user's config -> no such blocks)
    present = {k for k in shapes if block_kinds.has(k, dims)}

    def column(stations: list[list[str]], x0: float, z_start: float) -> tuple[float, float]:
        """Place the stations of one column; returns (max x, top z)."""
        z = z_start
        xmax = x0
        for station in stations:
            items = []
            for kind in station:
                if kind not in present:
                    continue
                shp = shapes.get(kind)
                if _cols_of(kind) == "candidates" and (shp is None or shp[-1] == 0):  # no AttnRes mix yet (layer 1)
                    continue
                (gr, gc), pitch, tok = _grid_of(kind, shp, dims.experts)
                pitch_r = pitch
                if tok or _rows_of(kind) == "head_query":
                    pitch_r = min(pitch, ROWS_BUDGET / max(rows, 1))
                w, h = gc * pitch, gr * pitch_r
                pd = 0.0
                if kind in PLATE_IN:
                    pd = plate_shape(kind)[0] * PITCH
                items.append((kind, shp, gr, gc, pitch, pitch_r, tok, w, h, pd))
            if not items:
                continue
            sh = max(it[8] for it in items)
            x = x0
            for kind, shp, gr, gc, pitch, pitch_r, tok, w, h, pd in items:
                zc = z + h / 2
                blocks.append(Block(
                    id=f"L{L}/{kind}", kind=kind, layer=L, role=role_of(kind), family="experts"
                    if _per_token(kind) else "cells",
                    center=np.array([x + w / 2, 0.0, zc]), size=np.array([w, WALL_T, h]), tensor_key=kind,
                    label_key=label_key(kind, dims), k3_shape=k3.get(kind, ""), toy_shape=tuple(shp), grid=(gr, gc),
                    pitch=pitch, pitch_r=pitch_r, rows_are_tokens=tok))
                if kind in PLATE_IN:
                    din, dout = plate_shape(kind)
                    blocks.append(Block(
                        id=f"L{L}/{kind}/W", kind=kind, layer=L, role="weight", family="cells",
                        center=np.array([x + w / 2, -WALL_T / 2 - din * PITCH / 2 - 0.04, z - 0.02]),
                        size=np.array([dout * PITCH, din * PITCH, PLATE_T]), part="weight", tensor_key=kind,
                        label_key=label_key(kind, dims), k3_shape=k3.get(kind, ""), toy_shape=(din, dout),
                        grid=(din, dout), orient="plate", rows_are_tokens=False, label=False))
                if kind == "moe.experts" and block_kinds.has("moe.shared", dims):  # the shared experts, apart from
                    # the routed grid, always on
                    sp = 0.42
                    ns = max(dims.shared, 1)
                    blocks.append(Block(
                        id=f"L{L}/moe.shared/E", kind="moe.shared", layer=L, role="shared", family="experts",
                        center=np.array([x + w + 0.3 + sp / 2, 0.0, z + ns * sp / 2]),
                        size=np.array([sp, WALL_T, ns * sp]),
                        part="shared_experts", tensor_key=None, label_key="scene.shared_experts",
                        k3_shape=k3["moe.shared"], toy_shape=(ns,), grid=(ns, 1), pitch=sp,
                        rows_are_tokens=False, label=False))
                    w += 0.3 + sp
                x += w + BLOCK_GAP
                xmax = max(xmax, x - BLOCK_GAP)
            z += sh + STATION_GAP
        return xmax, z

    xm, ztop_m = column(MIXER_STATIONS[mixer], PANEL_X0, z0)
    xf, ztop_f = column(FFN_STATIONS[ffn], xm + COL_GAP, z0)
    # a dark backdrop behind the exploded layer groups it visually (decoration: not pickable, no label)
    bx0, bx1 = PANEL_X0 - 2.0, xf + 0.8  # the left margin holds the token names
    bz0, bz1 = z0 - 0.9, max(ztop_m, ztop_f) - STATION_GAP + 1.4
    blocks.append(Block(
        id=f"L{L}/backdrop", kind="stack.layer", layer=L, role="background", family="stack",
        center=np.array([(bx0 + bx1) / 2, 0.75, (bz0 + bz1) / 2]), size=np.array([bx1 - bx0, 0.06, bz1 - bz0]),
        part="backdrop", label=False, meta=dict(mixer=mixer, ffn=ffn)))
    flow = [(f"L{L}/{a}", f"L{L}/{b}") for a, b in FLOW[mixer] + FLOW[ffn]]
    flow.append((f"L{L}/{mixer}.o_proj", f"L{L}/attnres.ffn"))
    lay = Layout(blocks=blocks, dims=dims, layer=layer0, rows=rows, row_positions=positions,
                 trace_ok=trace is not None)
    # models without some sub-operations: connect around the missing ones
    flow += [(f"L{L}/{a}", f"L{L}/{b}") for a, b in (
        ("norm.mixer", "mla.q_b"), ("mla.o", "mla.o_proj"), ("norm.ffn", "moe.experts"), ("moe.mix", "ffn.out"),
        ("norm.mixer", "kda.q_proj"))]
    ids = {b.id for b in blocks}
    skip = set()
    if f"L{L}/mla.q_a" in ids:
        skip.add((f"L{L}/norm.mixer", f"L{L}/mla.q_b"))
    if f"L{L}/mla.o_gated" in ids:
        skip.add((f"L{L}/mla.o", f"L{L}/mla.o_proj"))
    if f"L{L}/moe.down" in ids:
        skip |= {(f"L{L}/norm.ffn", f"L{L}/moe.experts"), (f"L{L}/moe.mix", f"L{L}/ffn.out")}
    flow = list(dict.fromkeys(e for e in flow if e not in skip))
    lay.flow = [(a, b) for a, b in flow if a in lay.by_id and b in lay.by_id]
    return lay
