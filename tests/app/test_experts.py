"""ExpertGridDock in a real window: the grid shows the engine's trace, the bias slider drives the engine.

The engine runs synchronously here: state.knobs_requested -> ToyK3.run -> state.set_trace (what the app's
worker does in the background). Expected values are recomputed from the trace's raw tensors with numpy.
"""
import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QMainWindow, QStyle, QStyleOptionSlider

from app import i18n
from app.state import AppState
from gui_helpers import lit_cells

PROMPT = "로봇이 컵을 집었다. 그리고 컵을 테이블 위에"  # 13 toy pieces: token 10 is processed
NEW_TOKENS = 2


@pytest.fixture(scope="module")
def engine():
    from compute.engine import ToyK3

    return ToyK3(device="cpu")


@pytest.fixture(scope="module")
def base_trace(engine):
    return engine.run(PROMPT, max_new_tokens=NEW_TOKENS)


@pytest.fixture
def setup(qtbot, engine, base_trace):
    from app.docks.experts import ExpertGridDock

    i18n.set_language("en")
    state = AppState()
    runs = []

    def run(knobs):
        runs.append(knobs)
        state.set_trace(engine.run(state.prompt, max_new_tokens=NEW_TOKENS, knobs=knobs))

    state.knobs_requested.connect(run)
    state.prompt = PROMPT
    state.set_trace(base_trace)
    win = QMainWindow()
    dock = ExpertGridDock(state, win)
    win.addDockWidget(Qt.RightDockWidgetArea, dock)
    win.resize(1000, 950)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    yield state, dock, runs
    i18n.set_language("en")


def trace_selection(trace, token, layer):
    """(pass, row) lookup done independently of the dock's helpers."""
    for p in trace.passes:
        rows = np.nonzero(np.asarray(p.positions) == token)[0]
        if rows.size:
            t = p.layers[layer].tensors
            return t, int(rows[0])
    raise AssertionError("token not processed")


def lit_cells_from_pixels(grid) -> set[int]:
    """K3's 896 experts: those whose cell centre is gold in a grab of the widget."""
    return lit_cells(grid, 896)


@pytest.mark.parametrize("token,layer", [(0, 1), (2, 36), (5, 60), (10, 92)])
def test_lit_cells_equal_trace_selection(setup, qtbot, token, layer):
    state, dock, _ = setup
    state.select_layer(layer)
    state.select_token(token)
    t, row = trace_selection(state.trace, token, layer)
    expected = set(int(e) for e in t["moe.topk_idx"][row])
    assert len(expected) == 16
    qtbot.waitUntil(lambda: set(int(e) for e in dock.grid.selected()) == expected, timeout=5000)
    assert lit_cells_from_pixels(dock.grid) == expected
    # the dock's list of weights is the trace's (renormalised unbiased scores)
    s = np.asarray(t["moe.router"][row], dtype=np.float64)
    idx = np.asarray(t["moe.topk_idx"][row])
    np.testing.assert_allclose(t["moe.topk_weight"][row], s[idx] / s[idx].sum(), rtol=1e-5)
    text = dock.grid_tab.selected_list.text()
    for e in expected:
        w = float(t["moe.topk_weight"][row][list(idx).index(e)])
        assert f"E{e:<4d}{w:.3f}" in text


def test_dense_layer_says_so_and_shared_always_drawn(setup, qtbot):
    state, dock, _ = setup
    state.select_layer(0)
    qtbot.waitUntil(lambda: "dense" in dock.grid_tab.header.text().lower(), timeout=5000)
    assert not dock.grid.has_data()
    state.select_layer(5)
    qtbot.waitUntil(dock.grid.has_data, timeout=5000)
    img = dock.grid.grab().toImage()
    for i in range(2):
        c = img.pixelColor(dock.grid.shared_rect(i).topLeft() + QPoint(4, 4))
        assert c.red() > 180 and c.blue() < 120, "shared experts drawn in their orange, always on"


