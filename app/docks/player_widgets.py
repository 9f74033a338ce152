"""Small widget helpers of the trace player (app/docks/trace_player.py): a wrapping plain-text label, a
transport button whose click goes through app.slot_guard, and a setter that skips an unchanged value."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolButton

from app import slot_guard


def _wrap_label(name: str) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setTextFormat(Qt.PlainText)  # the texts quote the prompt and the model's name
    label.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Minimum)
    return label


def _tool(icon, name: str, slot) -> QToolButton:
    button = QToolButton()
    button.setObjectName(name)
    button.setIcon(button.style().standardIcon(icon))
    button.setAutoRaise(True)
    button.setFocusPolicy(Qt.NoFocus)
    button.setMinimumWidth(30)
    button.clicked.connect(slot_guard.guarded(slot))
    return button


def _qcolor(hex_colour: str):
    from PySide6.QtGui import QColor

    return QColor(hex_colour)


def _set_if_changed(widget, getter: str, setter: str, value: str) -> None:
    """Set a widget's text / style sheet only when it differs (re-setting re-lays out or re-polishes it)."""
    if getattr(widget, getter)() != value:
        getattr(widget, setter)(value)
