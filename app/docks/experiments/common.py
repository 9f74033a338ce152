"""Shared widgets of the Experiments dock: a bar chart, the "real K3 formula" badge, the experiment panel frame.

All texts go through app.i18n.tr; every panel implements retranslate(). The float slider and the other small
controls are in app/widgets/controls.py.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from app.i18n import tr
from app.widgets.controls import fmt, muted_label
from app.widgets.paint import qcolor
from app.widgets.safe_text import rich_tr
from app.slot_guard import guarded


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

    @guarded
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
        self.seed_note = muted_label(italic=True)  # another model loaded: the sizes named here are K3's
        self.seed_note.setObjectName(f"exp_{key}_seed_note")
        self.seed_note.setVisible(False)
        self.outer.addWidget(self.seed_note)
        self.model = None  # the loaded model's config (show_model); None: K3's
        self.outer.addStretch(1)

    def show_model(self, config) -> None:
        """The loaded model: when it is not K3, the page says that the real sizes it names are K3's, the seed
        example (the tokenizer page shows the loaded model's own sizes instead and does not call this)."""
        self.model = config
        self._seed_text()

    def _seed_text(self) -> None:
        from compute.config import default_config

        k3 = default_config()
        other = self.model is not None and self.model.name != k3.name
        self.seed_note.setVisible(other)
        self.seed_note.setText(rich_tr("learn.exp.seed_example", k3=k3.display_name, model=self.model.display_name)
                               if other else "")  # escaped: the loaded model's name comes from its config file

    def retranslate_frame(self) -> None:
        k = self.key
        self.title.setText(tr(f"learn.exp.{k}.title"))
        self.question.setText(tr(f"learn.exp.{k}.question"))
        self.badge.setText(tr("learn.exp.badge"))
        self.constructed.setText(tr(f"learn.exp.{k}.constructed"))
        self.note.setText(tr(f"learn.exp.{k}.note"))
        self._seed_text()
