"""Shared widgets of the learning layer: a labelled float slider, a bar chart, the experiment panel frame.

All texts go through app.i18n.tr; every panel implements retranslate().
"""
from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QProxyStyle, QScrollArea, QSizePolicy, QSlider, QStyle,
                               QVBoxLayout, QWidget)

from app.i18n import tr
from scene.palette import role_qcolor_tuple


def qcolor(role: str, alpha: int | None = None) -> QColor:
    c = QColor(*role_qcolor_tuple(role))
    if alpha is not None:
        c.setAlpha(alpha)
    return c


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


class BarChart(QWidget):
    """Horizontal-axis bar chart drawn with QPainter (CJK labels, value on each bar, optional second series).

    set_data(labels, values, colors=None, ghost=None, vmax=None): ghost = a second series drawn as outlines
    behind the bars (e.g. probabilities before the top-p cut)."""

    def __init__(self, parent=None, min_height: int = 150, digits: int = 3):
        super().__init__(parent)
        self.setMinimumHeight(min_height)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)
        self.digits = digits
        self.labels: list[str] = []
        self.values = np.zeros(0)
        self.ghost: np.ndarray | None = None
        self.colors: list[QColor] = []
        self.vmax: float | None = None
        self.highlight: int | None = None

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(360, self.minimumHeight())

    def set_data(self, labels, values, colors=None, ghost=None, vmax=None, highlight=None) -> None:
        self.labels = list(labels)
        self.values = np.asarray(values, dtype=np.float64)
        self.ghost = None if ghost is None else np.asarray(ghost, dtype=np.float64)
        self.colors = list(colors) if colors is not None else [qcolor("activation")] * len(self.labels)
        self.vmax = vmax
        self.highlight = highlight
        self.update()

    def _vmax(self) -> float:
        if self.vmax:
            return self.vmax
        m = float(np.max(np.abs(self.values))) if self.values.size else 1.0
        if self.ghost is not None and self.ghost.size:
            m = max(m, float(np.max(self.ghost)))
        return max(m, 1e-9)

    def _geometry(self) -> tuple[float, float, float]:
        """(slot width, baseline y, pixels per unit). Signed data puts the baseline in the middle."""
        n = max(1, len(self.labels))
        top, bottom = 20 + (14 if self.ghost is not None else 0), 38
        span = self.height() - top - bottom
        signed = bool(self.values.size and np.min(self.values) < 0)
        base = top + span / 2 if signed else self.height() - bottom
        scale = (span / 2 if signed else span) / self._vmax()
        return (self.width() - 16) / n, base, scale

    def bar_rects(self) -> list[QRectF]:
        slot, base, scale = self._geometry()
        rects = []
        for i, v in enumerate(self.values):
            bh = min(abs(v), self._vmax()) * scale
            x = 8 + i * slot + slot * 0.18
            rects.append(QRectF(x, base - bh if v >= 0 else base, slot * 0.64, bh))
        return rects

    def paintEvent(self, _event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        pal = self.palette()
        text = pal.windowText().color()
        w, h = self.width(), self.height()
        bottom = 38
        slot, base, scale = self._geometry()
        p.setPen(QPen(pal.mid().color(), 1))
        p.drawLine(QPointF(8, base), QPointF(w - 8, base))
        small = QFont(self.font()); small.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.9))
        for i, r in enumerate(self.bar_rects()):
            if self.ghost is not None:  # "before" bar on the left half, outlined; the main bar on the right
                gh = min(self.ghost[i], self._vmax()) * scale
                half = r.width() / 2
                g = QRectF(r.x() - 2, base - gh, half, gh)
                r = QRectF(r.x() + half + 2, r.y(), half, r.height())
                p.setPen(QPen(text, 1, Qt.DashLine))
                p.setBrush(Qt.NoBrush)
                p.drawRect(g)
                p.setFont(small)
                label = fmt(self.ghost[i], self.digits)
                crowded = QFontMetrics(small).horizontalAdvance(label) + 4 > half + 4
                lift = 14 if crowded else 0  # stagger the "before" value above the "after" one when narrow
                p.drawText(QRectF(g.center().x() - 30, g.top() - 18 - lift, 60, 16), Qt.AlignCenter, label)
            c = self.colors[i] if i < len(self.colors) else qcolor("activation")
            p.setPen(QPen(c.darker(130), 2 if self.highlight == i else 1))
            p.setBrush(c)
            p.drawRect(r)
            p.setPen(text)
            p.setFont(small)
            v = self.values[i]
            ty = r.top() - 18 if v >= 0 else r.bottom() + 2
            p.drawText(QRectF(r.center().x() - 30, ty, 60, 16), Qt.AlignCenter, fmt(v, self.digits))
            f = QFont(self.font()); f.setBold(self.highlight == i)
            p.setFont(f)
            p.drawText(QRectF(8 + i * slot, h - bottom + 2, slot, bottom - 2), Qt.AlignHCenter | Qt.AlignTop | Qt.TextWordWrap,
                       self.labels[i])
        p.end()


