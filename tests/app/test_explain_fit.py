"""The Explain dock's pages fit the default layouts (issue 40.2): the real window opened at 1920×1080, 1366×768
and 1280×720 in English and Korean, the "Why this word" dock raised: every tab is in sight (no tab behind the tab
bar's scroll arrows), and every page opened by clicking its tab — no page scrolls (down or sideways) and no
table's header or cell is cut. Screenshots go to
$TMPDIR/k3_explain_fit/ for a person to look at."""
from __future__ import annotations

import contextlib
import os
import tempfile

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QTableWidget, QToolButton

from app import i18n
from app.docks.explain.pages import PAGES
from gui_helpers import flush_layouts
from test_explain_dock import open_page, wait_for
from test_small_screens import clipped_labels, open_window, sideways_scrolling

SHOTS = os.path.join(tempfile.gettempdir(), "k3_explain_fit")
SIZES = [(1920, 1080), (1366, 768), (1280, 720)]
SHOT_QUALITY = 80  # PNG at zlib level 1 (Qt: (100 - quality) // 11), not the default: 0.09 s a 1920×1080 shot, not 0.15


def save_shot(win, name: str) -> None:
    """A screenshot of the window for a person to look at (SHOTS/name)."""
    win.grab().save(os.path.join(SHOTS, name), "PNG", SHOT_QUALITY)


def cut_cells(table: QTableWidget) -> list[str]:
    """Header sections and cells whose text is wider than their column and not wrapped into a taller row."""
    bad = []
    fm = QFontMetrics(table.font())
    h = table.horizontalHeader()
    for c in range(table.columnCount()):
        it = table.horizontalHeaderItem(c)
        if it is None or not h.isVisible():
            continue
        lines = it.text().split("\n")
        if max(fm.horizontalAdvance(line) for line in lines) + 8 > h.sectionSize(c) or h.height() < len(lines) * fm.height():
            bad.append(f"{table.objectName()} header {it.text()!r} in {h.sectionSize(c)} x {h.height()} px")
    for r in range(table.rowCount()):
        for c in range(table.columnCount()):
            it = table.item(r, c)
            if it is None or not it.text():
                continue
            w = sum(table.columnWidth(c + k) for k in range(table.columnSpan(r, c)))
            need = fm.boundingRect(0, 0, w - 8, 10000, int(Qt.TextWordWrap), it.text()).height()
            if need > table.rowHeight(r) + 1 or fm.horizontalAdvance(max(it.text().split(), key=len, default="")) > w:
                bad.append(f"{table.objectName()} ({r}, {c}) {it.text()[:30]!r}: {need} px in {table.rowHeight(r)}")
    return bad


def hidden_tabs(tabs) -> list[str]:
    """Tabs not wholly inside the tab bar's own width, or behind its scroll arrows (shown when the tabs do not fit)."""
    bar = tabs.tabBar()
    arrows = [b for b in bar.findChildren(QToolButton) if b.isVisible()]
    bad = [f"scroll arrows shown: the tabs need {sum(bar.tabSizeHint(i).width() for i in range(bar.count()))} px "
           f"in {bar.width()}"] if arrows else []
    for i in range(bar.count()):
        r = bar.tabRect(i)
        covered = any(b.geometry().intersects(r) for b in arrows)
        if r.left() < 0 or r.right() > bar.width() or covered:
            bad.append(f"tab {bar.tabText(i)!r} at {r.left()}..{r.right()} of {bar.width()} px")
    return bad


