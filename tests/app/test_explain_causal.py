"""The causal route as the Explain dock and the 3D view show it (issue 39.2 / 39.4): the route page asks for
the causal part off the UI thread, draws the residual patching grid as a layer × position map (compute's own
numbers) with "readable from" beside "decided at", and the 3D stack gets the same grid as token lanes on its
slabs; the causal route's blocks are those compute.explain's causal_route names, "spread out" when none
reaches the threshold; direct effects stay selectable, named "not causal". Real clicks, pixels, both languages."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from app import api, i18n
from app.engine.explain_service import overlay_of
from gui_helpers import image_array
from test_explain_dock import PROMPT, dock, open_page, wait_for  # noqa: F401 - the dock fixture


def test_route_page_draws_the_patching_map(dock):
    open_page(dock, "route")  # the page asks for the causal part
    wait_for(lambda: dock.result.causal and not dock.busy, timeout_s=400, dock=dock)
    res = dock.result
    ex = api.explain(PROMPT, position=res.position)
    ref = ex.patch()
    assert np.allclose(dock.patch_map.scores, ref.scores, atol=1e-6)
    assert dock.patch_map.plot.isVisible()
    img = image_array(dock.patch_map.plot.grab().toImage()).astype(int)
    amber = ((img[..., 0] > 180) & (img[..., 1] > 120) & (img[..., 2] < 110)).sum()
    assert amber > 100  # restored cells drawn (the mention's lane, the last position's upper rows)
    assert f"decided at layer {ref.decided_at()}" in dock.patch_map.decided.text()
    assert "Readable from layer" in dock.patch_map.decided.text()
    assert ref.corrupted in dock.patch_map.note.text()
    eff = ex.causal_route(0.3).effects
    assert res.causal["effects"].keys() == eff.keys()
    assert max(abs(res.causal["effects"][k] - eff[k]) for k in eff) < 1e-6
    # the overlay: causal by default, lit blocks = compute.explain's causal_route at the threshold, lanes = the grid
    ov = overlay_of(res, False, True, 5)
    assert ov.route_kind == "causal" and set(ov.lit) == set(ex.causal_route(0.05).blocks)
    assert np.allclose(np.array(ov.lanes), ref.scores)
    ov_direct = overlay_of(res, False, True, 30, kind="direct")
    assert ov_direct.route_kind == "direct" and not ov_direct.lanes
    i18n.set_language("ko")
    dock.state.language_changed.emit("ko")
    assert "층에서 결정됨" in dock.patch_map.decided.text() and dock.show3d.kind.itemText(1) == "직접 효과(인과 아님)"


def test_the_route_kind_box_switches_to_direct_effects(dock):
    open_page(dock, "route")
    QTest.mouseClick(dock.show3d.route, Qt.LeftButton, Qt.NoModifier, QPoint(8, dock.show3d.route.height() // 2))
    wait_for(lambda: dock.result.causal and not dock.busy, timeout_s=400, dock=dock)
    got = []
    dock.state.explanation_shown.connect(got.append)
    dock.show3d.kind.setFocus()
    QTest.keyClick(dock.show3d.kind, Qt.Key_Down)  # the combo box's next entry: direct effects (not causal)
    assert dock.show3d.route_kind() == "direct" and got and got[-1].route_kind == "direct"
    assert "% of the largest block" in dock.show3d.threshold_label.text()
    from scene.explain_overlay import header_note
    from app.i18n import tr
    assert "direct effects (not causal)" in header_note(got[-1], tr)
    QTest.keyClick(dock.show3d.kind, Qt.Key_Up)
    assert got[-1].route_kind == "causal" and "largest effect" in header_note(got[-1], tr)


def test_the_lit_blocks_are_the_causal_route(dock):
    """Issue 39.2: the 3D view lights, the header counts and the Route page names exactly the blocks
    compute.explain's causal_route(threshold) returns (an Explanation of its own, not the dock's result), at
    every threshold the slider is moved to with the keyboard — or says "spread out" where that route is empty;
    the slider's tooltip names the causal measure."""
    from app.i18n import tr
    from scene.explain_overlay import header_note

    open_page(dock, "route")
    QTest.mouseClick(dock.show3d.route, Qt.LeftButton, Qt.NoModifier, QPoint(8, dock.show3d.route.height() // 2))
    wait_for(lambda: dock.result.causal and not dock.busy, timeout_s=400, dock=dock)
    ex = api.explain(PROMPT, position=dock.result.position)
    got = []
    dock.state.explanation_shown.connect(got.append)
    slider = dock.show3d.slider
    assert "knocked out" in slider.toolTip() and "changes the answer" in slider.toolTip()
    slider.setFocus()
    QTest.keyClick(slider, Qt.Key_Home)
    seen = set()
    for _ in range(11):  # 0 % (read as 1 %), 10 %, ... 100 %
        pct = max(slider.value(), 1)
        ov = got[-1]
        want = ex.causal_route(pct / 100)
        assert set(ov.lit) == set(want.blocks), (pct, sorted(ov.lit), want.blocks)
        note, line = header_note(ov, tr), dock.route_line.text()
        if want:
            assert f"{len(want)} block" in note
            tip = dock.route_line.toolTip()
            for i, (ly, pt, _e) in enumerate(want):  # every block in the tooltip, the strongest four on the line
                name = f"layer {ly} {'FFN' if pt == 'ffn' else 'mixer'}"
                assert name in tip and (name in line) == (i < 4), (pct, line, tip)
            assert (f"+{len(want) - 4} more" in line) == (len(want) > 4)
        else:
            assert "spread out" in note and "spread out" in line
        seen.add(bool(want))
        QTest.keyClick(slider, Qt.Key_PageUp)
    assert seen == {True, False}, "the thresholds walked should give a route and a spread-out one"


def test_the_stack_shows_the_causal_lanes_and_a_knockout(make_window, qtbot):
    """In the real window: the causal route on draws one lane per (layer, position) on the slabs, lit where
    patching restores the answer; a knock-out crosses its block out and the 3D header says before -> after."""
    import os
    import tempfile

    from tests.app.test_explain_3d import _frame, _px, _result, _settle
    from gui_helpers import wait_idle

    win = make_window()
    wait_idle(qtbot, win)
    dock, _ = _result(win)
    scene = win.scene
    win.state.show_dock("ExplainDock", "")
    open_page(dock, "route")
    before = _frame(scene).astype(int)
    QTest.mouseClick(dock.show3d.route, Qt.LeftButton, Qt.NoModifier, QPoint(8, dock.show3d.route.height() // 2))
    wait_for(lambda: dock.result.causal and not dock.busy and scene.explanation is not None
             and scene.explanation.lanes, timeout_s=400, dock=dock)
    items = scene.explain_items
    grid = np.array(scene.explanation.lanes)
    assert len(items.lane_keys) == grid.size and items.lanes.visible()
    _settle(qtbot, scene)
    after = _frame(scene).astype(int)
    shots = os.path.join(tempfile.gettempdir(), "k3_explain_fit")
    os.makedirs(shots, exist_ok=True)
    win.grab().save(os.path.join(shots, "causal_route_window.png"))
    from PIL import Image
    Image.fromarray(after.astype(np.uint8)).save(os.path.join(shots, "causal_route_frame.png"))
    # the brightest lane of the top layer: amber on screen where it was not before
    top_row = len(grid) - 1
    t = int(np.argmax(grid[top_row]))
    b = scene.layout.by_id[f"L{top_row}/stack.layer"]
    T = grid.shape[1]
    x = b.lo[0] + (t + 0.5) * (b.hi[0] - b.lo[0]) / T
    px, py = _px(scene, (x, b.lo[1] - 0.04, b.center[2]))
    box = (slice(max(py - 3, 0), py + 4), slice(max(px - 3, 0), px + 4))
    amber = lambda img: ((img[..., 0] > 150) & (img[..., 1] > 100) & (img[..., 2] < 110)).sum()  # noqa: E731
    assert amber(after[box]) > amber(before[box]), (px, py)
    assert "answer's margin" in scene.overlay_input().explain_note or "spread out" in scene.overlay_input().explain_note
    # a knock-out: crossed out in 3D, before -> after in the header
    layer = 3
    dock.add_knockout(("block", layer, "mixer"), "zero")
    wait_for(lambda: dock.result.knockout is not None and not dock.busy and scene.explanation is not None
             and scene.explanation.knockout, timeout_s=400, dock=dock)
    assert dock.pages.currentIndex() == 5 and dock.ko_label.isVisible()  # the Experiments page, result on top
    assert items.crossed.visible()
    note = scene.overlay_input().explain_note
    assert "knock-out (zero ablation)" in note and "→" in note
    win.grab().save(os.path.join(shots, "knockout_window.png"))
    # a token knocked out too: its chip in the trace player is struck through, the others are not
    dock.add_knockout(("token", 2), "zero")
    chips = win.docks["TracePlayerDock"].tokens_label.text().split("<a href='tok:")
    struck = [c.split("'")[0] for c in chips[1:] if "line-through" in c]
    assert struck == ["2"], struck
    wait_for(lambda: dock.result.knockout is not None and len(dock.result.knockout["items"]) == 2
             and not dock.busy, timeout_s=400, dock=dock)
    assert len(scene.explanation.knockout) == 2


def _margin(logits, a: int) -> float:
    lg = np.asarray(logits, np.float64)
    return float(lg[a] - np.delete(lg, a).max())


def test_heads_and_experts_tables(dock):
    """Issue 39.5: the Route page's view box (keyboard) shows the heads' and then the experts' total effects, the
    largest first, each number named in its header (head zeroed / expert removed) and in the note; the rows are
    compute.explain's head_effects / expert_effects, and the top expert's effect is checked against the engine's
    own knock-out of that expert (the drop of the answer's margin, recomputed here); Korean headers after a switch."""
    open_page(dock, "route")
    view = dock.effects_view.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key_Down)  # heads
    assert dock.effects_view.current() == "heads" and dock.effects_view.heads.isVisible()
    wait_for(lambda: "heads" in dock.result.effects and not dock.busy, timeout_s=600, dock=dock)
    ex = api.explain(PROMPT, position=dock.result.position)
    he = np.asarray(ex.head_effects)
    want = sorted(((li + 1, h, he[li, h]) for li in range(he.shape[0]) for h in range(he.shape[1])
                   if np.isfinite(he[li, h])), key=lambda r: -abs(r[2]))[:10]
    t = dock.effects_view.heads
    assert t.rowCount() == len(want) == 10
    for r, (ly, h, e) in enumerate(want):
        assert t.item(r, 0).text() == str(ly) and t.item(r, 1).text().endswith(f"head {h + 1}")
        assert t.item(r, 2).text() == f"{100 * e:+.0f} %"
        assert t.item(r, 3).text().startswith("+'") and " −'" in t.item(r, 3).text()
        assert t.item(r, 3).toolTip().count("'") >= 12  # three words each way in its tooltip
    assert "Total effect" in t.horizontalHeaderItem(2).toolTip() and "zeroed" in t.horizontalHeaderItem(2).toolTip()
    assert "Total effect" in dock.effects_view.note.text() and "Total effect = " in dock.effects_view.note.toolTip()
    QTest.keyClick(view, Qt.Key_Down)  # experts
    assert dock.effects_view.current() == "experts"
    wait_for(lambda: "experts" in dock.result.effects and not dock.busy, timeout_s=900, dock=dock)
    t = dock.effects_view.experts
    rows = dock.result.effects["experts"]
    assert t.rowCount() == len(rows) > 0
    assert all(abs(rows[i][2]) >= abs(rows[i + 1][2]) for i in range(len(rows) - 1))
    assert "removed" in t.horizontalHeaderItem(2).toolTip()
    layer, e, eff = next((ly, e, v) for ly, e, v, _u, _d in rows if e >= 0)  # the strongest routed expert
    a = ex.word_index
    after = ex.knockout(experts=[(layer, e)])
    drop = (_margin(ex.logits, a) - _margin(after.logits, a)) / _margin(ex.logits, a)
    assert abs(drop - eff) < 0.02, (layer, e, eff, drop)
    r = next(i for i, row in enumerate(rows) if row[:2] == (layer, e))
    assert t.item(r, 1).text() == f"expert {e}" and t.item(r, 2).text() == f"{100 * eff:+.0f} %"
    i18n.set_language("ko")
    dock.state.language_changed.emit("ko")
    assert "전체 효과" in t.horizontalHeaderItem(2).toolTip() and "Expert" in view.currentText()
    i18n.set_language("en")
    dock.state.language_changed.emit("en")
    QTest.keyClick(view, Qt.Key_Home)  # back to the patching map
    assert dock.effects_view.current() == "patching" and dock.patch_map.isVisible()
