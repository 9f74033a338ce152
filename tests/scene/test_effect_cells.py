"""scene/effect_cells.py, Qt-free (issue 39.5): the heads' lanes cover their own d_v columns of the tensor where a
head is zeroed (KDA's o_norm, gated MLA's o_gated), the expert plates sit on exactly the routed experts' cells
(the expert id = row × columns + column, as a click reads it), a dense layer has none; the colours are the
palette's lit diverging map (the sign as the hue, the largest |effect| most saturated); the labels, the hover
line and the header's words name total effects, never direct ones. The grids here are constructed (a layout
test); the real numbers are checked against knock-outs in tests/app/test_explain_units3d.py."""
from __future__ import annotations

import numpy as np

from compute.config import default_config
from compute.dims import ToyDims
from scene import effect_cells, palette
from scene.effect_cells import UnitEffects
from scene.explain_data import ExplainOverlay
from scene.explain_overlay import header_note
from scene.layout import build_layout
from scene.view import _default_translator

TR = _default_translator()


def _units(cfg, dims):
    toy = ToyDims()  # the engine's head count (the layout's walls are the toy's H × d_v columns)
    L, H, E = dims.n_layers, max(toy.kda_heads, toy.mla_heads), dims.experts
    heads = np.linspace(-0.3, 0.5, L * H).reshape(L, H)
    moe = [i + 1 for i, f in enumerate(dims.ffns) if f == "moe"]
    routed = np.full((len(moe), E), np.nan)
    routed[:, 3], routed[:, E - 2], routed[:, 10] = 0.2, -0.1, 0.01
    shared = np.full(len(moe), 0.05)
    words = {("head", ly, h): ((" 상자", " 공"), (" 컵",)) for ly in range(1, L + 1) for h in range(H)}
    return UnitEffects(heads=heads, expert_layers=tuple(moe), routed=routed, shared=shared, words=words)


def _layer(dims, mixer: str, ffn: str) -> int:
    return next(i for i, (m, f) in enumerate(zip(dims.mixers, dims.ffns)) if m == mixer and f == ffn)


def test_head_lanes_cover_each_heads_columns_and_expert_plates_their_cells():
    cfg = default_config()
    lay = build_layout(cfg, None)
    units = _units(cfg, lay.dims)
    for mixer, kind in (("kda", "kda.o_norm"), ("mla", "mla.o_gated")):
        li = _layer(lay.dims, mixer, "moe")
        lay = build_layout(cfg, li)
        b = effect_cells.head_block(lay)
        assert b.kind == kind
        centres, sizes, keys, vals = effect_cells.head_boxes(lay, units)
        H = len(keys)
        assert keys == [("head", li + 1, h) for h in range(H)] and np.allclose(vals, units.heads[li])
        per = b.grid[1] // H
        for h in range(H):  # each lane over its head's columns, in front of the wall, the wall's full height
            x0, x1 = centres[h, 0] - sizes[h, 0] / 2, centres[h, 0] + sizes[h, 0] / 2
            assert b.lo[0] + h * per * b.pitch - 1e-6 <= x0 and x1 <= b.lo[0] + (h + 1) * per * b.pitch + 1e-6
            assert centres[h, 1] < b.lo[1] and sizes[h, 2] >= b.size[2]
            assert effect_cells.head_of(lay, units, h * per + per // 2) == h
        centres, sizes, keys, vals = effect_cells.expert_boxes(lay, units)
        eb = lay.by_id[f"L{li + 1}/moe.experts"]
        E = lay.dims.experts
        assert [k[2] for k in keys] == [3, 10, E - 2, -1]  # the routed ones, then the shared experts
        for (x, _y, z), k in zip(centres[:3], keys[:3]):
            r, c = eb.cell_at(np.array([x, eb.center[1], z]))
            assert r * eb.grid[1] + c == k[2]
    dense = build_layout(cfg, _layer(lay.dims, "kda", "dense"))
    assert effect_cells.expert_boxes(dense, units)[2] == []


def test_colours_sign_and_saturation():
    v = np.array([0.4, -0.2, 0.0, 0.05, -0.4])
    rgba = effect_cells.colours(v, 0.4)
    assert np.allclose(rgba, palette.lit_diverging(v, 0.4))
    assert rgba[0, 0] > rgba[0, 2] and rgba[1, 2] > rgba[1, 0] and rgba[3, 0] > rgba[3, 2]  # orange / blue
    zero = rgba[2, :3]
    sat = np.abs(rgba[:, :3] - zero).sum(1)
    assert np.argmax(sat[:4]) == 0 and sat[3] < sat[1] < sat[0]
    assert np.allclose(palette.lit_diverging(np.array([1.0]), 1.0)[0], palette.diverging(np.array([1.0]), 1.0)[0])


def test_labels_tooltip_and_header_name_total_effects():
    cfg = default_config()
    dims = build_layout(cfg, None).dims
    units = _units(cfg, dims)
    li = _layer(dims, "kda", "moe")
    lay = build_layout(cfg, li)
    names = [c[2] for c in effect_cells.label_candidates(lay, units, TR)]
    top_h = int(np.argmax(np.abs(units.heads[li])))
    assert names[0] == f"head {top_h + 1} {units.heads[li, top_h]:+.2f}"
    assert "expert 3 +0.20" in names and "shared experts +0.05" in names
    b = effect_cells.head_block(lay)
    line = effect_cells.tooltip_line(lay, units, b.id, (0, 0), TR)
    assert line.startswith(f"head 1 · Total effect (head zeroed): {units.heads[li, 0]:+.2f} of the margin — "
                           "promotes ' 상자', ' 공'; suppresses ' 컵'")
    eb = lay.by_id[f"L{li + 1}/moe.experts"]
    assert "Total effect (expert removed): +0.20" in effect_cells.tooltip_line(lay, units, eb.id, (0, 3), TR)
    assert "not chosen by the router" in effect_cells.tooltip_line(lay, units, eb.id, (0, 4), TR)
    assert effect_cells.tooltip_line(lay, units, f"L{li + 1}/norm.ffn", (0, 0), TR) == ""
    ov = ExplainOverlay(5, ".", " 상자", units=units)
    note = header_note(ov, TR)
    assert "total effect (head zeroed / expert removed)" in note and "direct" not in note
    busy = ExplainOverlay(5, ".", " 상자", units=UnitEffects(computing=True))
    assert "computing" in header_note(busy, TR)
    assert effect_cells.label_candidates(lay, busy.units, TR) == []
    assert "computing" in effect_cells.tooltip_line(lay, busy.units, b.id, (0, 0), TR)
