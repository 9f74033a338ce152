"""Trained and random weights side by side in the Explain dock (issue 21 I6), with real clicks: the other weights'
explanation of the same tokens (compute.explain's own word and lens), both lens curves in one plot, the summary
columns, the other attention overview on screen (pixels), Korean headers."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from app import api, i18n
from app.docks.explain.dock import lens_series
from gui_helpers import image_array
from test_explain_dock import PROMPT, dock, wait_for  # noqa: F401 - the dock fixture


def test_side_by_side_with_random_weights(dock):
    side = dock.side
    assert not side.table.isVisible() and dock.result.other is None
    assert "random weights" in side.box.text()
    QTest.mouseClick(side.box, Qt.LeftButton, Qt.NoModifier, QPoint(8, side.box.height() // 2))
    wait_for(lambda: dock.result.other is not None and not dock.busy, dock=dock)
    res, other = dock.result, dock.result.other
    assert res.weights == "trained" and other.weights == "random" and other.position == res.position
    ref = api.explain(PROMPT, weights="random", position=res.position)
    assert other.word == ref.word and other.lens_rank == ref.lens_rank(ref.word)
    x, prob, _rank = lens_series(other)
    xs, ys = side.curve_prob.getData()
    assert np.allclose(xs, x) and np.allclose(ys, prob)
    assert side.table.isVisible() and side.att_plot.isVisible()
    assert side.table.item(0, 0).text().startswith("' 상자'") and side.table.item(0, 1).text().startswith(
        "'" + other.word.replace("\n", "\\n") + "'")
    assert side.table.horizontalHeaderItem(0).text() == "trained weights"
    assert side.table.horizontalHeaderItem(1).text() == "random weights"
    dock.resize(560, 2600)
    img = image_array(side.att_plot.grab().toImage()).astype(int)
    coloured = (np.abs(img[..., 0] - img[..., 2]) > 60).sum()
    assert coloured > 200  # the other weights' overview is drawn (orange / blue cells)
    i18n.set_language("ko")
    dock.state.language_changed.emit("ko")
    assert "무작위 가중치" in side.box.text() and side.table.horizontalHeaderItem(1).text() == "무작위 가중치"
    i18n.set_language("en")
    dock.state.language_changed.emit("en")
    QTest.mouseClick(side.box, Qt.LeftButton, Qt.NoModifier, QPoint(8, side.box.height() // 2))
    wait_for(lambda: dock.result.other is None and not dock.busy, dock=dock)
    assert not side.table.isVisible() and len(side.curve_prob.getData()[0] or []) == 0
