"""Which heads and experts carry the answer, in 3D (issue 39.5), in the real window with real events: ticking
"Heads & experts" on the Explain dock's route page asks for both total-effect grids on the "explain" background
lane (the 3D view says "computing" meanwhile); then the exploded layer's heads are lanes in front of the tensor
where a head is zeroed and its routed experts' cells are plates, lit by their total effect. Checked against numbers
this test recomputes itself: a head zeroed by zeroing its rows of W_o in a float64 copy of the engine and running
the prompt again, an expert knocked out with Explanation.knockout — the share of the answer's margin over its
strongest competitor each removes. Colours (sign, the strongest most saturated), labels (the top ones named),
the hover text (both languages), a click on an expert cell selecting that expert, and an exported PNG."""
from __future__ import annotations

import copy
import threading

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest

from app import i18n
from scene import camera as camlib
from scene import effect_cells
from scene.labels import place_labels
from tests.app.gui_helpers import image_array, pump, wait_idle
from tests.app.test_explain_dock import open_page, wait_for


def _contrast(lg: np.ndarray, a: int) -> float:
    lg = np.asarray(lg, np.float64)
    return float(lg[a] - np.delete(lg, a).max())


def _head_effects_by_weights(ex, layer: int) -> np.ndarray:
    """[H] of a 1-based layer: each head zeroed by zeroing its d_v rows of W_o (its output before W_o) in a
    float64 copy of the engine, the whole prompt run again; the share of the margin removed."""
    from compute.explain.knockout import prefill
    from compute.explain.rerun import twin64

    tw = twin64(ex.model)
    base = np.asarray(prefill(tw, ex.ids, ex.knobs).final["lm_head"][ex.position], np.float64)
    a = int(np.argmax(base))
    c0 = _contrast(base, a)
    li = layer - 1
    kind = "kda" if "kda" in tw.layers[li] else "mla"
    H = tw.dims.kda_heads if kind == "kda" else tw.dims.mla_heads
    out = []
    for h in range(H):
        t = copy.copy(tw)
        t.layers = list(tw.layers)
        w = dict(tw.layers[li])
        sub = dict(w[kind])
        wo = np.array(sub["o"], np.float64)
        v = wo.shape[0] // H
        wo[h * v:(h + 1) * v] = 0.0
        sub["o"], w[kind] = wo, sub
        t.layers[li] = w
        lg = np.asarray(prefill(t, ex.ids, ex.knobs).final["lm_head"][ex.position], np.float64)
        out.append((c0 - _contrast(lg, a)) / c0)
    return np.array(out)


def _expert_effects_by_knockout(ex, layer: int, experts) -> dict:
    """{expert: share of the margin removed} with Explanation.knockout(experts=[(layer, e)])."""
    a = ex.word_index
    c0 = _contrast(ex.logits, a)
    return {e: (c0 - _contrast(ex.knockout(experts=[(layer, e)]).logits, a)) / c0 for e in experts}


def _saturation(rgba) -> np.ndarray:
    """How far each colour is from lit_diverging's dark zero."""
    zero = effect_cells.colours(np.zeros(1), 1.0)[0, :3]
    return np.abs(np.asarray(rgba)[:, :3] - zero).sum(1)


def _px(scene, point) -> QPoint:
    (x, y), = camlib.project(np.asarray(point, float)[None], scene.cam, scene.gl.width(), scene.gl.height())[0]
    return QPoint(int(round(x)), int(round(y)))


def _frame(scene) -> np.ndarray:
    return image_array(scene.render_image(scene.gl.width(), scene.gl.height(), transparent=False))[..., :3].astype(int)


