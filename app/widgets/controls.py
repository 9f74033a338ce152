"""Layouts that put their widgets side by side when there is room and stack them when the dock is narrow.

Used by the expert and routing docks, which live in a ~480-px-wide tabbed dock by default but may be
floated or widened. The minimum size reported is the stacked one, so a narrow dock never needs a horizontal
scroll bar.
"""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QBoxLayout, QFrame, QGridLayout, QLayout, QScrollArea, QWidget


class ResponsiveBox(QWidget):
    """Left-to-right above `threshold` px of width, top-to-bottom below."""

    def __init__(self, threshold: int, parent=None, spacing: int = 6):
        super().__init__(parent)
        self.threshold = threshold
        self.box = QBoxLayout(QBoxLayout.TopToBottom, self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(spacing)
        self.box.setSizeConstraint(QLayout.SetNoConstraint)
        self._items: list[QWidget] = []

    def addWidget(self, w: QWidget, stretch: int = 0) -> None:  # noqa: N802 (Qt style)
        self._items.append(w)
        self.box.addWidget(w, stretch)

    def horizontal(self) -> bool:
        return self.box.direction() == QBoxLayout.LeftToRight

    def resizeEvent(self, event):  # noqa: N802
        want = QBoxLayout.LeftToRight if event.size().width() >= self.threshold else QBoxLayout.TopToBottom
        if self.box.direction() != want:
            self.box.setDirection(want)
            self.updateGeometry()
        super().resizeEvent(event)

    def _hint(self, which: str) -> QSize:
        sizes = [getattr(w, which)() for w in self._items if not w.isHidden()]
        if not sizes:
            return QSize(0, 0)
        gap = self.box.spacing() * (len(sizes) - 1)
        width = max(s.width() for s in sizes)
        if self.horizontal():
            return QSize(width, max(s.height() for s in sizes))
        return QSize(width, sum(s.height() for s in sizes) + gap)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self._hint("minimumSizeHint")

    def sizeHint(self) -> QSize:  # noqa: N802
        return self._hint("sizeHint")


class ResponsiveGrid(QWidget):
    """Widgets in a grid of 2 columns above `threshold` px of width, one column below."""

    def __init__(self, threshold: int, parent=None):
        super().__init__(parent)
        self.threshold = threshold
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSizeConstraint(QLayout.SetNoConstraint)
        self._items: list[QWidget] = []
        self._cols = 0

    def addWidget(self, w: QWidget) -> None:  # noqa: N802
        self._items.append(w)
        self._arrange(1 if self._cols == 0 else self._cols)

    def columns(self) -> int:
        return self._cols

    def _arrange(self, cols: int) -> None:
        self._cols = cols
        for w in self._items:
            self.grid.removeWidget(w)
        for i, w in enumerate(self._items):
            self.grid.addWidget(w, i // cols, i % cols)
        for c in range(2):
            self.grid.setColumnStretch(c, 1 if c < cols else 0)
        self.updateGeometry()

    def resizeEvent(self, event):  # noqa: N802
        cols = 2 if event.size().width() >= self.threshold else 1
        if cols != self._cols:
            self._arrange(cols)
        super().resizeEvent(event)

    def _hint(self, which: str) -> QSize:
        sizes = [getattr(w, which)() for w in self._items]
        if not sizes:
            return QSize(0, 0)
        cols = max(1, self._cols)
        rows = [sizes[i:i + cols] for i in range(0, len(sizes), cols)]
        gap = self.grid.verticalSpacing() if self.grid.verticalSpacing() >= 0 else 6
        height = sum(max(s.height() for s in row) for row in rows) + gap * (len(rows) - 1)
        return QSize(max(s.width() for s in sizes), height)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self._hint("minimumSizeHint")

    def sizeHint(self) -> QSize:  # noqa: N802
        return self._hint("sizeHint")


def scrolled(page: QWidget) -> QScrollArea:
    """`page` in a frameless vertical scroll area: word-wrapped text gets its full height (the scroll area
    honours height-for-width) and a short dock scrolls instead of squeezing widgets over each other."""
    area = QScrollArea()
    area.setObjectName(f"{page.objectName() or type(page).__name__}_scroll")
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    area.setWidget(page)
    return area
