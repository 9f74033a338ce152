"""The Silicon & memory dock's drawing base: a canvas that paints in a fixed logical coordinate box scaled to
the widget (crisp at any DPI: Qt rasterises vector paths at the device pixel ratio), circuit symbols, and the
dock's colours as palette roles (app/widgets/paint.py)."""
from __future__ import annotations

from PySide6.QtCore import QPointF, QSize
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.widgets.paint import pen, qcolor
from app.slot_guard import guarded

BG, TEXT, DIM, WIRE = qcolor("background"), qcolor("text"), qcolor("dim"), qcolor("wire")
PANEL, PANEL_EDGE, DARK, HOT = qcolor("panel_deep"), qcolor("panel_edge"), qcolor("dark"), qcolor("hot")


class Canvas(QWidget):
    """Paints in a logical box of LOGICAL = (w, h) units, uniformly scaled and centred in the widget. A canvas
    with a NARROW box uses it (and `self.narrow` is True in draw()) when the widget is narrower than
    NARROW_BELOW pixels: a rearranged drawing instead of the wide one shrunk (at the 1280 x 720 dock width, 425 px,
    the 800-unit DRAM drawing was scaled to 0.53: 9-point labels came out ~5 px high, above an empty band)."""

    LOGICAL = (800.0, 400.0)
    NARROW: tuple[float, float] | None = None
    NARROW_BELOW = 620
    narrow = False

    def logical_box(self, width: int | None = None) -> tuple[float, float]:
        """The logical (w, h) for a widget `width` pixels wide (default: the widget's width)."""
        width = self.width() if width is None else width
        return self.NARROW if self.NARROW is not None and width < self.NARROW_BELOW else self.LOGICAL

    def __init__(self, parent=None):
        super().__init__(parent)
        policy = QSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        w, h = self.NARROW or self.LOGICAL
        self.setMinimumSize(int(w * 0.5), int(h * 0.5))

    def sizeHint(self) -> QSize:
        w, h = self.LOGICAL
        return QSize(int(w), int(h))

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        w, h = self.logical_box(width)
        return int(width * h / w)

    @guarded
    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        p.setRenderHint(QPainter.TextAntialiasing)
        p.fillRect(self.rect(), BG)
        w, h = self.logical_box()
        self.narrow = (w, h) != self.LOGICAL
        s = min(self.width() / w, self.height() / h)
        p.translate((self.width() - w * s) / 2, (self.height() - h * s) / 2)
        p.scale(s, s)
        self.draw(p)
        p.end()

    def draw(self, p: QPainter) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


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