def _click_layer(qtbot, win, layer: int) -> None:
    """A real click on the stack's slab of `layer` (1-based): it becomes the exploded layer."""
    scene = win.scene
    b = scene.layout.by_id[f"L{layer}/stack.layer"]
    for fx in (0.5, 0.35, 0.65, 0.2, 0.8, 0.1, 0.9):
        at = _px(scene, (b.lo[0] + fx * (b.hi[0] - b.lo[0]), b.lo[1], b.center[2]))
        hit = scene.pick_at(at.x(), at.y())
        if hit is not None and hit.block_id == b.id:
            QTest.mouseClick(scene.gl, Qt.LeftButton, Qt.NoModifier, at)
            qtbot.waitUntil(lambda: win.state.layer == layer - 1 and scene.layout.layer == layer - 1, timeout=8000)
            return
    win.state.select_layer(layer - 1)  # the slab is out of sight at this framing: as the layer list does
    qtbot.waitUntil(lambda: scene.layout.layer == layer - 1, timeout=8000)


def _plate_point(scene, key) -> tuple:
    """A world point on the plate of `key` (its centre, just in front of it)."""
    lay = scene.layout
    units = scene.explanation.units
    boxes = effect_cells.head_boxes(lay, units) if key[0] == "head" else effect_cells.expert_boxes(lay, units)
    c = boxes[0][boxes[2].index(key)]
    return (float(c[0]), float(c[1]) - effect_cells.PLATE_D, float(c[2]))


