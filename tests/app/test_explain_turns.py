"""A new explanation is drawn over several event-loop turns (issue 44.5): the input and the timers that fall due
while the dock draws run between its parts, instead of waiting for the whole drawing (on Kimi Linear ~25 ms of
UI-thread work per result, in the Korean soak one 117.7-ms gap). `busy` holds until the last part is drawn, and
what is drawn is the whole result."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest

from test_explain_dock import dock, wait_for  # noqa: F401 - the dock fixture


@pytest.mark.alone  # the order of the parts and a timer due meanwhile, in real time
def test_a_due_timer_runs_between_the_parts_of_a_new_result(dock):
    log = []
    seen = {}
    timer = QTimer()
    timer.setSingleShot(True)
    timer.setInterval(0)
    timer.timeout.connect(lambda: log.append("timer"))

    def arrived(_serial, res):  # connected after the dock's own slot: runs right after it
        seen["busy"], seen["drawn"] = dock.busy, dock.sources.rowCount()
        log.append("arrived")
        timer.start()  # falls due at once: the heartbeat / a key press as the dock draws

    dock.jobs.done.connect(arrived)
    dock.state.explanation_shown.connect(lambda _ov: log.append("3d"))  # the 3D view's part (the last)
    dock.position.setFocus()
    QTest.keyClick(dock.position, Qt.Key_Up)  # another position: a new result
    wait_for(lambda: "arrived" in log and not dock.busy)
    assert seen["busy"], "the dock said it was idle with parts of the result left to draw"
    assert seen["drawn"] == 7  # the answer page's part comes with the result itself
    assert log.count("3d") == 1 and log.index("arrived") < log.index("timer") < log.index("3d"), log
    # the whole result is drawn: every page and the 3D view
    res = dock.result
    assert res.position == 6 and dock.sources.rowCount() == 7 and dock.blocks.rowCount() == len(res.blocks)
    assert log[-1] == "3d"

