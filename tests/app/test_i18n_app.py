"""Korean / English (X3): catalogue parity across every area, no visible missing-key marker, runtime switch."""
import json
import re
import string

import pytest
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (QAbstractButton, QComboBox, QDockWidget, QGroupBox, QLabel, QLineEdit, QListWidget,
                               QMenu, QTabBar, QTableWidget, QTabWidget, QWidget)

from app import i18n
from assets import asset_path

MISSING = re.compile(r"\[[A-Za-z0-9_]+(\.[A-Za-z0-9_{}]+)+\]")  # what tr() shows for an unknown key


def test_every_area_has_the_same_keys_in_both_languages():
    folder = asset_path("i18n")
    areas = sorted({p.name.split(".")[0] for p in folder.glob("*.json")})
    assert "app" in areas
    for area in areas:
        en = json.loads((folder / f"{area}.en.json").read_text(encoding="utf-8"))
        ko = json.loads((folder / f"{area}.ko.json").read_text(encoding="utf-8"))
        assert set(en) == set(ko), f"{area}: only en {set(en) - set(ko)}, only ko {set(ko) - set(en)}"
        assert all(isinstance(v, str) and v.strip() for v in list(en.values()) + list(ko.values())), area
        # the same format placeholders in both languages (whatever their format specs: English count phrases
        # "{n:|token|tokens}" stand beside Korean counters "{n}개", assets/plurals.py)
        for key in en:
            assert _fields(en[key]) == _fields(ko[key]), (area, key)


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_korean_catalogue_is_korean():
    ko = i18n.table("ko")
    app_keys = [k for k in ko if k.startswith("app.menu.") or k.startswith("app.step.")]
    hangul = [k for k in app_keys if re.search(r"[\uac00-\ud7a3]", ko[k])]
    assert len(hangul) == len(app_keys)


def visible_texts(root: QWidget) -> list[tuple[str, str]]:
    """(where, text) for every string a person can see in root and its menus."""
    out = []
    widgets = [root] + root.findChildren(QWidget)
    for w in widgets:
        name = f"{type(w).__name__}:{w.objectName()}"
        if isinstance(w, QDockWidget):
            out.append((name, w.windowTitle()))
        if not w.isVisibleTo(root) and not isinstance(w, QMenu):
            continue
        if isinstance(w, QLabel):
            out.append((name, w.text()))
        elif isinstance(w, QAbstractButton):
            out += [(name, w.text()), (name, w.toolTip())]
        elif isinstance(w, QLineEdit):
            out.append((name, w.placeholderText()))
        elif isinstance(w, QGroupBox):
            out.append((name, w.title()))
        elif isinstance(w, QComboBox):
            out += [(name, w.itemText(i)) for i in range(w.count())]
        elif isinstance(w, QTabBar):
            out += [(name, w.tabText(i)) for i in range(w.count())]
        elif isinstance(w, QTabWidget):
            out += [(name, w.tabText(i)) for i in range(w.count())]
        elif isinstance(w, QListWidget):
            out += [(name, w.item(i).text()) for i in range(w.count())]
        elif isinstance(w, QTableWidget):
            out += [(name, w.horizontalHeaderItem(i).text()) for i in range(w.columnCount())
                    if w.horizontalHeaderItem(i)]
        elif isinstance(w, QMenu):
            out.append((name, w.title()))
    for action in root.findChildren(QAction):
        out += [(f"QAction:{action.objectName()}", action.text()), (f"QAction:{action.objectName()}", action.toolTip())]
    return out


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_no_visible_text_is_a_missing_key(main_window, qtbot, lang):
    win = main_window
    i18n.set_language(lang)
    try:
        for dock in win.docks.values():  # show each tab once so its texts are laid out
            dock.raise_()
        win.docks["TracePlayerDock"].seek(5)
        texts = visible_texts(win)
        dialog = win.show_shortcuts()
        texts += visible_texts(dialog)
        dialog.close()
        from app.export.image import ExportDialog

        export = ExportDialog((800, 600), "/tmp/x.png", win)
        texts += visible_texts(export)
        export.deleteLater()
        bad = [(where, text) for where, text in texts if MISSING.search(text or "")]
        assert not bad, bad[:10]
        assert len(texts) > 150
        if lang == "ko":
            assert win.registry.menus["file"].title() == "파일(&F)"
            assert win.docks["TracePlayerDock"].title.text().startswith("06  93개 층 Prefill")
    finally:
        i18n.set_language("en")
        win.docks["TracePlayerDock"].seek(0)
        win.dock_layout.group_heads["right_tabs"].raise_()


def test_a_dropped_state_leaves_no_language_listener(qapp):
    """AppState is held weakly by app.i18n: a state nobody keeps stops listening by itself, a live one hears
    every switch (no module-global list to keep states alive or to clean up by hand)."""
    import gc

    from app.state import AppState

    i18n.set_language("en")
    gc.collect()  # earlier tests' dead states: collected now, not in the middle of the count below
    before = i18n.listener_count()
    kept = AppState()
    heard = []
    kept.language_changed.connect(heard.append)
    dropped = AppState()
    assert i18n.listener_count() == before + 2
    del dropped
    gc.collect()
    assert i18n.listener_count() == before + 1
    try:
        kept.set_language("ko")
        assert heard == ["ko"] and kept.language == "ko"
    finally:
        i18n.set_language("en")
    kept.detach_language()
    assert i18n.listener_count() == before
