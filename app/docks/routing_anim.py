"""Small QPainter helpers shared by the routing dock's diagrams, and a base class whose animation timer runs
only while the widget is visible (no work for hidden docks or tabs)."""
from __future__ import annotations

import math

from PySide6.QtCore import QElapsedTimer, QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.docks.deferred import VisibleTimerMixin
from scene.palette import role_qcolor_tuple

BG = QColor(*role_qcolor_tuple("background"))
TEXT = QColor(*role_qcolor_tuple("text"))
MUTED = QColor(140, 148, 160)
PANEL = QColor(38, 43, 52)
EDGE = QColor(90, 98, 112)


def role(name: str) -> QColor:
    return QColor(*role_qcolor_tuple(name))


class AnimatedDiagram(VisibleTimerMixin, QWidget):
    """Repaints at ~30 fps while it can be seen; `phase(period_s)` gives a value in [0, 1) for drawing motion."""

    restart_clock_on_show = False  # the motion continues where the clock is, it does not jump back

    def __init__(self, parent=None, min_size=(300, 170)):
        super().__init__(parent)
        self.setMinimumSize(*min_size)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self._clock = QElapsedTimer()
        self._clock.start()
        self._frozen: float | None = None  # fixed time (s) for exports/tests; None = live clock
        self.timer = QTimer(self)
        self.timer.setInterval(33)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        if not self.visibleRegion().isEmpty():  # scrolled out of sight: no repaint
            self.update()

    def seconds(self) -> float:
        return self._frozen if self._frozen is not None else self._clock.elapsed() / 1000.0

    def freeze(self, t: float | None) -> None:
        """Draw at a fixed time t seconds (None = live)."""
        self._frozen = t
        self.update()

    def phase(self, period_s: float) -> float:
        return (self.seconds() / period_s) % 1.0

    def paintEvent(self, event):  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        p.fillRect(self.rect(), BG)
        f = QFont(self.font())
        f.setPointSizeF(8.5)
        p.setFont(f)
        self.draw(p, float(self.width()), float(self.height()))
        p.end()

    def draw(self, p: QPainter, w: float, h: float) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


# --- drawing helpers ---------------------------------------------------------------------------------------
def box(p: QPainter, r: QRectF, label: str = "", fill: QColor = PANEL, edge: QColor = EDGE, text: QColor = TEXT,
        radius: float = 5.0, flags=Qt.AlignCenter | Qt.TextWordWrap) -> QRectF:
    pen = QPen(edge)
    pen.setWidthF(1.2)
    p.setPen(pen)
    p.setBrush(fill)
    p.drawRoundedRect(r, radius, radius)
    if label:
        p.setPen(text)
        p.drawText(r.adjusted(3, 2, -3, -2), flags, label)
    return r


def label(p: QPainter, x: float, y: float, text: str, color: QColor = MUTED, align=Qt.AlignCenter, w: float = 160):
    p.setPen(color)
    if align & Qt.AlignLeft:
        rect = QRectF(x, y - 9, w, 18)
    elif align & Qt.AlignRight:
        rect = QRectF(x - w, y - 9, w, 18)
    else:
        rect = QRectF(x - w / 2, y - 9, w, 18)
    p.drawText(rect, align | Qt.AlignVCenter, text)


def caption(p: QPainter, w: float, h: float, text: str, color: QColor = MUTED) -> None:
    """A caption at the foot of a diagram, wrapped onto two lines when the diagram is narrow."""
    p.setPen(color)
    p.drawText(QRectF(5, h - 36, w - 10, 33), Qt.AlignHCenter | Qt.AlignBottom | Qt.TextWordWrap, text)


def line(p: QPainter, a: QPointF, b: QPointF, color: QColor = EDGE, width: float = 1.5, style=Qt.SolidLine):
    pen = QPen(color)
    pen.setWidthF(width)
    pen.setStyle(style)
    p.setPen(pen)
    p.drawLine(a, b)


def arrow(p: QPainter, a: QPointF, b: QPointF, color: QColor = EDGE, width: float = 1.5, head: float = 7.0):
    line(p, a, b, color, width)
    d = b - a
    n = math.hypot(d.x(), d.y()) or 1.0
    ux, uy = d.x() / n, d.y() / n
    tip = QPainterPath(b)
    tip.lineTo(b - QPointF(head * ux - head * 0.5 * uy, head * uy + head * 0.5 * ux))
    tip.lineTo(b - QPointF(head * ux + head * 0.5 * uy, head * uy - head * 0.5 * ux))
    tip.closeSubpath()
    p.fillPath(tip, color)


def dot(p: QPainter, c: QPointF, color: QColor, r: float = 5.0):
    p.setPen(Qt.NoPen)
    p.setBrush(color)
    p.drawEllipse(c, r, r)


def along(points: list[QPointF], t: float) -> QPointF:
    """Point at fraction t (0..1) of the polyline's length."""
    segs = [(a, b, math.hypot(b.x() - a.x(), b.y() - a.y())) for a, b in zip(points, points[1:])]
    total = sum(s[2] for s in segs) or 1.0
    d = max(0.0, min(1.0, t)) * total
    for a, b, L in segs:
        if d <= L:
            f = d / L if L else 0.0
            return QPointF(a.x() + (b.x() - a.x()) * f, a.y() + (b.y() - a.y()) * f)
        d -= L
    return points[-1]
