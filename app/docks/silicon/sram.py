"""M2: one SRAM 6T cell — two cross-coupled inverters (4 transistors) and two access transistors. Writing
drives BL / BL̅ and flips the loop; it holds with no refresh while powered; power off loses the bit."""
from __future__ import annotations

import time

from PySide6.QtCore import QElapsedTimer, QPointF, Qt, QTimer
from PySide6.QtGui import QPolygonF
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.docks.deferred import VisibleTimerMixin
from app.docks.silicon.canvas import DARK, DIM, HOT, PANEL, TEXT, WIRE, Canvas, nmos
from app.i18n import tr
from app.widgets.controls import note_label
from app.widgets.paint import dot, font, pen, qcolor, text
from compute.teaching.cells import SRAMCell
from app.slot_guard import guarded

FLASH_S = 0.6


class SramSchematic(Canvas):
    """The 6T cell. Below NARROW_BELOW px (the docks' default 400-460 px) the drawing is pressed together
    sideways into a 540-unit box instead of the 800-unit one shrunk: the same circuit, its shapes closer, its
    texts at full size (shrunk, 9-point labels were 6 px high, with half the dock empty)."""

    LOGICAL = (800.0, 400.0)
    NARROW = (540.0, 400.0)

    def __init__(self, tab: "SramTab"):
        super().__init__(tab)
        self.tab = tab

    def x_of(self, x: float) -> float:
        """x of the 800-unit drawing in the current box (the identity in the wide one)."""
        if not self.narrow:
            return x
        return self.NARROW[0] / 2 + (x - 400.0) * 0.67

    def _col(self, value):
        if value is None:
            return DIM
        return qcolor("state") if value else DARK

    def draw(self, p) -> None:
        cell: SRAMCell = self.tab.cell
        on = cell.powered
        wl = cell.word_line
        q, qb = cell.q, cell.q_bar
        w = self.logical_box()[0]
        X = self.x_of  # noqa: N806 - the wide drawing's x, pressed together in the narrow box
        text(p, 24, 18, tr("silicon.sram.canvas_title"), 12, bold=True, width=w - 48)
        text(p, 24, 40, tr("silicon.sram.canvas_sub"), 9, DIM, width=w - 48)
        vdd = qcolor("state") if on else qcolor("output")
        text(p, X(776), 22, tr("silicon.sram.vdd_on") if on else tr("silicon.sram.vdd_off"), 10, vdd, True,
             Qt.AlignRight | Qt.AlignVCenter)
        # word line, bit lines
        p.setPen(pen(HOT if wl else WIRE, 3 if wl else 2))
        p.drawLine(QPointF(X(70), 62), QPointF(X(730), 62))
        text(p, X(600), 76 if self.narrow else 48, tr("silicon.sram.wl"), 9, HOT if wl else DIM,  # narrow: under
             align=Qt.AlignRight | Qt.AlignVCenter, width=300)  # the line, clear of the subtitle
        bl, blb = cell.bit_lines if cell.bit_lines else (None, None)
        for x, val, key in ((40, bl, "silicon.sram.bl"), (760, blb, "silicon.sram.blb")):
            p.setPen(pen(self._col(val) if val is not None else WIRE, 3 if val is not None else 2))
            p.drawLine(QPointF(X(x), 80), QPointF(X(x), 360))
            lab = tr(key) + ("" if val is None else f" = {int(val)}")
            text(p, X(x), 374, lab, 9, TEXT if val is not None else DIM, align=Qt.AlignHCenter | Qt.AlignVCenter,
                 width=160)
        # access transistors
        for (x_bl, xa, xb, x_node, name) in ((40, 120, 180, 250, "AX1"), (760, 620, 680, 550, "AX2")):
            xg = (xa + xb) / 2
            p.setPen(pen(WIRE, 2))
            lo, hi = min(x_bl, x_node), max(x_bl, x_node)
            p.drawLine(QPointF(X(lo), 200), QPointF(X(xa), 200))
            p.drawLine(QPointF(X(xb), 200), QPointF(X(hi), 200))
            nmos(p, X(xa), X(xb), 200, gate_on=wl, conducting=wl)
            p.setPen(pen(HOT if wl else WIRE, 2))
            p.drawLine(QPointF(X(xg), 187), QPointF(X(xg), 62))
            dot(p, QPointF(X(xg), 62), HOT if wl else WIRE, 4)
            dot(p, QPointF(X(x_bl), 200), WIRE, 4)
            text(p, X(xg), 222, name, 9, DIM, align=Qt.AlignHCenter | Qt.AlignVCenter, width=60)
        # inverter 2 (top): input Q -> output Q̅ ; inverter 1 (bottom): input Q̅ -> output Q
        p.setPen(pen(self._col(q), 3))
        p.drawLine(QPointF(X(250), 200), QPointF(X(250), 140))
        p.drawLine(QPointF(X(250), 140), QPointF(X(355), 140))
        p.drawLine(QPointF(X(250), 200), QPointF(X(250), 260))
        p.drawLine(QPointF(X(250), 260), QPointF(X(362), 260))
        p.setPen(pen(self._col(qb), 3))
        p.drawLine(QPointF(X(437), 140), QPointF(X(550), 140))
        p.drawLine(QPointF(X(550), 140), QPointF(X(550), 260))
        p.drawLine(QPointF(X(550), 260), QPointF(X(445), 260))
        t = cell.transistors()
        self._inverter(p, [(X(355), 112), (X(355), 168), (X(425), 140)], (X(431), 140), on)
        self._inverter(p, [(X(445), 232), (X(445), 288), (X(375), 260)], (X(369), 260), on)
        self._caption(p, X(400), 96, tr("silicon.sram.inv2"), "PU2", "PD2", t)
        self._caption(p, X(400), 312, tr("silicon.sram.inv1"), "PU1", "PD1", t)
        # the two storage nodes
        for x, val, name in ((250, q, "Q"), (550, qb, "Q̅")):
            p.setPen(pen(TEXT, 2))
            p.setBrush(self._col(val))
            p.drawEllipse(QPointF(X(x), 200), 20, 20)
            p.setBrush(Qt.NoBrush)
            text(p, X(x), 200, "?" if val is None else str(val), 13, TEXT, True, Qt.AlignCenter, 40)
            text(p, X(x) + (-34 if x < 400 else 34), 176, name, 11, TEXT, True,
                 (Qt.AlignRight if x < 400 else Qt.AlignLeft) | Qt.AlignVCenter, 60)
        held = self.tab.held_seconds()
        status = (tr("silicon.sram.held", s=f"{held:.1f}") if on and q is not None else tr("silicon.sram.lost"))
        text(p, X(400), 350, status, 10, TEXT if on else qcolor("output"), True, Qt.AlignHCenter | Qt.AlignVCenter, 560)

    def _inverter(self, p, tri, bubble, on):
        p.setPen(pen(WIRE if on else DIM, 2))
        p.setBrush(PANEL)
        p.drawPolygon(QPolygonF([QPointF(*xy) for xy in tri]))
        p.drawEllipse(QPointF(*bubble), 6, 6)
        p.setBrush(Qt.NoBrush)

    def _caption(self, p, x, y, title, pu, pd, t):
        on_txt, off_txt = tr("silicon.sram.on"), tr("silicon.sram.off")
        s = f"{title} · {pu} {on_txt if t[pu] else off_txt} · {pd} {on_txt if t[pd] else off_txt}"
        text(p, x, y, s, 9, DIM, align=Qt.AlignHCenter | Qt.AlignVCenter, width=360)


