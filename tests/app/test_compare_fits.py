"""The Compare dock fits (issue 41.5): in the real window at 1920x1080, 1366x768 and 1280x720, in English and
Korean, with the dock raised as the user opens it, no table cell is elided (each cell's text, line by line, fits its
column) and the crossover line is whole inside the visible dock (not cut at its bottom). Screenshots go to
$TMPDIR/k3_compare_fits/ for a person to look at."""
import os
import tempfile

import pytest
from PySide6.QtCore import QRect

from app import i18n
from gui_helpers import flush_layouts

SHOTS = os.path.join(tempfile.gettempdir(), "k3_compare_fits")
SIZES = [(1920, 1080), (1366, 768), (1280, 720)]


def _open(qtbot, tmp_path, w, h, lang):
    from app.window.main_window import MainWindow

    win = MainWindow(settings_path=str(tmp_path / f"s_{w}_{lang}.ini"), language=lang)
    qtbot.addWidget(win)
    win.resize(w, h)
    win.show()
    qtbot.waitExposed(win)
    qtbot.waitUntil(lambda: win.state.trace is not None and win.late_docks_built, timeout=120000)
    flush_layouts()
    return win


def _cut_cells(table) -> list[str]:
    """The cells whose text does not fit: laid out word-wrapped at the cell's width (less the item margins), a word
    wider than the cell or more lines than the row is tall."""
    from PySide6.QtCore import Qt

    fm = table.fontMetrics()
    bad = []
    for r in range(table.rowCount()):
        for c in range(table.columnCount()):
            item = table.item(r, c)
            if item is None:
                continue
            rect = table.visualItemRect(item)
            inner = rect.width() - 8  # the style's text margins
            need = fm.boundingRect(QRect(0, 0, inner, 10_000), int(Qt.TextWordWrap | Qt.AlignLeft), item.text())
            longest = max(fm.horizontalAdvance(word) for word in item.text().split())
            if longest > inner or need.height() > rect.height():
                bad.append(f"({r},{c}) {item.text()!r} needs {need.width()}x{need.height()} in {rect.width()}x"
                           f"{rect.height()}")
    return bad


def _whole_in(widget, viewport) -> bool:
    """widget's rectangle lies inside viewport's (both mapped to the window)."""
    top = widget.window()
    r = QRect(widget.mapTo(top, widget.rect().topLeft()), widget.size())
    v = QRect(viewport.mapTo(top, viewport.rect().topLeft()), viewport.size())
    return v.contains(r)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("w, h", SIZES)
def test_the_compare_dock_fits_at_the_default_sizes(qtbot, tmp_path, w, h, lang):
    win = _open(qtbot, tmp_path, w, h, lang)
    try:
        dock = win.docks["CompareDock"]
        win.state.show_dock("CompareDock", "")
        qtbot.waitUntil(lambda: dock.isVisible() and not dock.visibleRegion().isEmpty(), timeout=5000)
        flush_layouts()
        os.makedirs(SHOTS, exist_ok=True)
        dock.grab().save(os.path.join(SHOTS, f"compare_{w}x{h}_{lang}.png"))
        assert _cut_cells(dock.table) == []
        shown = dock.scroll.viewport()
        dock.scroll.ensureWidgetVisible(dock.crossover_label, 0, 0)
        flush_layouts()
        assert dock.crossover_label.text() and _whole_in(dock.crossover_label, shown)
        assert dock.crossover_label.heightForWidth(dock.crossover_label.width()) <= dock.crossover_label.height()
        # as opened, without scrolling: the whole table and the crossover line are on screen at 1920x1080
        if (w, h) == (1920, 1080):
            dock.scroll.verticalScrollBar().setValue(0)
            flush_layouts()
            assert _whole_in(dock.crossover_label, shown) and _whole_in(dock.table, shown)
    finally:
        win.close()
        i18n.set_language("en")
