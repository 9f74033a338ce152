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
    if not dock.isVisible() or dock.visibleRegion().isEmpty():
        assert dock._serial == 0 and dock.result is None  # hidden behind a tab: nothing computed
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