def test_click_selects_expert_and_hover_shows_numbers(setup, qtbot):
    state, dock, _ = setup
    state.select_layer(36)
    state.select_token(3)
    qtbot.waitUntil(lambda: dock.grid_tab.current is not None and dock.grid_tab.layer_spin.value() == 37, timeout=5000)
    got = []
    state.expert_selected.connect(got.append)
    qtbot.mouseClick(dock.grid, Qt.LeftButton, pos=dock.grid.cell_rect(300).center())
    assert got == [300] and state.expert == 300
    assert dock.grid_tab.expert_spin.value() == 300, "the bias experiment follows the selected expert"
    qtbot.mouseMove(dock.grid, dock.grid.cell_rect(421).center())
    qtbot.waitUntil(lambda: "Expert 421" in dock.grid_tab.hover.text(), timeout=2000)
    t, row = trace_selection(state.trace, 3, 36)
    s = float(t["moe.router"][row][421])
    assert f"{s:.4f}" in dock.grid_tab.hover.text()


def _handle_center(slider) -> QPoint:
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    return slider.style().subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderHandle, slider).center()


def _x_for_value(slider, value: int) -> int:
    """Pixel x of the handle centre for `value` (inverse of the style's own mapping)."""
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    groove = slider.style().subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderGroove, slider)
    handle = slider.style().subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderHandle, slider)
    span = groove.width() - handle.width()
    pos = QStyle.sliderPositionFromValue(slider.minimum(), slider.maximum(), value, span)
    return groove.x() + pos + handle.width() // 2


def _mouse(widget, kind, pos: QPoint, buttons):
    ev = QMouseEvent(kind, QPointF(pos), QPointF(widget.mapToGlobal(pos)), Qt.LeftButton, buttons, Qt.NoModifier)
    QApplication.sendEvent(widget, ev)


def test_bias_drag_pulls_expert_17_in_exactly_past_the_cutoff(setup, qtbot):
    state, dock, runs = setup
    tab = dock.grid_tab
    assert tab.expert_spin.value() == 17, "the seed's example expert is the default"
    base = state.trace
    # a (token, layer) where expert 17 is out with the trained bias
    layer, token = 36, 2
    t0, row0 = trace_selection(base, token, layer)
    assert 17 not in t0["moe.topk_idx"][row0]
    bias0 = np.asarray(t0["moe.bias"], dtype=np.float64).copy()
    state.select_layer(layer)
    state.select_token(token)
    qtbot.waitUntil(lambda: tab.current is not None and tab.layer_spin.value() == layer + 1, timeout=5000)
    slider = tab.slider
    s0 = np.asarray(t0["moe.router"][row0], dtype=np.float64)
    need = float(np.sort(np.delete(s0 + bias0, 17))[-16] - (s0[17] + bias0[17]))  # offset that reaches the cutoff
    assert 0.05 < need < 1.9, "the slider's range must be able to pull expert 17 in"
    targets = [need * 0.5, need - 0.03, need + 0.03, min(2.0, need + 0.5)]
    start = _handle_center(slider)
    _mouse(slider, QMouseEvent.MouseButtonPress, start, Qt.LeftButton)
    flips = []
    for target in targets:  # drag right through the cutoff: one engine run per position
        value = int(round(target * 100))
        pos = QPoint(_x_for_value(slider, value), start.y())
        _mouse(slider, QMouseEvent.MouseMove, pos, Qt.LeftButton)
        qtbot.waitUntil(lambda value=value: abs(slider.value() - value) <= 1, timeout=5000)  # the handle follows
        offset = slider.value() / 100.0
        assert state.trace.knobs.expert_bias.get(17, 0.0) == pytest.approx(offset), "the engine ran with that bias"
        t, row = trace_selection(state.trace, token, layer)
        s = np.asarray(t["moe.router"][row], dtype=np.float64)
        b = np.asarray(t["moe.bias"], dtype=np.float64)
        np.testing.assert_allclose(b[17], bias0[17] + offset, atol=1e-6)  # trained bias + knob, nothing else
        np.testing.assert_allclose(np.delete(b, 17), np.delete(bias0, 17), atol=0)
        biased = s + b
        cutoff = np.sort(np.delete(biased, 17))[-16]  # 16th best among the other 895
        inside = 17 in t["moe.topk_idx"][row]
        assert inside == (biased[17] > cutoff), f"offset {offset}: selection must follow s+b vs cutoff"
        assert (17 in dock.grid.selected()) == inside
        assert f"{cutoff:.4f}" in tab.why.text() and f"{biased[17]:.4f}" in tab.why.text(), "the numbers say why"
        # weights stay the unbiased sigmoid scores, renormalised
        idx = np.asarray(t["moe.topk_idx"][row])
        np.testing.assert_allclose(t["moe.topk_weight"][row], s[idx] / s[idx].sum(), rtol=1e-5)
        flips.append(inside)
    _mouse(slider, QMouseEvent.MouseButtonRelease, pos, Qt.NoButton)
    assert flips[0] is False and flips[-1] is True, f"expert 17 must be pulled in by the drag: {flips}"
    assert "selected" in tab.why.text() and "not selected" not in tab.why.text()
    assert len(runs) == len(targets)
    # downstream: the layer's output and the final logits changed
    t_new, row_new = trace_selection(state.trace, token, layer)
    assert not np.allclose(t_new["moe.up"][row_new], t0["moe.up"][row0])
    assert not np.allclose(state.trace.passes[0].final["lm_head"], base.passes[0].final["lm_head"])
    # reset button sends the bias back to zero: selection as at the start
    qtbot.mouseClick(tab.reset_button, Qt.LeftButton)
    t_back, row_back = trace_selection(state.trace, token, layer)
    np.testing.assert_array_equal(t_back["moe.topk_idx"][row_back], t0["moe.topk_idx"][row0])
    assert 17 not in state.trace.knobs.expert_bias


