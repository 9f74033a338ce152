"""Which heads and experts carry the answer, drawn in the exploded layer (issue 39.5): one lane per KDA / MLA head
in front of the tensor where a head is zeroed (its output after its norm and gate, before W_o: kda.o_norm /
mla.o_gated / mla.o), and a plate on each routed expert cell of the expert grid (and on the shared experts'
block), lit by the TOTAL effect of zeroing that head or removing that expert — the share of the answer's margin
over its strongest competitor that the knock-out removes, later layers re-run (compute/explain/causal_route.py).
A diverging colour (scene/palette.lit_diverging): dark = no effect, orange = it promotes the answer (zeroing it
hurts), blue = it works against the answer. Routed experts the router did not choose at the explained position
have no effect and keep their router colours.

Qt-free: `UnitEffects` is plain data the app hands over (app/engine/explain_effects.py); the functions here turn it and
a layout into boxes, colours, label candidates and a tooltip line.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scene import palette
from scene.layout import Layout

__all__ = ["UnitEffects", "head_block", "head_of", "head_boxes", "expert_boxes", "colours", "with_rims",
           "label_candidates", "tooltip_line", "LABELLED_HEADS", "LABELLED_EXPERTS"]

PLATE_D = 0.05  # depth of a lane / plate in front of its wall
LABELLED_HEADS = 4  # the strongest heads of the layer named in the key
LABELLED_EXPERTS = 3  # the strongest routed / shared experts of the layer named in the key
UNIT_PRIORITY = 2.35  # after the arcs' key (2.3), before the stack cap's names (2.5)
TOP_PRIORITY = 1.9  # the strongest head's and expert's names: placed clear of other labels even where every spot
# would cover a block (scene/labels.py: below 2), so that the top ones are always named
KEY_DROP = 0.45  # the key's row under its wall
KEY_STEP = 1.7  # world units between two key entries
HEAD_BLOCKS = ("kda.o_norm", "mla.o_gated", "mla.o")  # where a head is zeroed (before W_o), first present wins
WORDS_SHOWN = 3


@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class UnitEffects:
    """heads [L, H] (NaN: a layer with fewer heads), expert_layers (1-based MoE layers), routed [M, E] (NaN: not
    routed at the explained position), shared [M] (NaN: no shared experts); words {("head", layer, h) |
    ("expert", layer, e; -1 = the shared experts): (promoted pieces, suppressed pieces)}; computing: asked for,
    not come yet (experts_computing: the experts' part only); error: one line when they could not be made."""

    heads: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    expert_layers: tuple = ()
    routed: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    shared: np.ndarray = field(default_factory=lambda: np.zeros(0))
    words: dict = field(default_factory=dict, compare=False)
    computing: bool = False
    error: str = ""
    experts_computing: bool = False  # the heads are here, the experts' grid (the slower one) still to come

    @property
    def ready(self) -> bool:
        return not self.computing and not self.error and np.size(self.heads) > 0

    def head_row(self, layer: int) -> np.ndarray:
        """[H] of a 1-based layer (empty when unknown)."""
        h = np.asarray(self.heads, np.float64)
        return h[layer - 1] if 1 <= layer <= h.shape[0] else np.zeros(0)

    def expert_row(self, layer: int) -> tuple[np.ndarray, float] | None:
        """([E] routed, shared) of a 1-based MoE layer, or None for a layer without routed experts."""
        if layer not in self.expert_layers:
            return None
        m = self.expert_layers.index(layer)
        return np.asarray(self.routed, np.float64)[m], float(np.asarray(self.shared, np.float64)[m])

    @property
    def head_scale(self) -> float:
        v = np.asarray(self.heads, np.float64)
        return _scale(v)

    @property
    def expert_scale(self) -> float:
        return _scale(np.concatenate([np.asarray(self.routed, np.float64).ravel(),
                                      np.asarray(self.shared, np.float64).ravel()]))


def _scale(v: np.ndarray) -> float:
    """The largest finite |effect| (the colour's full saturation): one scale for every layer, so that a layer
    whose heads hardly matter looks dark beside one that carries the answer."""
    v = v[np.isfinite(v)] if v.size else v
    return float(np.abs(v).max()) if v.size and np.abs(v).max() > 0 else 1.0


def head_block(layout: Layout):
    """The exploded layer's block where a head is zeroed (None when the layer has none drawn)."""
    L = layout.layer + 1
    for kind in HEAD_BLOCKS:
        b = layout.by_id.get(f"L{L}/{kind}")
        if b is not None and b.grid is not None:
            return b
    return None


def _n_heads(row: np.ndarray) -> int:
    return int(np.isfinite(row).sum())


def head_of(layout: Layout, units: UnitEffects, col: int) -> int | None:
    """The head whose lane covers feature column `col` of head_block (its columns: H groups of d_v)."""
    b = head_block(layout)
    H = _n_heads(units.head_row(layout.layer + 1))
    if b is None or H == 0:
        return None
    per = max(1, b.grid[1] // H)
    return min(col // per, H - 1)


def head_boxes(layout: Layout, units: UnitEffects):
    """(centres [n, 3], sizes [n, 3], keys [("head", layer, h)], values [n]) of the exploded layer's head lanes:
    each a plate over its head's d_v columns, in front of the wall, the wall's full height."""
    out = ([], [], [], [])
    b = head_block(layout)
    L = layout.layer + 1
    row = units.head_row(L)
    H = _n_heads(row)
    if b is not None and H:
        per = max(1, b.grid[1] // H)
        for h in range(H):
            x0 = b.lo[0] + h * per * b.pitch
            w = per * b.pitch
            out[0].append((x0 + w / 2, b.lo[1] - PLATE_D / 2 - 0.01, b.center[2]))
            out[1].append((w - 0.08, PLATE_D, b.size[2] + 0.04))  # a gap between two heads
            out[2].append(("head", L, h))
            out[3].append(float(row[h]))
    return _arrays(*out)


def expert_boxes(layout: Layout, units: UnitEffects):
    """(centres, sizes, keys [("expert", layer, e)] (-1: the shared experts), values) of the exploded layer's
    routed experts with an effect (those the router chose at the explained position) and its shared experts."""
    out = ([], [], [], [])
    L = layout.layer + 1
    got = units.expert_row(L)
    b = layout.by_id.get(f"L{L}/moe.experts")
    if got is not None and b is not None and b.grid is not None:
        routed, shared = got
        centres = b.cell_centers()
        side = b.pitch * 0.95
        for e in np.flatnonzero(np.isfinite(routed)).tolist():
            if e < len(centres):
                c = centres[e]
                out[0].append((c[0], b.lo[1] - PLATE_D / 2 - 0.01, c[2]))
                out[1].append((side, PLATE_D, side))
                out[2].append(("expert", L, int(e)))
                out[3].append(float(routed[e]))
        s = layout.by_id.get(f"L{L}/moe.shared/E")
        if s is not None and np.isfinite(shared):
            out[0].append((s.center[0], s.lo[1] - PLATE_D / 2 - 0.01, s.center[2]))
            out[1].append((s.size[0] * 0.9, PLATE_D, s.size[2] * 0.95))
            out[2].append(("expert", L, -1))
            out[3].append(shared)
    return _arrays(*out)


def _arrays(centres, sizes, keys, vals):
    n = len(centres)
    return (np.asarray(centres, np.float32).reshape(n, 3), np.asarray(sizes, np.float32).reshape(n, 3), keys,
            np.asarray(vals, np.float64))


def colours(values, scale: float) -> np.ndarray:
    """[n, 4] RGBA of effects: palette.lit_diverging at the given scale (the model's largest |effect|)."""
    return palette.lit_diverging(np.asarray(values, np.float64), scale)


RIM = 0.06  # how far a plate's grey rim reaches past it (world units)


def with_rims(centres: np.ndarray, sizes: np.ndarray, rgba: np.ndarray):
    """The plates and, behind each, a slightly larger grey rim (palette "label_mark"): a measured part whose
    effect is about nothing stays dark but is still told apart from the cells around it (the router's colours
    in the expert grid). Returns (centres, sizes, rgba) of 2n boxes, the plates first."""
    rim_c = centres.copy()
    rim_c[:, 1] += PLATE_D * 0.3  # nearer the wall, so that the plate lies over it
    rim_s = sizes.copy()
    rim_s[:, [0, 2]] += 2 * RIM
    rim_s[:, 1] *= 0.5
    grey = np.tile(np.asarray(palette.role("label_mark"), np.float32), (len(centres), 1))
    return (np.concatenate([centres, rim_c]), np.concatenate([sizes, rim_s]),
            np.concatenate([np.asarray(rgba, np.float32), grey]))


def _who(key, tr) -> str:
    kind, _layer, i = key
    if kind == "head":
        return tr("scene.units.head", n=i + 1)
    return tr("scene.units.shared") if i < 0 else tr("scene.units.expert", n=i)


def label_candidates(layout: Layout, units: UnitEffects, tr) -> list[tuple]:
    """The label placer's candidates (priority, anchor, name, shape, role, id, where): the strongest heads, each
    under its own lane, and the strongest experts as a key in a row under the expert grid (the shared experts'
    under their block) — "head 2 +0.10" in its own colour."""
    if not units.ready:
        return []
    out = []
    for boxes, n, block, scale in ((head_boxes(layout, units), LABELLED_HEADS, head_block(layout), units.head_scale),
                                   (expert_boxes(layout, units), LABELLED_EXPERTS,
                                    layout.by_id.get(f"L{layout.layer + 1}/moe.experts"), units.expert_scale)):
        centres, sizes, keys, vals = boxes
        if not keys or block is None:
            continue
        order = sorted(range(len(keys)), key=lambda i: -abs(vals[i]))[:n]
        rgba = colours(vals[order], scale)
        z = float(block.lo[2]) - KEY_DROP
        x = float(block.lo[0])
        shared = layout.by_id.get(f"L{layout.layer + 1}/moe.shared/E")
        col = 0
        for k, i in enumerate(order):
            top = col == 0  # the strongest head, the strongest routed expert and the shared experts
            if keys[i][0] == "head":  # under its own lane (its left edge)
                anchor = np.array([float(centres[i, 0] - sizes[i, 0] / 2), float(block.lo[1]), z])
                col += 1
            elif keys[i][2] < 0 and shared is not None:  # the shared experts: under their own block
                anchor = np.array([float(shared.lo[0]), float(shared.lo[1]), float(shared.lo[2]) - KEY_DROP])
                top = True
            else:  # the key row under the wall, strongest first
                anchor = np.array([x + col * KEY_STEP, float(block.lo[1]), z])
                col += 1
            out.append(((TOP_PRIORITY if top else UNIT_PRIORITY) + 1e-3 * k, anchor,
                        f"{_who(keys[i], tr)} {vals[i]:+.2f}", "", tuple(float(c) for c in rgba[k]),
                        "unit/{}/{}/{}".format(*keys[i]), "key"))
    return out


def _pieces(items) -> str:
    return ", ".join("'" + str(p).replace("\n", "\\n") + "'" for p in items[:WORDS_SHOWN])


def tooltip_line(layout: Layout, units: UnitEffects | None, block_id: str, cell, tr) -> str:
    """The hover line of a head lane's or an expert cell's total effect ("" elsewhere): "Total effect (head
    zeroed): +0.42 of the margin — promotes ' 상자', …; suppresses …"."""
    if units is None or cell is None:
        return ""
    L = layout.layer + 1
    b = layout.by_id.get(block_id)
    if b is None or b.layer != L:
        return ""
    hb = head_block(layout)
    if units.computing or (units.experts_computing and b.kind in ("moe.experts", "moe.shared")):
        if (hb is not None and block_id == hb.id) or b.kind in ("moe.experts", "moe.shared"):
            return tr("scene.units.tip.computing")
        return ""
    if not units.ready:
        return ""
    key = None
    if hb is not None and block_id == hb.id:
        h = head_of(layout, units, cell[1])
        if h is not None:
            key, value, what = ("head", L, h), float(units.head_row(L)[h]), "head"
    elif b.kind in ("moe.experts", "moe.shared"):
        got = units.expert_row(L)
        if got is not None:
            e = -1 if b.kind == "moe.shared" else cell[0] * b.grid[1] + cell[1]
            value = got[1] if e < 0 else float(got[0][e]) if e < len(got[0]) else float("nan")
            if np.isfinite(value):
                key, what = ("expert", L, e), "shared" if e < 0 else "expert"
            elif e >= 0:
                return tr("scene.units.tip.not_routed", who=_who(("expert", L, e), tr))
    if key is None:
        return ""
    up, down = units.words.get(key, ((), ()))
    return tr(f"scene.units.tip.{what}", who=_who(key, tr), value=f"{value:+.2f}", up=_pieces(up) or "—",
              down=_pieces(down) or "—")
