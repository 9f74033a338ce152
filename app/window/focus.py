"""Keyboard focus: Tab walks through the whole window (3D view included) and no panel traps it.

Tables and lists would move between their cells on Tab and text boxes would type a tab character; both are
set so that Tab moves on to the next control (arrow keys still move inside a table)."""
from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QPlainTextEdit, QTextEdit, QWidget


def untrap_tab(root: QWidget) -> None:
    """Make Tab / Shift+Tab leave every table, list and text box under root (and root itself)."""
    views = root.findChildren(QAbstractItemView)
    if isinstance(root, QAbstractItemView):
        views.append(root)
    for view in views:
        view.setTabKeyNavigation(False)
    for cls in (QTextEdit, QPlainTextEdit):
        for edit in root.findChildren(cls):
            edit.setTabChangesFocus(True)


def in_window(widget: QWidget, window: QWidget) -> bool:
    """True when `widget` is part of `window`: inside it, or inside one of its floated docks (a floated
    QDockWidget is a window of its own, so widget.window() is the dock, but its parent is still `window`)."""
    while widget is not None:
        if widget is window:
            return True
        widget = widget.parentWidget()
    return False
