"""BertViz's head view of one layer in the Explain dock: the tokens down the left (the explained one bold) and
again down the right, a line per head from the explained token to every token it reads, in its head's colour
(the 3D arcs' colours, scene/attention_arcs.HEAD_COLOURS), as opaque and as thick as |weight| / the largest; a
negative weight (KDA's implicit attention can be one) dashed. The heads are named in a row of colour keys above.
`lines` records what was drawn (head, source, weight) for tests."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.widgets.paint import head_qcolor, qcolor
from app.slot_guard import guarded

MIN_SHOWN = 0.04  # lines fainter than this share of the largest |weight| are left out (as the 3D arcs)


class HeadView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("explain_head_view")
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self._A = np.zeros((0, 0))
        self._pieces: list[str] = []
        self._t = 0
        self._names: list[str] = []
        self.lines: list[tuple[int, int, float]] = []
        self.key_rects: list[tuple[QRectF, str]] = []

    def set_data(self, A, pieces: list[str], position: int, head_names: list[str]) -> None:
        """A [H, T]: what `position` reads at each position per head; pieces: the T tokens' pieces."""
        self._A = np.nan_to_num(np.asarray(A, np.float64))
        self._pieces = [p.replace("\n", "\\n") or "·" for p in pieces]
        self._t = int(position)
        self._names = list(head_names)
        self.updateGeometry()
        self.update()

    @property
    def position(self) -> int:
        return self._t

    def row_span(self, i: int) -> tuple[float, float]:
        """(top y, height) of token i's row on the widget."""
        rh = self._row_h()
        return rh + 8 + i * rh, rh

    def _row_h(self) -> float:
        return QFontMetricsF(self.font()).height() + 6

    def sizeHint(self) -> QSize:
        T = max(1, len(self._pieces))
        return QSize(300, int(self._row_h() * (T + 1.6)) + 8)

    def minimumSizeHint(self) -> QSize:
        return QSize(160, self.sizeHint().height())

    @guarded
    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        fm = QFontMetricsF(self.font())
        bold = QFont(self.font())
        bold.setBold(True)
        rh = self._row_h()
        self.lines, self.key_rects = [], []
        H, T = (self._A.shape if self._A.ndim == 2 else (0, 0))
        # the heads' colour keys
        x = 4.0
        for h in range(H):
            name = self._names[h] if h < len(self._names) else str(h + 1)
            r = QRectF(x, 4, 12 + 4 + fm.horizontalAdvance(name), rh - 4)
            c = head_qcolor(h)
            p.fillRect(QRectF(x, 4 + (rh - 4) / 2 - 5, 12, 10), c)
            p.setPen(self.palette().color(QPalette.WindowText))
            p.drawText(QRectF(x + 16, 4, r.width() - 16, rh - 4), Qt.AlignVCenter, name)
            self.key_rects.append((r, name))
            x += r.width() + 14
        top = rh + 8
        fb = QFontMetricsF(bold)
        names_w = min(max((fb.horizontalAdvance(s) for s in self._pieces), default=20) + 8, self.width() * 0.3)
        lx, rx = names_w + 6, self.width() - names_w - 6
        for i, s in enumerate(self._pieces):  # the two token columns
            y = top + i * rh
            here = i == self._t
            p.setFont(bold if here else self.font())
            p.setPen(self.palette().color(QPalette.WindowText) if here else qcolor("muted"))
            shown = (fb if here else fm).elidedText(s, Qt.ElideRight, names_w - 2)
            p.drawText(QRectF(2, y, names_w, rh), Qt.AlignVCenter | Qt.AlignRight, shown)
            p.drawText(QRectF(rx + 4, y, names_w, rh), Qt.AlignVCenter | Qt.AlignLeft, shown)
        p.setFont(self.font())
        if H and T and 0 <= self._t < len(self._pieces):
            top_w = float(np.abs(self._A[:, :self._t + 1]).max()) or 1.0
            y0 = top + self._t * rh + rh / 2
            for h in range(H):
                for i in range(min(T, self._t + 1, len(self._pieces))):
                    w = float(self._A[h, i])
                    share = abs(w) / top_w
                    if share < MIN_SHOWN:
                        continue
                    pen = QPen(head_qcolor(h, 0.2 + 0.8 * share), 1.0 + 3.0 * share)
                    if w < 0:
                        pen.setStyle(Qt.DashLine)
                    p.setPen(pen)
                    dy = (h - (H - 1) / 2) * 1.5  # the heads' lines side by side, not on top of each other
                    p.drawLine(QPointF(lx, y0 + dy), QPointF(rx, top + i * rh + rh / 2 + dy))
                    self.lines.append((h, i, w))
        p.end()
