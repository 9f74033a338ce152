"""Every text the docks' painted diagrams draw fits the rectangle it is drawn in ("≈ 4.8 TB/s" ran
past the HBM box at 460 px, the TLB line past both edges of the memory diagram, 'L2 cache' past its box), checked
the way a user meets it: the window opened at 1280 × 720 (its narrowest default layout), every tab of every dock
brought to the front, each painted widget rendered while app.widgets.paint.record_overflows() watches its texts."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QTabWidget, QWidget

from app import i18n
from app.widgets.paint import record_overflows
from gui_helpers import flush_layouts
from test_small_screens import open_window


def painted_widgets(root):
    for w in root.findChildren(QWidget):
        if w.isVisible() and type(w).__module__.startswith("app.") and type(w).paintEvent is not QWidget.paintEvent:
            yield w


def dock_tabs(dock):
    """(tab name, page) for each tab of a dock, each shown in turn: a TabbedDock's pages ({name: page}), the
    Explain dock's page tabs (a QTabWidget named `pages` too: the whole dock, one shown page at a time, so its
    header, position and status are checked with every page), or (None, the dock's widget)."""
    pages = getattr(dock, "pages", None)
    if isinstance(pages, dict) and pages:
        for tab, page in pages.items():
            dock.show_tab(tab)
            yield tab, page
    elif isinstance(pages, QTabWidget):
        for i in range(pages.count()):
            pages.setCurrentIndex(i)
            yield pages.widget(i).objectName() or str(i), dock.widget()
    else:
        yield None, dock.widget()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_no_diagram_text_runs_past_its_box_at_1280x720(qtbot, tmp_path, lang):
    win = open_window(qtbot, tmp_path, 1280, 720, lang)
    try:
        overflows, seen = [], 0
        for name in list(win.docks.keys()):
            dock = win.docks[name]
            dock.raise_()
            for tab, _page in dock_tabs(dock):
                flush_layouts()
                for widget in painted_widgets(dock):
                    with record_overflows() as found:
                        widget.grab()
                    seen += 1
                    overflows += [(name, tab, type(widget).__name__, widget.width(), *f) for f in found]
        assert seen > 10, "too few painted diagrams were rendered: the walk did not reach the docks"
        assert overflows == []
    finally:
        win.close()
        i18n.set_language("en")
