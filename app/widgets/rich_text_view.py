"""A read-only rich-text block as tall as its text, that is cheap to change many times a second.

A word-wrapped rich-text QLabel answers every height-for-width question of its layout by laying its text out
again, and a new text asks them all again: the trace player's facts table (changed on every step of a 4x
auto-play) cost 20-35 ms of layout per step on the UI thread, the soak's longest heartbeat gaps.
RichTextView keeps one QTextDocument laid out once per text and width; its layout sees a fixed height, which
changes only when the text's height does. It reads and writes like a QLabel (text() / setText(html)), selectable
by mouse, never wider than the panel (it wraps, long words too) and painted with the window's colours.
"""
from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QPalette, QTextOption
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser

from app.widgets.safe_text import NoResources


class RichTextView(NoResources, QTextBrowser):
    """(Its texts quote the prompt and token pieces, escaped; as a second line of defence it loads no resource
    at all: an `<img src>` that slipped through unescaped reads no file — see app/widgets/safe_text.py.)"""

    def __init__(self, name: str = "", parent=None):
        super().__init__(parent)
        if name:
            self.setObjectName(name)
        self._html = ""
        self._fitted: tuple[int, int] | None = None  # (width, height) of the last fit
        self.setFrameShape(QFrame.Shape.NoFrame)  # a QTextBrowser is read-only already
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)  # never widens its panel
        self.document().setDocumentMargin(0)
        self.viewport().setAutoFillBackground(False)
        self._use_window_colours()
        self.setFixedHeight(0)

    # --- the QLabel-like interface ------------------------------------------------------------------
    def text(self) -> str:
        return self._html

    def setText(self, html: str) -> None:  # noqa: N802 - Qt's name, as QLabel's
        if html == self._html:
            return
        self._html = html
        self.setHtml(html)
        self._fitted = None
        self._fit()

    # --- size ---------------------------------------------------------------------------------------
    def _fit(self) -> None:
        """Lay the document out at the viewport's width; the widget's fixed height follows the text's."""
        width = max(1, self.viewport().width())
        doc = self.document()
        doc.setTextWidth(width)
        height = math.ceil(doc.size().height()) if self._html else 0
        margins = self.contentsMargins()
        height += margins.top() + margins.bottom()
        if self._fitted == (width, height):
            return
        self._fitted = (width, height)
        if self.height() != height or self.minimumHeight() != height:
            self.setFixedHeight(height)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self._fit()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(0, self.minimumHeight())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(0, self.minimumHeight())

    # --- colours: a label's, not a text field's -----------------------------------------------------
    def _use_window_colours(self) -> None:
        pal = self.palette()
        for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive, QPalette.ColorGroup.Disabled):
            pal.setColor(group, QPalette.ColorRole.Text, pal.color(group, QPalette.ColorRole.WindowText))
            pal.setColor(group, QPalette.ColorRole.Base, pal.color(group, QPalette.ColorRole.Window))
        self.setPalette(pal)

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() in (QEvent.Type.ApplicationPaletteChange, QEvent.Type.StyleChange):
            self.setPalette(self.parentWidget().palette() if self.parentWidget() else QPalette())
            self._use_window_colours()
