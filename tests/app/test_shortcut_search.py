"""Help -> Keyboard shortcuts: the search field filters the rows of both tables as one types; the prompt's
keys and Esc are listed."""
from PySide6.QtCore import Qt

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def _shown(table):
    return [table.item(r, 1).text() for r in range(table.rowCount()) if not table.isRowHidden(r)]


def test_typing_in_the_search_field_filters_both_tables(main_window, qtbot):
    dialog = main_window.show_shortcuts()
    qtbot.waitExposed(dialog)
    table, gestures = dialog.table, dialog.gestures
    all_keys = [table.item(r, 2).text() for r in range(table.rowCount())]
    assert "Esc" in all_keys and "Ctrl+Return" in all_keys and "Return" in all_keys
    n_rows, n_gestures = len(_shown(table)), len(_shown(gestures))
    assert n_rows == table.rowCount() and n_gestures == gestures.rowCount()
    dialog.search.setFocus()
    qtbot.keyClicks(dialog.search, "zoom")
    assert _shown(gestures) == ["Zoom in / out"]
    assert _shown(table) == []
    dialog.search.clear()
    qtbot.keyClicks(dialog.search, "UNDO")  # case-insensitive, both tables
    assert any("Undo" in t for t in _shown(table)) and 0 < len(_shown(table)) < n_rows
    assert _shown(gestures) == []
    qtbot.keyClicks(dialog.search, "xyzzy")
    assert _shown(table) == [] and _shown(gestures) == []
    dialog.search.clear()
    assert len(_shown(table)) == n_rows and len(_shown(gestures)) == n_gestures
    qtbot.keyClick(dialog, Qt.Key_Escape)
