"""Small widget helpers of the trace player (app/docks/trace_player.py): a wrapping plain-text label, a
transport button whose click goes through app.slot_guard, a seek bar that jumps to the click, and a setter that
skips an unchanged value."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QSlider, QStyle, QStyleOptionSlider, QToolButton

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


class SeekSlider(QSlider):
    """A media player's seek bar: a left click on the groove moves the handle to the click at once (QSlider's
    default moves one page towards it) and, the handle now being under the mouse, the same press drags it."""

    @slot_guard.guarded
    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() == Qt.LeftButton and self.maximum() > self.minimum():
            opt = QStyleOptionSlider()
            self.initStyleOption(opt)
            style = self.style()
            handle = style.subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderHandle, self)
            pos = event.position().toPoint()
            if not handle.contains(pos):
                groove = style.subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderGroove, self)
                if self.orientation() == Qt.Horizontal:
                    offset, span = pos.x() - groove.x() - handle.width() // 2, groove.width() - handle.width()
                else:
                    offset, span = pos.y() - groove.y() - handle.height() // 2, groove.height() - handle.height()
                self.setValue(QStyle.sliderValueFromPosition(self.minimum(), self.maximum(), offset, max(span, 1),
                                                             opt.upsideDown))
        super().mousePressEvent(event)


def _qcolor(hex_colour: str):
    from PySide6.QtGui import QColor

    return QColor(hex_colour)


def _set_if_changed(widget, getter: str, setter: str, value: str) -> None:
    """Set a widget's text / style sheet only when it differs (re-setting re-lays out or re-polishes it)."""
    if getattr(widget, getter)() != value:
        getattr(widget, setter)(value)