def test_per_layer_heatmap_matches_trace_and_click_navigates(setup, qtbot):
    state, dock, _ = setup
    dock.show_tab("layers")
    tab = dock.layers_tab
    tab.expert.setValue(17)
    tab.mode.setCurrentIndex(0)
    qtbot.waitUntil(lambda: tab.matrix() is not None, timeout=5000)
    m = tab.matrix()
    tr_ = state.trace
    positions = [int(p) for ps in tr_.passes for p in ps.positions]
    moe = [l for l in range(tr_.n_layers) if tr_.passes[0].layers[l].ffn == "moe"]
    assert m.shape == (len(positions), 92) and len(moe) == 92
    for r, pos in enumerate(positions):
        for c, layer in enumerate(moe):
            t, row = trace_selection(tr_, pos, layer)
            hit = np.nonzero(np.asarray(t["moe.topk_idx"][row]) == 17)[0]
            want = float(t["moe.topk_weight"][row][hit[0]]) if hit.size else 0.0
            assert m[r, c] == pytest.approx(want)
    # overlap mode: the current token's row is all ones
    state.select_token(4)
    tab.mode.setCurrentIndex(1)
    qtbot.waitUntil(lambda: (m := tab.matrix()) is not None and np.allclose(m[positions.index(4)], 1.0), timeout=5000)
    ov = tab.matrix()
    assert ov.min() < 1.0
    # click on the cell of (row 1, MoE column 10) → token positions[1], layer moe[10]
    view = tab.heat

    def laid_out():  # the heatmap is on screen at its size: every cell at least 2 px wide and tall
        shown = view.mapFromScene(tab.image.sceneBoundingRect()).boundingRect()
        return shown.width() >= 2 * ov.shape[1] and shown.height() >= 2 * ov.shape[0] and \
            view.viewport().rect().contains(shown.center())

    qtbot.waitUntil(laid_out, timeout=5000)
    scene_pt = tab.image.mapToScene(QPointF(10.5, 1.5))
    pt = view.mapFromScene(scene_pt)
    qtbot.mouseClick(view.viewport(), Qt.LeftButton, pos=pt)
    assert state.token == positions[1] and state.layer == moe[10]


def test_qb_tab_buttons_balance_the_skewed_router(setup, qtbot):
    state, dock, _ = setup
    dock.show_tab("qb")
    qtbot.waitUntil(lambda: dock.qb_tab.sim is not None, timeout=5000)
    sim = dock.qb_tab.sim
    assert sim.before.max_over_ideal > 4
    for _ in range(5):
        qtbot.mouseClick(dock.qb_tab.update_button, Qt.LeftButton)
    assert len(sim.history) == 6 and sim.current.max_over_ideal < 1.2
    assert f"{sim.current.max_over_ideal:.3f}" in dock.qb_tab.numbers.text()
    # the play timer runs only while the tab is visible
    qtbot.mouseClick(dock.qb_tab.play_button, Qt.LeftButton)
    assert dock.qb_tab.timer.isActive()
    dock.show_tab("grid")
    assert not dock.qb_tab.timer.isActive()


