"""Tooltips for the controls of every panel, from the catalogues assets/i18n/tips.{en,ko}.json.

A control (slider or button) gets the text of the first of these keys that the catalogue has:

1. `tip.<objectName>`                 e.g. tip.slider_alpha
2. `tip.<objectName, last digits #>`  e.g. tip.bf16_bit#   (formatted with n = the digits, n1 = n + 1)
3. `tip.<Class>.<attribute>`          the Python attribute of an enclosing widget that holds the control (or a
                                      widget on the way to it), outermost first, e.g. tip.GridTab.reset_button
                                      for an unnamed button, tip.KdaPanel.alpha for the slider of a FloatSlider

so panels need no code for their tooltips, and a control whose owner set a tooltip itself and has no key
keeps it. `apply(root)` runs after every (re)translation; tests walk every control for a non-empty tooltip.
Qt's own helper buttons (dock title buttons, tab scroll arrows, scroll bars, a line edit's clear button) are
not the app's controls and are left alone (`is_app_control`).
"""
from __future__ import annotations

import re

from PySide6.QtWidgets import (QAbstractButton, QAbstractSlider, QDockWidget, QLineEdit, QScrollBar, QTabBar,
                               QToolBar, QWidget)

from app.i18n import table, tr

CONTROL_TYPES = (QAbstractSlider, QAbstractButton)
QT_HELPER_NAMES = ("qt_", "ScrollLeftButton", "ScrollRightButton")
ANCESTOR_DEPTH = 6


def is_app_control(widget: QWidget) -> bool:
    """A slider or button the app made (not one of Qt's helpers inside another widget)."""
    if not isinstance(widget, CONTROL_TYPES) or isinstance(widget, QScrollBar):
        return False
    if widget.objectName().startswith(QT_HELPER_NAMES):
        return False
    parent = widget.parentWidget()
    # a line edit's clear button, a tab bar's arrows; tool bar buttons take their tooltips from their QAction
    return not isinstance(parent, (QLineEdit, QTabBar, QToolBar))


def app_controls(root: QWidget) -> list[QWidget]:
    return [w for cls in CONTROL_TYPES for w in root.findChildren(cls) if is_app_control(w)]


def candidates(widget: QWidget) -> list[tuple[str, dict]]:
    """The catalogue keys tried for widget, best first, each with its format arguments."""
    keys: list[tuple[str, dict]] = []
    name = widget.objectName()
    if name:
        keys.append((f"tip.{name}", {}))
        m = re.search(r"(\d+)$", name)
        if m:
            n = int(m.group(1))
            keys.append((f"tip.{name[:m.start()]}#", {"n": n, "n1": n + 1}))
    held = []  # (ancestor class, attribute), innermost first
    path = [widget]  # the control and the widgets between it and the ancestor
    ancestor = widget.parentWidget()
    for _ in range(ANCESTOR_DEPTH):
        if ancestor is None or isinstance(ancestor, QDockWidget):
            break
        attrs = getattr(ancestor, "__dict__", {})
        found = [(i, a) for a, v in attrs.items() for i, w in enumerate(path) if v is w]
        if found:
            held.append((type(ancestor).__name__, min(found)[1]))  # the attribute holding the innermost one
        path.append(ancestor)
        ancestor = ancestor.parentWidget()
    keys += [(f"tip.{cls}.{attr}", {}) for cls, attr in reversed(held)]
    return keys


def tooltip_for(widget: QWidget) -> str | None:
    """The catalogue's tooltip for widget in the current language, or None when it has no key."""
    catalogue = table()
    for key, fmt in candidates(widget):
        if key in catalogue:
            return tr(key, **fmt) if fmt else tr(key)
    return None


def apply(root: QWidget) -> int:
    """Set the catalogue tooltip of every app control under root; returns how many were set."""
    count = 0
    for widget in app_controls(root):
        text = tooltip_for(widget)
        if text is not None and widget.toolTip() != text:
            widget.setToolTip(text)
        count += text is not None
    return count