def overlapping(inner) -> list[str]:
    """Shown widgets of a page's own layout (and its rows) that overlap each other."""
    boxes, bad_kids = [], []
    lay = inner.layout()
    for i in range(lay.count()):
        item = lay.itemAt(i)
        ws = [item.widget()] if item.widget() is not None else (
            [item.layout().itemAt(k).widget() for k in range(item.layout().count())] if item.layout() else [])
        boxes += [w for w in ws if w is not None and w.isVisible()]
    for w in list(boxes):  # a part with its own layout (the patching map): its children too
        if w.layout() is not None and type(w).__name__ not in ("QTableWidget",):
            kids = [w.layout().itemAt(k).widget() for k in range(w.layout().count())]
            kids = [k for k in kids if k is not None and k.isVisible()]
            for a_i, a in enumerate(kids):
                for b in kids[a_i + 1:]:
                    if a.geometry().intersects(b.geometry()):
                        bad_kids.append(f"{a.objectName() or type(a).__name__} overlaps {b.objectName() or type(b).__name__}")
    bad = []
    for a_i, a in enumerate(boxes):
        for b in boxes[a_i + 1:]:
            if a.geometry().intersects(b.geometry()):
                bad.append(f"{a.objectName() or type(a).__name__} overlaps {b.objectName() or type(b).__name__}")
    return bad + bad_kids


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_page_fits(qtbot, tmp_path, size, lang):
    w, h = size
    win = open_window(qtbot, tmp_path, w, h, lang)
    try:
        dock = win.docks["ExplainDock"]
        dock.raise_()
        flush_layouts()
        wait_for(lambda: dock.result is not None and not dock.busy and dock.result.sources, dock=dock)
        open_page(dock, "route")  # the causal part, then every page with it
        wait_for(lambda: dock.result.causal and not dock.busy, timeout_s=400, dock=dock)
        os.makedirs(SHOTS, exist_ok=True)
        dock.pages.setCurrentIndex(0)
        flush_layouts()
        problems = hidden_tabs(dock.pages)
        for name in PAGES:
            open_page(dock, name)
            area = dock.pages.currentWidget()
            save_shot(win, f"{lang}_{w}x{h}_{name}.png")
            if area.verticalScrollBar().maximum() > 0:
                problems.append(f"{name}: scrolls {area.verticalScrollBar().maximum()} px "
                                f"(content {area.widget().sizeHint().height()} in {area.viewport().height()})")
            problems += [f"{name}: {p}" for p in sideways_scrolling(area) + clipped_labels(area)]
            problems += [f"{name}: {p}" for p in overlapping(area.widget())]
            for t in area.findChildren(QTableWidget):
                if t.isVisible():
                    problems += [f"{name}: {p}" for p in cut_cells(t)]
        assert problems == [], "\n".join(problems)
    finally:
        win.close()
        i18n.set_language("en")


LONG_PROMPT = " ".join(["아이가 상자를 집었다."] * 25) + " 그리고"  # 200 toy tokens


def test_a_long_prompt_does_not_grow_the_dock(qtbot, tmp_path):
    """Issue 40.3: a 200-token prompt at 1280×720 — the head view (a row per token) scrolls inside its own area,
    which the Attention page bounds: the page does not scroll, the dock asks for no more height than with the
    default prompt, the head view's area is shorter than its content and shows the explained token's row, and
    the overview names no more tokens than fit its width side by side."""
    from app.docks.explain.attention import TICK_PX

    win = open_window(qtbot, tmp_path, 1280, 720, "en")
    try:
        dock = win.docks["ExplainDock"]
        dock.raise_()
        flush_layouts()
        wait_for(lambda: dock.result is not None and not dock.busy, dock=dock)
        open_page(dock, "attention")
        short_min = dock.widget().minimumSizeHint().height()
        win.state.request_prompt(LONG_PROMPT)
        wait_for(lambda: win.state.trace is not None and win.state.trace.prompt_len == 200, timeout_s=300, dock=dock)
        wait_for(lambda: not dock.busy and dock.result is not None and len(dock.result.pieces) >= 200,
                 timeout_s=400, dock=dock)
        flush_layouts()
        area = dock.pages.currentWidget()
        assert area.verticalScrollBar().maximum() == 0, area.widget().sizeHint().height()
        assert dock.widget().minimumSizeHint().height() <= short_min
        assert dock.height() <= win.height()
        view, scroll = dock.att_head_view, dock.att_head_scroll
        assert view.height() > 2 * scroll.viewport().height()  # 200 rows: far more than it shows
        assert scroll.verticalScrollBar().maximum() > 0 and scroll.viewport().height() >= 100
        y, h = view.row_span(dock.result.position)
        top = scroll.verticalScrollBar().value()
        assert top <= y and y + h <= top + scroll.viewport().height()  # the explained row is in sight
        save_shot(win, "long_prompt_attention.png")
        ticks = [t for level in (dock.att_plot.getAxis("bottom")._tickLevels or []) for _v, t in level]
        assert 2 <= len(ticks) <= dock.att_plot.width() / TICK_PX + 2
    finally:
        win.close()
        i18n.set_language("en")


