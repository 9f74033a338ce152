"""The routing dock's animated-diagram base class, whose animation timer runs only while the widget can be seen
(no work for hidden docks or tabs), and the dock's colours as palette roles (app/widgets/paint.py)."""
from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, QTimer
from PySide6.QtGui import QFont, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.docks.deferred import VisibleTimerMixin
from app.widgets.paint import qcolor
from app.slot_guard import guarded

BG, TEXT, MUTED = qcolor("background"), qcolor("text"), qcolor("muted")
PANEL, EDGE = qcolor("panel"), qcolor("edge")


def begin_paint(widget: QWidget, point_size: float) -> tuple[QPainter, QFont]:
    """A painter on `widget`, antialiased, the background filled, set to the widget's font at `point_size`."""
    p = QPainter(widget)
    p.setRenderHint(QPainter.Antialiasing)
    p.fillRect(widget.rect(), BG)
    f = QFont(widget.font())
    f.setPointSizeF(point_size)
    p.setFont(f)
    return p, f


class AnimatedDiagram(VisibleTimerMixin, QWidget):
    """Repaints at ~30 fps while it can be seen; `phase(period_s)` gives a value in [0, 1) for drawing motion."""

    restart_clock_on_show = False  # the motion continues where the clock is, it does not jump back

    def __init__(self, parent=None, min_size=(300, 170)):
        super().__init__(parent)
        self.setMinimumSize(*min_size)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self.clock = QElapsedTimer()
        self.clock.start()
        self._frozen: float | None = None  # fixed time (s) for exports/tests; None = live clock
        self.timer = QTimer(self)
        self.timer.setInterval(33)
        self.timer.timeout.connect(self._tick)

    @guarded
    def _tick(self) -> None:
        if not self.visibleRegion().isEmpty():  # scrolled out of sight: no repaint
            self.update()

    def seconds(self) -> float:
        return self._frozen if self._frozen is not None else self.clock.elapsed() / 1000.0

    def freeze(self, t: float | None) -> None:
        """Draw at a fixed time t seconds (None = live)."""
        self._frozen = t
        self.update()

    def phase(self, period_s: float) -> float:
        return (self.seconds() / period_s) % 1.0

    @guarded
    def paintEvent(self, event):  # noqa: N802
        p, _f = begin_paint(self, 8.5)
        self.draw(p, float(self.width()), float(self.height()))
        p.end()

    def draw(self, p: QPainter, w: float, h: float) -> None:  # pragma: no cover - overridden
        raise NotImplementedError