def test_heads_and_experts_lit_by_their_total_effects(make_window, qtbot, tmp_path):
    win = make_window()
    wait_idle(qtbot, win)
    scene, dock = win.scene, win.docks["ExplainDock"]
    win.state.show_dock("ExplainDock", "")
    open_page(dock, "route")
    box = dock.show3d.units
    qtbot.waitUntil(box.isVisible, timeout=5000)
    shown = []
    win.state.explanation_shown.connect(lambda ov: shown.append(ov.units if ov is not None else None))
    QTest.mouseClick(box, Qt.LeftButton, Qt.NoModifier, QPoint(8, box.height() // 2))
    assert dock.show3d.units_on() and box.text() == "Heads and experts"  # no "&": a checkbox reads it as a mnemonic
    # at once, before the re-runs are done: the 3D view says so, and the UI thread stays free
    units = scene.explanation.units
    assert units is not None and units.computing
    assert "computing their total effects" in scene.overlay_input().explain_note
    open_page(dock, "answer")  # the route page's own causal map is not what this test waits for
    ticks = []
    wait_for(lambda: ticks.append(1) is None and scene.explanation is not None and scene.explanation.units.ready
             and not dock.busy, timeout_s=400, dock=dock)
    assert len(ticks) > 5  # the event loop ran while they were computed
    res = dock.result
    assert dock.units3d.thread not in (None, threading.get_ident())  # the "explain" lane's thread
    # the 3D view said "computing", then drew the heads (the quicker grid) while the experts were computed
    states = [("computing" if u.computing else "heads" if u.experts_computing else "whole")
              for u in shown if u is not None]
    assert states[0] == "computing" and states[-1] == "whole" and "heads" in states, states
    assert states.index("heads") < states.index("whole")
    units = scene.explanation.units
    note = scene.overlay_input().explain_note
    assert "total effect (head zeroed / expert removed)" in note and "direct" not in note
    assert scene.overlay_input().units_on

    from app import api

    trace = win.state.trace
    ex = api.explain("".join(p for p, _ in trace.tokens[:trace.prompt_len]), weights=trace.weights_name,
                     position=res.position)
    assert ex.word == res.word
    # the layer whose strongest head matters most: exploded by a click on its slab
    heads = np.asarray(units.heads)
    layer = int(np.nanargmax(np.nanmax(np.abs(heads), axis=1))) + 1
    if layer not in units.expert_layers:  # a dense layer has no expert grid: the strongest MoE layer's heads
        layer = max(units.expert_layers, key=lambda ly: np.nanmax(np.abs(heads[ly - 1])))
    _click_layer(qtbot, win, layer)
    qtbot.waitUntil(lambda: any(k[1] == layer for k in scene.explain_items.unit_keys), timeout=8000)
    items = scene.explain_items
    keys, rgba = items.unit_keys, items.unit_rgba

    # heads: the values, the signs of the colours and the most saturated lane, against the weights' re-run
    ref_h = _head_effects_by_weights(ex, layer)
    assert np.allclose(units.head_row(layer)[:len(ref_h)], ref_h, atol=1e-6), (units.head_row(layer), ref_h)
    hk = [i for i, k in enumerate(keys) if k[0] == "head"]
    assert [keys[i][2] for i in hk] == list(range(len(ref_h)))
    for i in hk:
        v = ref_h[keys[i][2]]
        if abs(v) > 1e-3:
            assert (rgba[i, 0] > rgba[i, 2]) == (v > 0), (keys[i], v, rgba[i])  # orange promotes, blue hurts
    sat = _saturation(rgba[hk])
    assert keys[hk[int(np.argmax(sat))]][2] == int(np.argmax(np.abs(ref_h)))

    # experts: those the router chose at the explained position, against Explanation.knockout
    ek = [i for i, k in enumerate(keys) if k[0] == "expert" and k[2] >= 0]
    routed = [keys[i][2] for i in ek]
    idx = np.asarray(ex.run.layers[layer - 1].tensors["moe.topk_idx"])[ex.position]
    assert sorted(routed) == sorted(int(e) for e in idx)
    ref_e = _expert_effects_by_knockout(ex, layer, routed)
    drawn = units.expert_row(layer)[0]
    for i in ek:
        e = keys[i][2]
        assert abs(drawn[e] - ref_e[e]) < 3e-3, (e, drawn[e], ref_e[e])  # float32 knock-out vs float64 re-run
        if abs(ref_e[e]) > 5e-3:
            assert (rgba[i, 0] > rgba[i, 2]) == (ref_e[e] > 0), (e, ref_e[e], rgba[i])
    order = sorted(routed, key=lambda e: -abs(ref_e[e]))
    sat_e = dict(zip(routed, _saturation(rgba[ek])))
    if abs(ref_e[order[0]]) - abs(ref_e[order[1]]) > 3e-3:
        assert max(sat_e, key=sat_e.get) == order[0]
    assert any(k == ("expert", layer, -1) for k in keys)  # the shared experts' block is lit too

    # the labels name the strongest head and the strongest routed expert with their effect
    qtbot.waitUntil(lambda: scene.camera.path is None, timeout=8000)
    pl = place_labels(scene.overlay_input(), scene.gl.width(), scene.gl.height())
    names = [lb.name for lb in pl.labels if lb.block_id.startswith("unit/")]
    top_h = int(np.argmax(np.abs(ref_h)))
    assert f"head {top_h + 1} {ref_h[top_h]:+.2f}" in names, names
    named = [float(n.split()[-1]) for n in names if n.startswith(f"expert {order[0]} ")]
    assert named and abs(named[0] - ref_e[order[0]]) < 6e-3, names  # float32 knock-out: the last digit may differ

    # on screen, framed as a double-click frames a block: the strongest head's lane and expert's plate in their
    # sign's hue (pixels of a frame)
    hb = effect_cells.head_block(scene.layout)
    for key, v, block in ((("head", layer, top_h), ref_h[top_h], hb.id),
                          (("expert", layer, order[0]), ref_e[order[0]], f"L{layer}/moe.experts")):
        scene.frame_block(block, animate=False)
        pump(100)
        img = _frame(scene)
        p = _px(scene, _plate_point(scene, key))
        px = img[p.y() - 1:p.y() + 2, p.x() - 1:p.x() + 2].reshape(-1, 3).mean(0)
        assert (px[0] > px[2] + 8) if v > 0 else (px[2] > px[0] + 8), (key, v, px)
        if key[0] == "head":  # hover: the tooltip names the number and the words, as compute's projection has them
            QTest.mouseMove(scene.gl, p)
            qtbot.waitUntil(lambda: "Total effect (head zeroed)" in scene.last_tooltip, timeout=5000)
            tip = scene.last_tooltip
            up, down = ex.head_words(layer, top_h, 3)
            assert (f"head {top_h + 1} · Total effect (head zeroed): {ref_h[top_h]:+.2f} of the margin — promotes"
                    in tip), tip
            for piece, _v in up + down:
                assert "'" + piece.replace("\n", "\\n") + "'" in tip, (piece, tip)
        else:  # a click on the strongest expert's cell selects that expert, as the expert grid's cells do
            QTest.mouseClick(scene.gl, Qt.LeftButton, Qt.NoModifier, p)
            qtbot.waitUntil(lambda: win.state.expert == order[0], timeout=5000)
            QTest.mouseMove(scene.gl, p + QPoint(0, 1))
            qtbot.waitUntil(lambda: "Total effect (expert removed)" in scene.last_tooltip, timeout=5000)
            tip = scene.last_tooltip
            assert f"expert {order[0]} · Total effect (expert removed): " in tip, tip
            value = float(tip.split("(expert removed): ")[1].split()[0])
            assert abs(value - ref_e[order[0]]) < 6e-3, tip

    # the exported PNG (File -> Export image's path) shows the lit lane as the screen does
    from app.export.image import ExportChoice, perform

    scene.frame_block(hb.id, animate=False)
    pump(100)
    path = str(tmp_path / "units.png")
    perform(ExportChoice("view", scene.gl.width(), scene.gl.height(), False, "file", path), scene, win)
    out = image_array(QImage(path))[..., :3].astype(int)
    p = _px(scene, _plate_point(scene, ("head", layer, top_h)))
    px = out[p.y() - 1:p.y() + 2, p.x() - 1:p.x() + 2].reshape(-1, 3).mean(0)
    assert (px[0] > px[2] + 20) if ref_h[top_h] > 0 else (px[2] > px[0] + 20), px

    # Korean: the hover text, the header and the legend note
    win.state.set_language("ko")
    pump(200)
    QTest.mouseMove(scene.gl, p + QPoint(1, 0))
    qtbot.waitUntil(lambda: "총효과(헤드를 0으로)" in scene.last_tooltip, timeout=5000)
    assert f"헤드 {top_h + 1}" in scene.last_tooltip
    assert "헤드·Expert를 총효과로 밝힘" in scene.overlay_input().explain_note
    assert dock.show3d.units.text() == "헤드·Expert"
    i18n.set_language("en")


def test_render_and_view_files_draw_the_lit_heads(qapp, tmp_path):
    """`app.api.render(explain="units")` (what `k3-explorer export --explain units` and a view file's
    explain3d.units draw) lights the exploded layer's heads: at the layer of the strongest head (compute's own
    head_effects), the picture gains pixels of that head's sign's hue; a view file keeps the choice."""
    from app import api
    from app.engine.explain_render import parse_parts, view_parts
    from app.files.viewfile import View, load, save

    prompt = "아이가 상자를 집었다. 그리고"
    ex = api.explain(prompt)
    he = np.asarray(ex.head_effects)
    li, h = np.unravel_index(np.nanargmax(np.abs(he)), he.shape)
    positive = he[li, h] > 0
    plain = api.render(prompt, layer=int(li) + 1, size=(1280, 720), labels=False).astype(int)
    lit = api.render(prompt, layer=int(li) + 1, size=(1280, 720), labels=False, explain="units").astype(int)
    r, b = lit[..., 0], lit[..., 2]
    hue = ((r > b + 80) if positive else (b > r + 80)) & (np.abs(lit - plain)[..., :3].sum(-1) > 60)
    assert hue.sum() > 150, hue.sum()  # the strongest lane, fully saturated, over the tensor it covers
    assert parse_parts("lens,units") == ("lens", "units")
    path = tmp_path / "u.k3view"
    save(View(prompt=prompt, explain3d={"lens": False, "arcs": False, "route": False, "route_threshold": 30,
                                        "position": None, "units": True}), str(path))
    assert view_parts(load(str(path)))[0] == ("units",)
