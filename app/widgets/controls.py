"""Small widgets and layouts shared by the docks: labelled float slider, responsive rows and grids that stack
when the dock is narrow, scrolling pages, table fitting, note / section labels.

The responsive layouts report their stacked size as the minimum, so a narrow dock (~480 px by default) never
needs a horizontal scroll bar.
"""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (QBoxLayout, QComboBox, QFrame, QGridLayout, QHBoxLayout, QLabel, QLayout, QProxyStyle,
                               QScrollArea, QSizePolicy, QSlider, QStyle, QVBoxLayout, QWidget)

from app.widgets.paint import css

NOTE_STYLE = f"color: {css('note')};"
ERROR_STYLE = f"color: {css('error')};"
CAVEAT_STYLE = f"color: {css('caveat')};"


def fmt(x: float, digits: int = 3) -> str:
    """Fixed-point with a real minus sign, so negative numbers read well."""
    s = f"{x:.{digits}f}"
    return s.replace("-", "−")


class _JumpStyle(QProxyStyle):
    """A left click on the groove jumps the handle there (instead of paging), as people expect."""

    def styleHint(self, hint, option=None, widget=None, returnData=None):  # noqa: N802 (Qt name)
        if hint == QStyle.SH_Slider_AbsoluteSetButtons:
            return Qt.LeftButton.value
        return super().styleHint(hint, option, widget, returnData)


_JUMP_STYLE: _JumpStyle | None = None


def _jump_style() -> _JumpStyle:
    """One shared proxy over the application style (a QProxyStyle given a base style would own it, so it is
    created without one; it then follows the application style)."""
    global _JUMP_STYLE
    if _JUMP_STYLE is None:
        _JUMP_STYLE = _JumpStyle()
    return _JUMP_STYLE


class FloatSlider(QWidget):
    """Label + horizontal slider + value read-out for a float in [lo, hi] with a fixed step."""

    valueChanged = Signal(float)

    def __init__(self, lo: float, hi: float, step: float, value: float, digits: int = 2, parent=None):
        super().__init__(parent)
        self.lo, self.step, self.digits = lo, step, digits
        self.label = QLabel()
        self.label.setMinimumWidth(110)
        self.label.setWordWrap(True)
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setStyle(_jump_style())
        self.slider.setRange(0, int(round((hi - lo) / step)))
        self.slider.setSingleStep(1)
        self.slider.setPageStep(max(1, self.slider.maximum() // 10))
        self.slider.setMinimumWidth(110)
        self.readout = QLabel()
        self.readout.setMinimumWidth(52)
        self.readout.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        f = self.readout.font(); f.setBold(True); self.readout.setFont(f)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label)
        row.addWidget(self.slider, 1)
        row.addWidget(self.readout)
        self.slider.valueChanged.connect(self._changed)
        self.setValue(value)
        self._changed(self.slider.value())

    def value(self) -> float:
        return round(self.lo + self.slider.value() * self.step, 10)

    def setValue(self, v: float) -> None:  # noqa: N802 (Qt naming)
        self.slider.setValue(int(round((v - self.lo) / self.step)))

    def setText(self, text: str) -> None:  # noqa: N802
        self.label.setText(text)

    def _changed(self, _i: int) -> None:
        self.readout.setText(fmt(self.value(), self.digits))
        self.valueChanged.emit(self.value())


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


def scroll_page(area: QScrollArea) -> tuple[QVBoxLayout, QLabel]:
    """Turn a QScrollArea into a frameless, resizable page: returns its vertical layout and a bold title label
    already added to it (the shared frame of every Learn-dock panel)."""
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.NoFrame)
    inner = QWidget()
    area.setWidget(inner)
    lay = QVBoxLayout(inner)
    lay.setContentsMargins(12, 10, 12, 10)
    title = QLabel()
    title.setWordWrap(True)
    f = title.font(); f.setPointSizeF(f.pointSizeF() * 1.35); f.setBold(True); title.setFont(f)
    lay.addWidget(title)
    return lay, title


def fit_table_height(table) -> None:
    """Fix a QTableWidget's height to its rows (no empty area, no inner scrolling for short tables)."""
    header = table.horizontalHeader()
    h = (header.sizeHint().height() if header.isVisible() or not table.isVisible() else 0) + 2 * table.frameWidth() + 2
    h += table.verticalHeader().length()
    if table.horizontalScrollBar().isVisible():
        h += table.horizontalScrollBar().height()
    table.setMinimumHeight(h)
    table.setMaximumHeight(h)


def note_label(text: str = "", style: str = NOTE_STYLE) -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    lab.setStyleSheet(style)
    lab.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Minimum)
    return lab


def muted_label(text: str = "", italic: bool = False) -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    lab.setTextFormat(Qt.RichText)
    if italic:
        f = lab.font(); f.setItalic(True); lab.setFont(f)
    return lab


def section_label(text: str = "") -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    f = lab.font(); f.setBold(True); lab.setFont(f)
    return lab


def set_stacked(layout: QBoxLayout, stacked: bool) -> None:
    """Lay a row's items out vertically (narrow dock) or side by side."""
    d = QBoxLayout.TopToBottom if stacked else QBoxLayout.LeftToRight
    if layout.direction() != d:
        layout.setDirection(d)


def shrinkable(combo: QComboBox, chars: int = 16) -> QComboBox:
    """A combo whose width does not grow with its longest item (long items are elided in the closed box)."""
    combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(chars)
    return combo
