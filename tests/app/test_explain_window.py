"""The Explain dock in the real main window: a late tab that computes only once shown, off the UI thread, and
explains what the engine predicts."""
from __future__ import annotations

import threading
import time

import numpy as np

from gui_helpers import pump


def test_explain_dock_in_the_window(make_window):
    win = make_window()
    dock = win.docks["ExplainDock"]
    assert dock.windowTitle() == "Why this word"
    # the 3D view's lens column is on by default: the explanation is computed though the tab is covered
    assert dock.show3d.values()[0] and win.scene.explanation is not None
    assert win.scene.explanation.word == dock.result.word
    toggle = dock.toggleViewAction()
    assert toggle.text() == "Why this word"
    win.state.show_dock("ExplainDock", "")
    end = time.monotonic() + 120
    while (dock.result is None or dock.busy) and time.monotonic() < end:
        pump(30)
    res = dock.result
    assert res is not None, dock.status.text()
    trace = win.state.trace
    logits = trace.passes[0].final["lm_head"][-1]
    assert res.word == trace.vocab[int(np.argmax(logits))][0]
    assert res.position == trace.prompt_len - 1 and len(res.lens_prob) == 94
    assert res.extra["thread"] != threading.main_thread().ident
    assert abs(res.lens_prob[-1] - float(np.exp(logits - logits.max()).max() / np.exp(logits - logits.max()).sum())) < 1e-4


def test_with_the_3d_view_off_a_covered_dock_computes_nothing(make_window, qtbot):
    win = make_window()
    dock = win.docks["ExplainDock"]
    dock.show3d.set_values(False, False, 30, False)
    qtbot.waitUntil(lambda: win.scene.explanation is None, timeout=5000)
    if dock.visibleRegion().isEmpty():  # covered by another tab (the default layouts)
        serial = dock._serial
        win.state.request_prompt("아이가 공을 집었다. 그리고")
        qtbot.waitUntil(lambda: win.state.trace is not None and "공" in win.state.trace.text, timeout=60000)
        qtbot.waitUntil(lambda: not dock.busy, timeout=10000)  # any pause (DEBOUNCE_MS) over, nothing asked
        assert dock._serial == serial and win.scene.explanation is None



def _layer_key(win, qtbot, key) -> int:
    """A layer picked as a person picks it (PageUp / PageDown over the 3D view); the new 0-based layer."""
    from PySide6.QtTest import QTest

    layer = win.state.layer
    win.scene.gl.setFocus()
    QTest.keyClick(win.scene.gl, key)
    qtbot.waitUntil(lambda: win.state.layer != layer, timeout=5000)
    return win.state.layer


def test_a_covered_dock_fills_its_rows_when_raised_not_on_every_change(make_window, qtbot):
    """Covered by another tab, the dock leaves its widgets alone on a layer change and on a new result (the
    3D view gets the result at once); raised, it shows that result and the layer picked last."""
    from PySide6.QtCore import Qt

    from app.docks.explain.dock import piece_text

    win = make_window()
    dock = win.docks["ExplainDock"]
    assert dock.visibleRegion().isEmpty(), "the default layout covers the Explain tab"
    shown = []
    real_attention = dock.attention.show
    dock.attention.show = lambda res: shown.append(res) or real_attention(res)
    _layer_key(win, qtbot, Qt.Key_PageDown)
    _layer_key(win, qtbot, Qt.Key_PageDown)
    old, header = dock.result, dock.header.text()
    win.state.request_prompt("아이가 공을 집었다. 그리고")  # a new explanation while covered
    qtbot.waitUntil(lambda: dock.result is not old and dock.result is not None and not dock.busy, timeout=90000)
    assert shown == [], "a covered dock laid out its attention rows"
    assert win.scene.explanation is not None and win.scene.explanation.word == dock.result.word  # the 3D view's
    assert dock.header.text() == header  # the dock's own rows wait
    win.state.show_dock("ExplainDock")
    qtbot.waitUntil(lambda: bool(shown), timeout=5000)
    res = dock.result
    assert shown[-1] is res
    assert dock.att_layer.text().startswith(f"Layer {win.state.layer + 1} (")
    assert piece_text(res.word) in dock.header.text() and dock.header.text() != header
    # covered again: a layer picked meanwhile is the one shown when the tab comes back
    win.state.show_dock("TracePlayerDock")
    qtbot.waitUntil(lambda: dock.visibleRegion().isEmpty(), timeout=5000)
    n = len(shown)
    picked = _layer_key(win, qtbot, Qt.Key_PageUp)
    assert len(shown) == n
    win.state.show_dock("ExplainDock")
    qtbot.waitUntil(lambda: len(shown) > n, timeout=5000)
    assert dock.att_layer.text().startswith(f"Layer {picked + 1} (")


def test_a_window_built_without_explanations_computes_none(make_window, qtbot):
    """MainWindow(explain=False), the suite's windows that never look at the explanation: the dock exists, with
    the 3D view's lens column on and the dock shown, yet no explanation is asked for, drawn or pending."""
    from app.docks.explain.dock import DEBOUNCE_MS

    win = make_window(explain=False)
    dock = win.docks["ExplainDock"]
    assert not dock.auto and dock.show3d.values()[0]
    win.state.show_dock("ExplainDock", "")
    win.state.request_prompt(win.state.prompt + " a")
    qtbot.waitUntil(lambda: not win.engine.busy and win.engine._pending is None, timeout=90000)
    pump(3 * DEBOUNCE_MS)
    assert dock.result is None and not dock.busy and win.scene.explanation is None
    assert not dock.jobs.busy() and dock.status.text() == ""
