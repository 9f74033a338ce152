"""The first-run hint: a card over the top of the 3D view on a first start (orbit, zoom, click a block, F1 for every
shortcut, the Why-this-word panel) in the middle of the view, dismissed by a click (on the card, or anywhere in the 3D view, whose press
still orbits or picks as usual) and remembered in the settings (key HINT_KEY); Help -> Show hint again brings it
back. K3_NO_FIRST_RUN_HINT=1 never shows it by itself (the test suite sets it: its windows all start from fresh
settings files; a test asks for the hint with show_hint())."""
from __future__ import annotations

import html
import os

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.paint import css, css_rgba

HINT_KEY = "first_run_hint_seen"
ENV_OFF = "K3_NO_FIRST_RUN_HINT"
LINES = ("hint.orbit", "hint.click", "hint.keys", "hint.why")
MARGIN = 14


def disabled_by_env() -> bool:
    return os.environ.get(ENV_OFF, "").strip().lower() not in ("", "0", "false", "no")


class HintCard(QFrame):
    """The card itself: a title, the gestures and keys, and 'click to close'. Any click on it closes it."""

    def __init__(self, parent: QWidget, on_click):
        super().__init__(parent)
        self.setObjectName("first_run_hint")
        self._on_click = on_click
        self.setCursor(Qt.PointingHandCursor)
        # the answer strip's colours (the 3D view's own dark panel), the request blue as the edge
        self.setStyleSheet(f"#first_run_hint {{ background: {css_rgba('answer_fill', 230)};"
                           f" border: 1px solid {css('request')}; border-radius: 8px; }}"
                           f" #first_run_hint QLabel {{ color: {css('answer_text')}; background: transparent; }}")
        self.label = QLabel(self)
        self.label.setObjectName("first_run_hint_text")
        self.label.setTextFormat(Qt.RichText)
        self.label.setWordWrap(True)
        self.label.setAttribute(Qt.WA_TransparentForMouseEvents)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.addWidget(self.label)
        self.retranslate()

    def retranslate(self) -> None:
        e = html.escape
        items = "".join(f"<li>{e(tr(key))}</li>" for key in LINES)
        self.label.setText(f"<b>{e(tr('hint.title'))}</b><ul style='margin-left: -20px'>{items}</ul>"
                           f"<i>{e(tr('hint.dismiss'))}</i>")
        self.setToolTip(tr("hint.dismiss"))

    def mousePressEvent(self, event) -> None:
        event.accept()
        self._on_click()


class FirstRunHint(QObject):
    """Owned by the main window: shows the card over `view` (the SceneView) when the settings have not recorded
    a dismissal, keeps it placed as the view resizes, and records the dismissal."""

    def __init__(self, window, view: QWidget):
        super().__init__(window)
        self.window = window
        self.view = view
        self.card: HintCard | None = None
        view.installEventFilter(self)
        gl = getattr(view, "gl", None)
        self._press_source = gl if gl is not None else view
        if self._press_source is not view:
            self._press_source.installEventFilter(self)

    def seen(self) -> bool:
        return self.window.settings.q.value(HINT_KEY, "0") in ("1", 1, True, "true")

    def show_if_first_run(self) -> bool:
        """Show the card unless it was dismissed before (or K3_NO_FIRST_RUN_HINT is set); True when shown."""
        if disabled_by_env() or self.seen():
            return False
        self.show_hint()
        return True

    @guarded
    def show_hint(self) -> None:
        """Help -> Show hint again: the card, whatever the settings say."""
        if self.card is None:
            self.card = HintCard(self.view, self.dismiss)
        self.card.retranslate()
        self._place()
        self.card.show()
        self.card.raise_()

    def visible(self) -> bool:
        return self.card is not None and self.card.isVisible()

    @guarded
    def dismiss(self) -> None:
        if self.card is not None:
            self.card.hide()
        self.window.settings.q.setValue(HINT_KEY, 1)

    def retranslate(self) -> None:
        if self.card is not None:
            self.card.retranslate()
            self._place()

    def _place(self) -> None:
        if self.card is None:
            return
        width = max(220, min(520, self.view.width() - 2 * MARGIN))
        self.card.setFixedWidth(width)
        self.card.adjustSize()
        # the middle of the view: the header (top left) and the legend (bottom) stay readable
        self.card.move(max(0, (self.view.width() - width) // 2), max(0, (self.view.height() - self.card.height()) // 2))

    def eventFilter(self, obj, event) -> bool:
        kind = event.type()
        if obj is self.view and kind == QEvent.Resize:
            self._place()
        elif obj is self._press_source and kind == QEvent.MouseButtonPress and self.visible():
            self.dismiss()  # the press still goes on to orbit / pick
        return False
