"""The Explain dock's attention part reads like BertViz (issue 40.3): the chosen layer's head view — the tokens
down both sides, a line per head in that head's colour (the 3D arcs' colours) from the explained token to every
token it reads, the heads named in colour keys — and an overview whose axes name the layers, the tokens read and,
per head, the heads (before: "position 0 … 15" for 2 heads x 8 positions). Checked against compute.explain's own
float64 attention, and on the widget's pixels."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, Qt

from app.docks.explain.head_view import MIN_SHOWN
from app.widgets.paint import head_qcolor
from compute.explain import Explanation
from gui_helpers import flush_layouts, image_array
from tests.app.test_explain_dock import PROMPT, dock, open_page, wait_for  # noqa: F401 - the fixture


def _ticks(axis) -> list[str]:
    return [t for level in (axis._tickLevels or []) for _v, t in level]


def test_head_view_and_named_axes(dock, qtbot):  # noqa: F811 - the fixture
    res = dock.result
    layer0 = dock.state.layer if dock.state.layer >= 0 else 0
    open_page(dock, "attention")  # the head view is on the Attention page (a tab of the dock's pages)
    dock.attention.show(res)
    flush_layouts()
    view = dock.att_head_view
    assert view.isVisible() and view.height() >= 100
    img = image_array(view.grab().toImage())[..., :3].astype(int)  # paints (and records) it
    ex = Explanation.of_prompt(dock.engine, PROMPT, res.position)
    A = ex.attention(layer0 + 1)[:, res.position, :]  # [H, T]: compute's own
    H = A.shape[0]
    assert H >= 2
    top = np.abs(A[:, :res.position + 1]).max()
    want = {(h, i) for h in range(H) for i in range(res.position + 1) if abs(A[h, i]) / top >= MIN_SHOWN}
    got = {(h, i) for h, i, _w in view.lines}
    assert got == want
    for h, i, w in view.lines:
        assert abs(w - A[h, i]) < 1e-6 * max(1.0, abs(A[h, i]))
    assert [name for _r, name in view.key_rects] == [f"head {h + 1}" for h in range(H)]
    for h in range(H):  # each head's colour is on the widget (its key and its lines)
        c = head_qcolor(h)
        d = np.abs(img - np.array([c.red(), c.green(), c.blue()])).sum(-1)
        assert (d < 40).sum() > 40, h
    # the overview's axes
    left, bottom = dock.att_plot.getAxis("left"), dock.att_plot.getAxis("bottom")
    L = len(res.attention)
    assert "1" in _ticks(left) and str(L) in _ticks(left) and left.labelText == "layer"
    pieces = [p.strip() for p in res.pieces[:A.shape[1]]]
    assert sum(any(p and p in t for t in _ticks(bottom)) for p in pieces) >= len(pieces) - 1
    box = dock.att_heads  # per head: the heads' names under their columns (a click on its box)
    qtbot.mouseClick(box, Qt.LeftButton, pos=QPoint(8, box.height() // 2))
    wait_for(lambda: box.isChecked(), 10)
    assert {f"head {h + 1}" for h in range(H)} <= set(_ticks(dock.att_plot.getAxis("bottom")))
    assert "head" in dock.att_plot.getAxis("bottom").labelText