class SramTab(VisibleTimerMixin, QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.cell = SRAMCell()
        self.cell.write(1)
        self.cell.release()
        self._held_since = 0.0
        self._flash_until = 0.0
        self._msg: list[tuple[str, dict]] = [("silicon.sram.msg_start", {})]
        self.canvas = SramSchematic(self)
        self.btn_write1, self.btn_write0, self.btn_read = QPushButton(), QPushButton(), QPushButton()
        self.btn_power = QPushButton()
        self.btn_power.setCheckable(True)
        self.btn_power.setChecked(True)
        for name, w in (("sram_write1", self.btn_write1), ("sram_write0", self.btn_write0),
                        ("sram_read", self.btn_read), ("sram_power", self.btn_power)):
            w.setObjectName(name)
        self.result = QLabel()
        self.result.setObjectName("sram_result")
        self.result.setFont(font(10))  # DejaVu first: renders the combining overline of Q̅
        self.result.setWordWrap(True)
        self.note = note_label()
        row = QHBoxLayout()
        for b in (self.btn_write1, self.btn_write0, self.btn_read, self.btn_power):
            row.addWidget(b)
        row.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.canvas)
        lay.addLayout(row)
        lay.addWidget(self.result)
        lay.addWidget(self.note)
        lay.addStretch(1)
        self.btn_write1.clicked.connect(guarded(lambda: self._write(1)))
        self.btn_write0.clicked.connect(guarded(lambda: self._write(0)))
        self.btn_read.clicked.connect(self._read)
        self.btn_power.toggled.connect(self._power)
        self.timer = QTimer(self)
        self.timer.setInterval(100)
        self.timer.timeout.connect(self._tick)
        self.clock = QElapsedTimer()
        self.retranslate()

    def held_seconds(self) -> float:
        return self.cell.now - self._held_since

    def advance(self, seconds: float) -> None:
        self.cell.advance(seconds)
        if self.cell.word_line and time.monotonic() >= self._flash_until:
            self.cell.release()
        self.canvas.update()

    @guarded
    def _tick(self) -> None:
        self.advance(min(self.clock.restart() / 1000.0, 1.0))

    def _write(self, bit: int) -> None:
        if not self.cell.powered:
            self._msg = [("silicon.sram.msg_no_power", {})]
        else:
            flipped = self.cell.q != bit
            self.cell.write(bit)
            self._held_since = self.cell.now
            self._flash_until = time.monotonic() + FLASH_S
            self._msg = [("silicon.sram.msg_write_flip" if flipped else "silicon.sram.msg_write_same", {"bit": bit})]
        self._refresh_texts()

    @guarded
    def _read(self) -> None:
        got = self.cell.read()
        self._msg = [("silicon.sram.msg_read", {"bit": got})] if got is not None else [("silicon.sram.msg_no_power", {})]
        self._refresh_texts()

    @guarded
    def _power(self, on: bool) -> None:
        if on:
            q = self.cell.power_on()
            self._held_since = self.cell.now
            self._msg = [("silicon.sram.msg_power_on", {"bit": q})]
        else:
            self.cell.power_off()
            self._msg = [("silicon.sram.msg_power_off", {})]
        self._refresh_texts()

    def retranslate(self) -> None:
        self.btn_write1.setText(tr("silicon.sram.write1"))
        self.btn_write0.setText(tr("silicon.sram.write0"))
        self.btn_read.setText(tr("silicon.sram.read"))
        self.note.setText(tr("silicon.sram.note"))
        self._refresh_texts()

    def _refresh_texts(self) -> None:
        self.btn_power.setText(tr("silicon.sram.power_off") if self.btn_power.isChecked() else tr("silicon.sram.power_on"))
        self.result.setText(" ".join(tr(k, **f) for k, f in self._msg))
        self.canvas.update()