@contextlib.contextmanager
def route_page_with(qtbot, tmp_path, lang: str, key, part: str):
    """The window at 1280×720 in `lang`, the Route page open with the causal route on and the view box moved by
    `key` (keyboard) until its `part` of the effects has come; yields (dock, the page's scroll area, the view box).
    A screenshot goes to SHOTS."""
    from PySide6.QtTest import QTest

    win = open_window(qtbot, tmp_path, 1280, 720, lang)
    try:
        dock = win.docks["ExplainDock"]
        dock.raise_()
        flush_layouts()
        wait_for(lambda: dock.result is not None and not dock.busy, dock=dock)
        open_page(dock, "route")
        QTest.mouseClick(dock.show3d.route, Qt.LeftButton)
        view = dock.effects_view.view
        view.setFocus()
        QTest.keyClick(view, key)
        wait_for(lambda: part in dock.result.effects and not dock.busy, timeout_s=600, dock=dock)
        flush_layouts()
        flush_layouts()
        os.makedirs(SHOTS, exist_ok=True)
        save_shot(win, f"{lang}_1280x720_route_{part}.png")
        yield dock, dock.pages.currentWidget(), view
    finally:
        win.close()
        i18n.set_language("en")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_route_page_fits_with_the_heads_table(qtbot, tmp_path, lang):
    """The Route page at 1280×720 with the causal route on and the heads' total-effect table chosen (keyboard):
    it does not scroll, and no table cell or header is cut."""
    from PySide6.QtTest import QTest

    with route_page_with(qtbot, tmp_path, lang, Qt.Key_Down, "heads") as (dock, area, view):
        assert dock.effects_view.heads.isVisible() and dock.route_line.isVisible()
        assert area.verticalScrollBar().maximum() == 0, area.widget().sizeHint().height()
        assert cut_cells(dock.effects_view.heads) == []
        QTest.keyClick(view, Qt.Key_Home)  # the patching map, with the route's line above it
        wait_for(lambda: not dock.busy, dock=dock)
        flush_layouts()
        flush_layouts()
        assert dock.patch_map.plot.isVisible() and dock.route_line.isVisible()
        assert area.verticalScrollBar().maximum() == 0, area.widget().sizeHint().height()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_route_page_fits_with_the_paths_table_and_its_control(qtbot, tmp_path, lang):
    """The Route page at 1280×720 with the causal route on, the direct-paths table chosen (keyboard) and its
    random-block control line under it: the page does not scroll, no table cell or header is cut, no label is
    clipped, nothing overlaps."""
    with route_page_with(qtbot, tmp_path, lang, Qt.Key_End, "paths") as (dock, area, _view):
        control = dock.effects_view.control
        assert dock.effects_view.paths.isVisible() and control.isVisible() and control.text()
        assert dock.route_line.isVisible()
        assert area.verticalScrollBar().maximum() == 0, area.widget().sizeHint().height()
        assert cut_cells(dock.effects_view.paths) == []
        assert clipped_labels(area) == [] and sideways_scrolling(area) == [] and overlapping(area.widget()) == []
