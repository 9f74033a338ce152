"""The Explain dock ("Why this word"): real events, pixels, Korean and English, computed off the UI thread."""
from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QToolButton

from app import i18n
from app.widgets.paint import qcolor
from compute.engine import ToyK3
from compute.trace import Knobs
from gui_helpers import flush_layouts, image_array, pump

PROMPT = "아이가 상자를 집었다. 그리고"


def wait_for(cond, timeout_s: float = 90.0, dock=None) -> None:
    """Run the event loop (releasing the GIL, so the pool thread computes) until cond() holds; a failed
    explanation (the dock's status line) fails at once."""
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, "timed out"
        if dock is not None:
            assert "failed" not in dock.status.text(), dock.status.text()
        pump(30)


def open_page(dock, name: str) -> None:
    """Click the page's tab, as a person does (the tab bar's scroll arrows first when it is out of sight)."""
    from app.docks.explain.pages import PAGES

    bar, i = dock.pages.tabBar(), PAGES.index(name)
    for _ in range(len(PAGES)):
        rect = bar.tabRect(i)
        if bar.rect().contains(rect.center()):
            break
        arrows = [b for b in bar.findChildren(QToolButton) if b.isVisible()]
        right = max(arrows, key=lambda b: b.x())
        left = min(arrows, key=lambda b: b.x())
        QTest.mouseClick(right if rect.center().x() > bar.width() // 2 else left, Qt.LeftButton)
    QTest.mouseClick(bar, Qt.LeftButton, Qt.NoModifier, bar.tabRect(i).center())
    assert dock.pages.currentIndex() == i
    flush_layouts()
    flush_layouts()  # a table's rows re-fitted to the page's width on its first show ask for one more layout


@pytest.fixture
def dock(qtbot):
    from app.docks.explain import ExplainDock
    from app.state import AppState

    state = AppState()
    engine = ToyK3(device="cpu")
    state.set_config(engine.config)
    d = ExplainDock(state)
    qtbot.addWidget(d)
    d.resize(560, 1500)
    d.show()
    qtbot.waitExposed(d)
    state.set_trace(engine.run(PROMPT, 2, Knobs(temperature=0.0)))
    wait_for(lambda: d.result is not None and not d.busy)
    d.engine = engine
    yield d
    i18n.set_language("en")


def _colour_pixels(widget, role: str, tol: int = 40) -> int:
    img = image_array(widget.grab().toImage()).astype(int)
    c = qcolor(role)
    d = np.abs(img[..., 0] - c.red()) + np.abs(img[..., 1] - c.green()) + np.abs(img[..., 2] - c.blue())
    return int((d < tol).sum())


def test_lens_plot_sources_and_contributions(dock):
    res = dock.result
    assert res.word == " 상자" and res.position == 7 and "상자" in dock.header.text()
    assert dock.position.currentData() == 7 and dock.position.count() == 10
    x, y = dock.curve_prob.getData()
    assert len(x) == 187 and x[1] == 0.5 and x[2] == 1.0 and abs(y[-1] - res.prob) < 1e-5 and y[0] < 0.05
    assert y[2] == res.lens_prob[1] and y[1] == res.lens_mixer_prob[0]  # after layer 1's mixer, then layer 1
    _, inv = dock.curve_rank.getData()
    assert inv[-1] == 1.0
    wait_for(lambda: _colour_pixels(dock.plot, "output") > 150, 10)  # the probability curve drawn in its colour
    assert dock.sources.rowCount() == 8 and dock.sources.item(2, 1).text() == "' 상자'"
    assert dock.sources.item(2, 0).font().bold()  # the earlier mention is the top source
    # one bold row, among the earlier tokens (Explanation.top_source), and the number is named for what it is
    assert [r for r in range(8) if dock.sources.item(r, 0).font().bold()] == [2]
    assert dock.sources.horizontalHeaderItem(2).text() == "Total effect"
    assert "resample ablation" in dock.sources_note.text() and "largest other logit" in dock.sources_note.text()
    assert dock.blocks.rowCount() == 15 and "1659 blocks" in dock.blocks_note.text()  # 1 + 93 + 1 + 92 x (16 + 1)
    # computed now, or remembered from an earlier test's window in this process (the service's memo): said as such
    said = "explain.remembered" if res.extra.get("remembered") else "explain.took"
    assert dock.status.text() == i18n.tr(said, ms=f"{res.seconds * 1000:.0f}")


def test_a_position_asked_again_is_shown_at_once_from_memory(dock):
    """The previous token, then back (keyboard on the position box): the second answer is the service's remembered
    copy — said in the status line, with the same sources table as the first time."""
    first = dock.result
    table = [[dock.sources.item(r, c).text() for c in range(3)] for r in range(dock.sources.rowCount())]
    dock.position.setFocus()
    QTest.keyClick(dock.position, Qt.Key_Up)
    wait_for(lambda: dock.result.position == 6 and not dock.busy, dock=dock)
    QTest.keyClick(dock.position, Qt.Key_Down)
    wait_for(lambda: dock.result.position == 7 and not dock.busy, dock=dock)
    assert dock.result.extra.get("remembered") is True and dock.result is not first
    assert dock.status.text().startswith("Computed earlier this session")
    assert [[dock.sources.item(r, c).text() for c in range(3)] for r in range(dock.sources.rowCount())] == table
    assert (dock.result.word, dock.result.prob, dock.result.lens_prob) == (first.word, first.prob, first.lens_prob)


def test_knock_out_a_token_with_the_mouse_and_restore(dock):
    t = dock.sources
    rect = t.visualItemRect(t.item(2, 1))
    QTest.mouseClick(t.viewport(), Qt.LeftButton, Qt.NoModifier, rect.center())
    assert dock.knock.isEnabled()
    before = image_array(dock.grab().toImage())
    QTest.mouseClick(dock.knock, Qt.LeftButton)
    wait_for(lambda: dock.result.knockout is not None and not dock.busy, dock=dock)
    ko = dock.result.knockout
    assert ko["items"] == [("token", 2)] and ko["word"] != " 상자"
    assert f"'{ko['word']}'" in dock.ko_label.text() and dock.ko_table.isVisible()  # the new answer is said
    assert dock.ko_table.item(0, 0).text().startswith("' 상자'")
    assert dock.ko_table.item(0, 1).text().startswith(piece := f"'{ko['word']}'"), piece
    after = image_array(dock.grab().toImage())
    assert before.shape != after.shape or (before != after).any()
    QTest.mouseClick(dock.restore, Qt.LeftButton)
    wait_for(lambda: dock.result.knockout is None and not dock.busy, dock=dock)
    assert not dock.ko_table.isVisible() and dock.ko_label.text() == ""


def test_choose_another_position_with_the_keyboard(dock):
    dock.position.setFocus()
    QTest.keyClick(dock.position, Qt.Key_Up)
    wait_for(lambda: dock.result.position == 6 and not dock.busy)
    assert dock.sources.rowCount() == 7
    assert len(dock.curve_prob.getData()[0]) == 187


def test_korean_texts(dock):
    i18n.set_language("ko")
    wait_for(lambda: dock.windowTitle() == "이 단어인 이유", 10)
    assert dock.knock.text() == "녹아웃" and "예측" in dock.header.text()
    assert dock.sources.horizontalHeaderItem(1).text() == "토큰"
    i18n.set_language("en")
    wait_for(lambda: dock.windowTitle() == "Why this word" and dock.knock.text() == "Knock out", 10)


def test_attention_table_follows_the_layer_and_a_click_on_the_overview(dock):
    res = dock.result
    assert dock.state.layer == 36 and "Layer 37 (KDA)" in dock.att_layer.text()
    A = res.attention[36]
    assert dock.att_table.rowCount() == 2 and dock.att_table.columnCount() == 8
    assert dock.att_table.item(1, 6).text() == f"{A[1, 6]:.2f}".replace("-", "−")
    flush_layouts()  # the overview plot laid out (its layouts are posted requests): the click lands where meant
    # a real click on the overview's row of layer 4 (MLA) selects that layer
    vb = dock.att_plot.getViewBox()
    pt = dock.att_plot.mapFromScene(vb.mapViewToScene(QPointF(3.0, 4.0)))
    QTest.mouseClick(dock.att_plot.viewport(), Qt.LeftButton, Qt.NoModifier, pt)
    wait_for(lambda: dock.state.layer == 3, 10)
    assert "Layer 4 (MLA)" in dock.att_layer.text()
    row = [float(dock.att_table.item(0, i).text().replace("−", "-")) for i in range(8)]
    assert abs(sum(row) - 1.0) < 0.05 and abs(res.attention[3][0].sum() - 1.0) < 1e-6
    # the overview is drawn: blue and orange cells (KDA reads some positions negatively)
    img = image_array(dock.att_plot.grab().toImage()).astype(int)
    blue = ((img[..., 2] - img[..., 0]) > 60) & (img[..., 1] < 200)  # not the selected layer's line (focus)
    assert blue.sum() > 100 and ((img[..., 0] - img[..., 2]) > 60).sum() > 100


def test_knock_out_a_block_and_an_expert_from_the_contributions(dock):
    t = dock.blocks
    res = dock.result
    parts = [p for _, p, _ in res.blocks]
    emb = parts.index("embedding")
    QTest.mouseClick(t.viewport(), Qt.LeftButton, Qt.NoModifier, t.visualItemRect(t.item(emb, 1)).center())
    assert not dock.knock_block.isEnabled()  # the embedding has no knock-out of its own
    row = parts.index("mixer")
    layer = res.blocks[row][0]
    QTest.mouseClick(t.viewport(), Qt.LeftButton, Qt.NoModifier, t.visualItemRect(t.item(row, 1)).center())
    assert dock.knock_block.isEnabled()
    up, down = res.block_words[row]
    assert f"Layer {layer}, mixer: promotes" in dock.block_words.text() and up[0][0] in dock.block_words.text()
    assert up[0][1] >= down[0][1]
    QTest.mouseClick(dock.knock_block, Qt.LeftButton)
    wait_for(lambda: dock.result.knockout is not None and not dock.busy, dock=dock)
    ko = dock.result.knockout
    assert ko["items"] == [("block", layer, "mixer")] and f"the mixer of layer {layer}" in dock.ko_label.text()
    assert ko["effect"] is not None and abs(ko["effect"]) > 1e-4  # a block the route says matters does matter
    QTest.mouseClick(dock.restore, Qt.LeftButton)
    wait_for(lambda: dock.result.knockout is None and not dock.busy, dock=dock)
    parts = [p for _, p, _ in dock.result.blocks]
    row = next(i for i, p in enumerate(parts) if p.startswith("expert "))
    ly, part, _ = dock.result.blocks[row]
    QTest.mouseClick(t.viewport(), Qt.LeftButton, Qt.NoModifier, t.visualItemRect(t.item(row, 1)).center())
    QTest.mouseClick(dock.knock_block, Qt.LeftButton)
    wait_for(lambda: dock.result.knockout is not None and not dock.busy, dock=dock)
    assert dock.result.knockout["items"] == [("expert", ly, int(part.split()[1]))]
    assert f"expert {part.split()[1]} at layer {ly}" in dock.ko_label.text()


def test_temperature_changes_do_not_recompute(dock):
    serial = dock._serial
    st = dock.state
    trace = dock.engine.resample(st.trace, Knobs(temperature=0.9, top_p=0.8))
    st.set_trace(trace)
    wait_for(lambda: not dock.busy, 10)  # its pause (DEBOUNCE_MS) is over and the request was looked at
    assert dock._serial == serial  # the layers did not change: nothing to explain again
    st.set_trace(dock.engine.run(PROMPT, 2, Knobs(temperature=0.0, alpha=0.5)))
    wait_for(lambda: dock._serial > serial and not dock.busy, dock=dock)
    assert dock.result.serial == dock._serial


def _pick_menu_action(text_part: str) -> None:
    """Trigger the open context menu's action whose text contains text_part (run from a timer while it is open)."""
    from PySide6.QtWidgets import QApplication, QMenu

    menu = QApplication.activePopupWidget()
    assert isinstance(menu, QMenu), menu
    action = next(a for a in menu.actions() if text_part in a.text())
    menu.setActiveAction(action)
    QTest.keyClick(menu, Qt.Key_Return)


def test_right_click_a_block_knocks_it_out_with_the_mode_the_menu_names(dock):
    from PySide6.QtCore import QTimer
    from compute.explain import Explanation

    t = dock.blocks
    res = dock.result
    row = [p for _, p, _ in res.blocks].index("mixer")
    layer = res.blocks[row][0]
    req = dock.current_request()
    QTimer.singleShot(300, lambda: _pick_menu_action("mean ablation"))
    at = t.visualItemRect(t.item(row, 1)).center()
    QTest.mouseClick(t.viewport(), Qt.RightButton, Qt.NoModifier, at)
    # the platform turns a right press into a context-menu event; QTest's synthetic press does not, so send it
    from PySide6.QtGui import QContextMenuEvent
    from PySide6.QtWidgets import QApplication
    QApplication.sendEvent(t.viewport(), QContextMenuEvent(QContextMenuEvent.Mouse, at, t.viewport().mapToGlobal(at)))
    wait_for(lambda: dock.result.knockout is not None and not dock.busy, dock=dock)
    ko = dock.result.knockout
    assert ko["items"] == [("block", layer, "mixer")] and ko["mode"] == "mean"
    assert "mean ablation" in dock.ko_label.text()
    # the after column is what compute.explain's own knock-out gives (not a constant)
    ex = Explanation(dock.engine, list(req.tokens), req.position, knobs=req.knobs, source_mode="mean")
    want = ex.knockout(blocks=[(layer, "mixer")], mode="mean")
    assert ko["word"] == want.word
    for r, (pc, p) in enumerate(want.top(5)):
        assert dock.ko_table.item(r, 1).text() == f"{dock_piece(pc)}  {dock_fmt(p)}"
        assert dock.ko_table.item(r, 0).text() == f"{dock_piece(res.top5[r][0])}  {dock_fmt(res.top5[r][1])}"


def dock_piece(pc):
    from app.docks.explain.dock import piece_text
    return piece_text(pc)


def dock_fmt(p):
    from app.docks.explain import dock as mod
    return mod.fmt(p)


def test_a_view_files_knockout_set_is_applied_and_read_back(dock):
    """The Explain dock takes a view file's knock-outs (app/files/viewfile.py's validated form: 1-based layers, an
    expert without a layer = every MoE layer) and gives them back, as they were, for File -> Save view; the after
    column is compute.explain's own knock-out of the same set."""
    from compute.explain import Explanation

    cfg = dock.state.config
    moe = [i + 1 for i, f in enumerate(cfg.ffn_types) if f == "moe"]
    req = dock.current_request()
    ko = {"mode": "mean", "tokens": [1], "blocks": [[moe[0], "mixer"]], "experts": [[None, 3]]}
    dock.set_knockouts(ko)
    wait_for(lambda: dock.result.knockout is not None and not dock.busy, dock=dock)
    got = dock.result.knockout
    assert got["mode"] == "mean"
    # the expert without a layer stays one entry (compute reads a bare id as every MoE layer) and is saved back so
    assert set(got["items"]) == {("token", 1), ("block", moe[0], "mixer"), ("expert", None, 3)}
    back = dock.knockouts()
    assert back["mode"] == "mean" and back["tokens"] == [1] and back["blocks"] == [[moe[0], "mixer"]]
    assert back["experts"] == [[None, 3]]
    ex = Explanation(dock.engine, list(req.tokens), req.position, knobs=req.knobs, source_mode="mean")
    want = ex.knockout(tokens=[1], blocks=[(moe[0], "mixer")], experts=[3], mode="mean")
    assert got["word"] == want.word
    assert [pc for pc, _ in got["top5"]] == [pc for pc, _ in want.top(5)]
    dock.set_knockouts(None)
    wait_for(lambda: dock.result.knockout is None and not dock.busy, dock=dock)
    assert dock.knockouts() is None