def test_qb_play_stops_by_itself_where_the_balance_levels_off(setup, qtbot):
    """The default batch never gets under 1.02 (whole tokens): Play used to run for ever. It stops once five
    updates have not improved the balance and says at what max-load/ideal it levelled off, in both languages."""
    state, dock, _ = setup
    dock.show_tab("qb")
    tab = dock.qb_tab
    qtbot.waitUntil(lambda: tab.sim is not None, timeout=5000)
    qtbot.mouseClick(tab.reset_button, Qt.LeftButton)
    tab.timer.setInterval(20)  # the pace is not under test
    try:
        qtbot.mouseClick(tab.play_button, Qt.LeftButton)
        assert tab.play_button.isChecked() and tab.verdict.text() == ""
        qtbot.waitUntil(lambda: not tab.play_button.isChecked(), timeout=20000)
        assert not tab.timer.isActive()
        curve = [r.max_over_ideal for r in tab.sim.history]
        best = min(curve[1:])
        assert best > 1.02 and min(curve[-5:]) > best - 1e-3 and len(curve) < 40
        text = tab.verdict.text()
        assert "levelled off" in text and f"{best:.3f}" in text and "1.02" in text, text
        i18n.set_language("ko")
        tab.retranslate()
        assert f"{best:.3f}" in tab.verdict.text() and "멈춤" in tab.verdict.text()
    finally:
        i18n.set_language("en")
        tab.timer.setInterval(700)
        tab.retranslate()


def test_latent_numbers_hand_computed(setup):
    from app.docks.experts.latent import all_to_all_bytes

    assert all_to_all_bytes(3584, 16) == 16 * 3584 * 2 == 114688
    assert all_to_all_bytes(7168, 16) == 229376
    assert all_to_all_bytes(7168, 8) == 114688  # Kimi K2: 8 experts at full width cost the same
    _, dock, _ = setup
    text = dock.latent_tab.numbers.text()
    for s in ("114,688", "229,376", "3,584", "7,168"):
        assert s in text


def test_korean_everywhere_no_missing_keys(setup, qtbot):
    state, dock, _ = setup
    i18n.set_language("ko")
    qtbot.waitUntil(lambda: dock.tabs.tabText(0) == i18n.tr("experts.tab.grid", lang="ko"), timeout=5000)
    assert "층" in dock.grid_tab.header.text()
    for w in dock.findChildren(type(dock.grid_tab.header)):
        assert "[experts." not in w.text()
    en = i18n.table("en")
    ko = i18n.table("ko")
    mine = {k for k in en if k.startswith("experts.")}
    assert mine == {k for k in ko if k.startswith("experts.")}


def test_grid_widget_standalone_contract(qtbot):
    """The reusable widget on its own: set_scores, lit colours, hover text, signals, a clear error."""
    from app.widgets.expert_grid import ExpertGridWidget

    g = ExpertGridWidget()
    qtbot.addWidget(g)
    g.resize(640, 520)
    g.show()
    qtbot.waitExposed(g)
    rng = np.random.default_rng(0)
    s = rng.uniform(0.2, 0.8, 896)
    b = np.zeros(896)
    b[5] = 0.5
    sel = np.argsort(-(s + b))[:16]
    w = s[sel] / s[sel].sum()
    g.set_scores(s, b, sel, w)
    assert lit_cells_from_pixels(g) == set(int(e) for e in sel)
    text = g.hover_text(5)
    assert "Expert 5" in text and f"{s[5]:.4f}" in text and "+0.5000" in text and "rank 1 of 896" in text
    with qtbot.waitSignal(g.expert_clicked) as sig:
        qtbot.mouseClick(g, Qt.LeftButton, pos=g.cell_rect(700).center())
    assert sig.args == [700]
    with qtbot.waitSignal(g.expert_hovered) as sig:
        qtbot.mouseMove(g, g.cell_rect(33).center())
    assert sig.args == [33]
    with pytest.raises(ValueError, match="inconsistent"):
        g.set_scores(s, b[:10], sel, w)
    # another model's router (DeepSeek-V3 / Kimi Linear: 256 experts): the grid reshapes to 16 × 16
    s256 = rng.uniform(0.2, 0.8, 256)
    sel256 = np.argsort(-s256)[:8]
    g.set_scores(s256, None, sel256, s256[sel256] / s256[sel256].sum())
    assert g.n_experts() == 256 and lit_cells(g, 256) == set(int(e) for e in sel256)


