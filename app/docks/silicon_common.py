"""Shared drawing helpers of the Silicon & memory dock: palette colours as QColor, a canvas base class that
paints in a fixed logical coordinate box scaled to the widget (crisp at any DPI: Qt rasterises vector paths
at the device pixel ratio), and small text/box primitives."""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QBoxLayout, QComboBox, QLabel, QSizePolicy, QWidget

from scene.palette import role_qcolor_tuple

ERROR_STYLE = "color: #ff7070;"
NOTE_STYLE = "color: #8a93a0;"
FONT_FAMILIES = ["DejaVu Sans", "Noto Sans CJK KR"]  # Latin + combining marks from DejaVu, Hangul from Noto


def qcolor(role: str, alpha: int | None = None) -> QColor:
    c = QColor(*role_qcolor_tuple(role))
    if alpha is not None:
        c.setAlpha(alpha)
    return c


def mix(a: QColor, b: QColor, t: float) -> QColor:
    """Linear blend a -> b, t in [0, 1]."""
    t = min(1.0, max(0.0, t))
    return QColor(int(a.red() + (b.red() - a.red()) * t), int(a.green() + (b.green() - a.green()) * t),
                  int(a.blue() + (b.blue() - a.blue()) * t), int(a.alpha() + (b.alpha() - a.alpha()) * t))


BG = qcolor("background")
TEXT = qcolor("text")
DIM = QColor(120, 128, 140)
WIRE = QColor(150, 158, 170)
PANEL = QColor(24, 27, 33)
PANEL_EDGE = QColor(58, 64, 76)
DARK = QColor(60, 66, 78)
HOT = QColor(255, 214, 90)  # an active word line / driven bit line


def font(pt: float, bold: bool = False, mono: bool = False) -> QFont:
    f = QFont(["DejaVu Sans Mono", "Noto Sans Mono CJK KR"] if mono else FONT_FAMILIES)
    f.setPointSizeF(pt)
    f.setBold(bold)
    return f


def note_label(text: str = "", style: str = NOTE_STYLE) -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    lab.setStyleSheet(style)
    lab.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Minimum)
    return lab


class Canvas(QWidget):
    """Paints in a logical box of LOGICAL = (w, h) units, uniformly scaled and centred in the widget."""

    LOGICAL = (800.0, 400.0)

    def __init__(self, parent=None):
        super().__init__(parent)
        policy = QSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        w, h = self.LOGICAL
        self.setMinimumSize(int(w * 0.5), int(h * 0.5))

    def sizeHint(self) -> QSize:
        w, h = self.LOGICAL
        return QSize(int(w), int(h))

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        w, h = self.LOGICAL
        return int(width * h / w)

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        p.setRenderHint(QPainter.TextAntialiasing)
        p.fillRect(self.rect(), BG)
        w, h = self.LOGICAL
        s = min(self.width() / w, self.height() / h)
        p.translate((self.width() - w * s) / 2, (self.height() - h * s) / 2)
        p.scale(s, s)
        self.draw(p)
        p.end()

    def draw(self, p: QPainter) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


def pen(color: QColor, width: float = 2.0, style=Qt.SolidLine) -> QPen:
    q = QPen(color, width, style)
    q.setCapStyle(Qt.RoundCap)
    q.setJoinStyle(Qt.RoundJoin)
    return q


def text(p: QPainter, x: float, y: float, s: str, pt: float = 10, color: QColor = TEXT, bold: bool = False,
         align=Qt.AlignLeft | Qt.AlignVCenter, width: float = 400, mono: bool = False) -> None:
    """Draw s anchored at (x, y): align picks which edge/centre of a width × 40 box sits on the point."""
    p.setFont(font(pt, bold, mono))
    p.setPen(color)
    if align & Qt.AlignHCenter:
        left = x - width / 2
    elif align & Qt.AlignRight:
        left = x - width
    else:
        left = x
    p.drawText(QRectF(left, y - 20, width, 40), int(align), s)


def wrapped(p: QPainter, rect: QRectF, s: str, pt: float = 9, color: QColor = TEXT) -> None:
    p.setFont(font(pt))
    p.setPen(color)
    p.drawText(rect, int(Qt.TextWordWrap | Qt.AlignLeft | Qt.AlignTop), s)


def box(p: QPainter, rect: QRectF, fill: QColor, edge: QColor = PANEL_EDGE, radius: float = 8, width: float = 1.5):
    p.setPen(pen(edge, width))
    p.setBrush(fill)
    p.drawRoundedRect(rect, radius, radius)
    p.setBrush(Qt.NoBrush)


def dot(p: QPainter, x: float, y: float, r: float = 4, color: QColor = WIRE) -> None:
    p.setPen(Qt.NoPen)
    p.setBrush(color)
    p.drawEllipse(QPointF(x, y), r, r)
    p.setBrush(Qt.NoBrush)


def arrow(p: QPainter, x1: float, y1: float, x2: float, y2: float, color: QColor = WIRE, width: float = 2,
          head: float = 8) -> None:
    import math

    p.setPen(pen(color, width))
    p.drawLine(QPointF(x1, y1), QPointF(x2, y2))
    a = math.atan2(y2 - y1, x2 - x1)
    path = QPainterPath(QPointF(x2, y2))
    path.lineTo(x2 - head * math.cos(a - 0.45), y2 - head * math.sin(a - 0.45))
    path.lineTo(x2 - head * math.cos(a + 0.45), y2 - head * math.sin(a + 0.45))
    path.closeSubpath()
    p.setPen(Qt.NoPen)
    p.setBrush(color)
    p.drawPath(path)
    p.setBrush(Qt.NoBrush)


def ground(p: QPainter, x: float, y: float, color: QColor = WIRE) -> None:
    p.setPen(pen(color, 2))
    for i, half in enumerate((14, 9, 4)):
        p.drawLine(QPointF(x - half, y + i * 5), QPointF(x + half, y + i * 5))


def nmos(p: QPainter, x1: float, x2: float, y: float, gate_on: bool, conducting: bool) -> None:
    """Horizontal NMOS symbol: channel from x1 to x2 at height y, gate plate above it (at y - 12)."""
    ch = qcolor("state") if conducting else WIRE
    p.setPen(pen(ch, 3 if conducting else 2))
    p.drawLine(QPointF(x1, y), QPointF(x1, y - 6))
    p.drawLine(QPointF(x2, y), QPointF(x2, y - 6))
    p.drawLine(QPointF(x1, y - 6), QPointF(x2, y - 6))
    p.setPen(pen(HOT if gate_on else WIRE, 3))
    p.drawLine(QPointF(x1 + 2, y - 13), QPointF(x2 - 2, y - 13))


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
