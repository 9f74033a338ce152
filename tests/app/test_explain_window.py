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