def test_no_trace_yet_says_so_and_slider_still_requests(qtbot):
    from app.docks.experts import ExpertGridDock

    state = AppState()
    win = QMainWindow()
    dock = ExpertGridDock(state, win)
    win.addDockWidget(Qt.RightDockWidgetArea, dock)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    assert not dock.grid.has_data()
    assert "trace" in dock.grid_tab.header.text().lower()
    asked = []
    state.knobs_requested.connect(asked.append)
    dock.grid_tab.slider.setFocus()
    qtbot.keyClick(dock.grid_tab.slider, Qt.Key_PageUp)
    assert asked and asked[-1].expert_bias == {17: pytest.approx(0.10)}
    assert "No router" in dock.grid_tab.why.text()
    state.request_knobs(expert_bias={17: 0.5, 3: -0.2})  # e.g. restored settings or another dock
    assert dock.grid_tab.slider.value() == 50
    dock.grid_tab.expert_spin.setValue(3)
    assert dock.grid_tab.slider.value() == -20 and state.expert == 3


def test_local_layer_and_token_pickers_drive_the_app_selection(setup, qtbot):
    state, dock, _ = setup
    tab = dock.grid_tab
    tab.layer_spin.setFocus()
    tab.layer_spin.selectAll()
    qtbot.keyClicks(tab.layer_spin, "12")
    qtbot.keyClick(tab.layer_spin, Qt.Key_Return)
    assert state.layer == 11
    tab.token_combo.setFocus()
    start = state.token
    qtbot.keyClick(tab.token_combo, Qt.Key_Down)
    assert state.token == start + 1
    t, row = trace_selection(state.trace, state.token, 11)
    assert set(int(e) for e in dock.grid.selected()) == set(int(e) for e in t["moe.topk_idx"][row])
    state.select_layer(50)  # and the other way round
    assert tab.layer_spin.value() == 51


def test_a_covered_dock_tab_defers_its_refresh_until_raised(qtbot, engine, base_trace):
    """Qt keeps a covered dock tab 'visible'; the grid must still skip work there and catch up when raised."""
    from PySide6.QtWidgets import QDockWidget, QLabel

    from app.docks.experts import ExpertGridDock

    i18n.set_language("en")
    state = AppState()
    state.prompt = PROMPT
    state.set_trace(base_trace)
    win = QMainWindow()
    dock = ExpertGridDock(state, win)
    other = QDockWidget("other", win)
    other.setObjectName("other")
    other.setWidget(QLabel("covers the expert dock"))
    win.addDockWidget(Qt.RightDockWidgetArea, dock)
    win.addDockWidget(Qt.RightDockWidgetArea, other)
    win.tabifyDockWidget(dock, other)
    win.resize(1000, 950)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    other.raise_()
    qtbot.waitUntil(lambda: dock.visibleRegion().isEmpty(), timeout=3000)
    assert dock.isVisible()  # Qt's behaviour that the deferral has to see through
    shown = dock.grid_tab.current
    state.select_layer(60)
    state.select_token(3)
    qtbot.waitUntil(lambda: dock.grid_tab._dirty, timeout=3000)  # the refresh came and was postponed
    assert dock.grid_tab.current is shown  # covered: nothing recomputed
    dock.raise_()
    t, row = trace_selection(state.trace, 3, 60)
    expected = set(int(e) for e in t["moe.topk_idx"][row])
    qtbot.waitUntil(lambda: set(int(e) for e in dock.grid.selected()) == expected, timeout=3000)
    qtbot.waitUntil(lambda: lit_cells_from_pixels(dock.grid) == expected, timeout=3000)