def muted_label(text: str = "", italic: bool = False) -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    lab.setTextFormat(Qt.RichText)
    if italic:
        f = lab.font(); f.setItalic(True); lab.setFont(f)
    return lab


class Badge(QLabel):
    """A rounded pill ("Real K3 formula · toy numbers")."""

    def __init__(self, role: str = "kda", parent=None):
        super().__init__(parent)
        c = qcolor(role)
        self.setStyleSheet(f"QLabel {{ background: rgba({c.red()},{c.green()},{c.blue()},46); color: palette(window-text);"
                           f" border: 1px solid rgba({c.red()},{c.green()},{c.blue()},160); border-radius: 9px;"
                           " padding: 2px 9px; }")
        self.setSizePolicy(QSizePolicy.Maximum, QSizePolicy.Fixed)


class ExperimentPanel(QScrollArea):
    """Frame of one experiment: title, question, badge + 'what is constructed', body, closing real-K3 note."""

    def __init__(self, key: str, role: str = "kda", parent=None):
        super().__init__(parent)
        self.key = key
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.NoFrame)
        inner = QWidget()
        self.setWidget(inner)
        self.outer = QVBoxLayout(inner)
        self.outer.setContentsMargins(12, 10, 12, 10)
        self.outer.setSpacing(8)
        self.title = QLabel()
        self.title.setWordWrap(True)
        f = self.title.font(); f.setPointSizeF(f.pointSizeF() * 1.35); f.setBold(True); self.title.setFont(f)
        self.question = QLabel(); self.question.setWordWrap(True)
        badges = QHBoxLayout()
        self.badge = Badge(role)
        badges.addWidget(self.badge)
        badges.addStretch(1)
        self.constructed = muted_label(italic=True)
        self.outer.addWidget(self.title)
        self.outer.addWidget(self.question)
        self.outer.addLayout(badges)
        self.outer.addWidget(self.constructed)
        self.body = QVBoxLayout()
        self.body.setSpacing(8)
        self.outer.addLayout(self.body)
        self.note = muted_label()
        self.outer.addWidget(self.note)
        self.outer.addStretch(1)

    def retranslate_frame(self) -> None:
        k = self.key
        self.title.setText(tr(f"learn.exp.{k}.title"))
        self.question.setText(tr(f"learn.exp.{k}.question"))
        self.badge.setText(tr("learn.exp.badge"))
        self.constructed.setText(tr(f"learn.exp.{k}.constructed"))
        self.note.setText(tr(f"learn.exp.{k}.note"))


def fit_table_height(table) -> None:
    """Fix a QTableWidget's height to its rows (no empty area, no inner scrolling for short tables)."""
    header = table.horizontalHeader()
    h = (header.sizeHint().height() if header.isVisible() or not table.isVisible() else 0) + 2 * table.frameWidth() + 2
    h += table.verticalHeader().length()
    if table.horizontalScrollBar().isVisible():
        h += table.horizontalScrollBar().height()
    table.setMinimumHeight(h)
    table.setMaximumHeight(h)


def demote_headings(md: str, level: int = 4) -> str:
    """Markdown '# Title' -> '#### Title' so explanation texts sit inside panels without giant headings."""
    return re.sub(r"^#{1,3} ", "#" * level + " ", md, flags=re.M)


def section_label(text: str = "") -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    f = lab.font(); f.setBold(True); lab.setFont(f)
    return lab


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
