"""M1: one DRAM/HBM 1T1C cell, animated. The model (compute.teaching.cells.DRAMCell) is a pure function of model time;
the QTimer only calls `advance(wall_dt × compression)`, so tests pause it and advance time themselves."""
from __future__ import annotations

import math
import time

from PySide6.QtCore import QElapsedTimer, QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QPainterPath, QPolygonF
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget)

from app.docks.deferred import VisibleTimerMixin
from app.docks.silicon.canvas import DARK, DIM, HOT, PANEL, PANEL_EDGE, TEXT, WIRE, Canvas, ground, nmos
from app.i18n import tr
from app.widgets.controls import note_label, shrinkable
from app.widgets.paint import arrow, box, dot, font, mix, pen, qcolor, text
from compute.teaching.cells import DRAMCell, dram_voltage
from app.slot_guard import guarded

COMPRESSIONS_MS_PER_S = (5, 10, 20, 50)  # model milliseconds per wall-clock second
FLASH_S = 0.45  # how long an access lights the word line (wall seconds; cosmetic only)
WINDOW_S = 0.25  # strip chart span, model seconds


class DramSchematic(Canvas):
    LOGICAL = (800.0, 400.0)
    NARROW = (470.0, 610.0)  # the schematic on top, the V(t) chart under it

    def __init__(self, tab: "DramTab"):
        super().__init__(tab)
        self.tab = tab

    def draw(self, p) -> None:
        cell: DRAMCell = self.tab.cell
        v = cell.voltage()
        flash = self.tab.flash_active()
        kind, fbit = self.tab.flash if flash else (None, None)
        state = qcolor("state")
        text(p, 24, 22, tr("silicon.dram.canvas_title"), 12, bold=True, width=440)
        # word line
        p.setPen(pen(HOT if flash else WIRE, 3 if flash else 2))
        p.drawLine(QPointF(40, 70), QPointF(265, 70))
        text(p, 40, 52, tr("silicon.dram.wl"), 9, HOT if flash else DIM)
        # bit line (colour = the value being driven or sensed during an access)
        bl_col = (state if fbit else DARK) if flash else WIRE
        p.setPen(pen(bl_col, 3))
        p.drawLine(QPointF(90, 110), QPointF(90, 300))
        text(p, 100, 122, tr("silicon.dram.bl"), 9, DIM)
        dot(p, QPointF(90, 170), WIRE, 4)
        # access transistor between bit line and storage node, gate on the word line
        p.setPen(pen(bl_col if flash else WIRE, 3 if flash else 2))
        p.drawLine(QPointF(90, 170), QPointF(170, 170))
        nmos(p, 170, 230, 170, gate_on=flash, conducting=flash)
        p.setPen(pen(HOT if flash else WIRE, 2))
        p.drawLine(QPointF(200, 157), QPointF(200, 70))
        dot(p, QPointF(200, 70), HOT if flash else WIRE, 4)
        text(p, 200, 196, tr("silicon.dram.transistor"), 9, DIM, align=Qt.AlignHCenter | Qt.AlignVCenter, width=200)
        # storage node, capacitor, ground
        node_col = mix(WIRE, state, v)
        p.setPen(pen(node_col, 3))
        p.drawLine(QPointF(230, 170), QPointF(300, 170))
        p.drawLine(QPointF(300, 170), QPointF(300, 222))
        dot(p, QPointF(300, 170), node_col, 5)
        p.setPen(pen(node_col, 4))
        p.drawLine(QPointF(272, 222), QPointF(328, 222))
        p.setPen(pen(WIRE, 4))
        p.drawLine(QPointF(272, 236), QPointF(328, 236))
        p.setPen(pen(WIRE, 2))
        p.drawLine(QPointF(300, 236), QPointF(300, 262))
        ground(p, 300, 262)
        p.setFont(font(9))
        p.setPen(DIM)
        p.drawText(QRectF(104, 208, 156, 44), int(Qt.AlignRight | Qt.AlignVCenter | Qt.TextWordWrap),
                   tr("silicon.dram.capacitor"))
        # "+" charges on the top plate: count proportional to V
        n = int(round(v * 8))
        p.setFont(font(9, True))
        p.setPen(state)
        slots = [274, 281, 288, 305, 312, 319, 326, 267]  # either side of the wire
        for i in range(n):
            p.drawText(QRectF(slots[i] - 3, 204, 8, 14), int(Qt.AlignCenter), "+")
        # the charge "tank"
        tank = QRectF(360, 100, 60, 170)
        box(p, tank, PANEL, PANEL_EDGE, radius=6, width=1.5)
        fill_h = tank.height() * max(0.0, min(1.0, v))
        box(p, QRectF(tank.left() + 3, tank.bottom() - fill_h, tank.width() - 6, max(0.0, fill_h - 3)),
            mix(DARK, state, 0.35 + 0.65 * v), mix(DARK, state, 0.35 + 0.65 * v), radius=4, width=0.5)
        th_y = tank.bottom() - tank.height() * cell.threshold
        p.setPen(pen(qcolor("output"), 2, Qt.DashLine))
        p.drawLine(QPointF(tank.left() - 6, th_y), QPointF(tank.right() + 6, th_y))
        text(p, 390, 86, tr("silicon.dram.v_now", v=f"{v:.2f}"), 10, TEXT, True, Qt.AlignHCenter | Qt.AlignVCenter, 160)
        text(p, 390, 284, tr("silicon.dram.charge"), 9, DIM, align=Qt.AlignHCenter | Qt.AlignVCenter, width=130)
        text(p, 428, th_y, "V_th", 9, qcolor("output"))
        p.setPen(pen(DIM, 1, Qt.DotLine))
        p.drawLine(QPointF(328, 222), QPointF(358, 200))
        # sense amplifier at the foot of the bit line
        tri = QPolygonF([QPointF(60, 300), QPointF(120, 300), QPointF(90, 338)])
        p.setPen(pen(WIRE, 2))
        p.setBrush(PANEL)
        p.drawPolygon(tri)
        p.setBrush(Qt.NoBrush)
        text(p, 128, 318, tr("silicon.dram.sense_amp"), 9, DIM)
        p.setPen(pen(qcolor("output"), 2))
        p.drawLine(QPointF(30, 312), QPointF(72, 312))
        text(p, 28, 300, "V_th", 8, qcolor("output"))
        arrow(p, QPointF(90, 338), QPointF(90, 362), WIRE, 2, 8)
        last = self.tab.last_result
        out = tr("silicon.dram.sensed", bit=last) if last is not None else tr("silicon.dram.sensed_none")
        text(p, 104, 370, out, 10, TEXT, True)
        self._chart(p, QRectF(50, 420, 400, 172) if self.narrow else QRectF(470, 60, 310, 270), cell)

    def _chart(self, p, r: QRectF, cell: DRAMCell) -> None:
        box(p, r, PANEL, PANEL_EDGE, radius=6, width=1.5)
        text(p, r.left() + 10, r.top() - 14, tr("silicon.dram.chart_title", ms=f"{WINDOW_S * 1000:.0f}"), 9, DIM)
        plot = QRectF(r.left() + 34, r.top() + 12, r.width() - 46, r.height() - 44)
        t0 = max(0.0, cell.now - WINDOW_S)
        t1 = t0 + WINDOW_S

        def xy(t, v):
            return QPointF(plot.left() + (t - t0) / WINDOW_S * plot.width(), plot.bottom() - v * plot.height())

        p.setPen(pen(PANEL_EDGE, 1))
        for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
            y = plot.bottom() - frac * plot.height()
            p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            text(p, plot.left() - 6, y, f"{frac:.2g}", 8, DIM, align=Qt.AlignRight | Qt.AlignVCenter, width=40)
        th = plot.bottom() - cell.threshold * plot.height()
        p.setPen(pen(qcolor("output"), 1.5, Qt.DashLine))
        p.drawLine(QPointF(plot.left(), th), QPointF(plot.right(), th))
        # curve from the event history: piecewise exponentials
        segs = self.tab.segments
        path = QPainterPath()
        n = 240
        for i in range(n + 1):
            t = t0 + WINDOW_S * i / n
            pt = xy(t, self.tab.voltage_at(t))
            path.moveTo(pt) if i == 0 else path.lineTo(pt)
        p.setPen(pen(qcolor("state"), 2.2))
        p.drawPath(path)
        for (ts, _v, kind) in segs:
            if t0 <= ts <= cell.now:
                x = xy(ts, 0).x()
                col = HOT if kind == "write" else (qcolor("activation") if kind == "read" else qcolor("kda"))
                p.setPen(pen(col, 1.2, Qt.DotLine))
                p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
                text(p, x, plot.bottom() + 10, {"write": "W", "read": "R"}.get(kind, "↻"), 8, col,
                     align=Qt.AlignHCenter | Qt.AlignVCenter, width=20)
        text(p, plot.left(), r.bottom() - 10, f"{t0 * 1000:.0f} ms", 8, DIM)
        text(p, plot.right(), r.bottom() - 10, f"{t1 * 1000:.0f} ms", 8, DIM, align=Qt.AlignRight | Qt.AlignVCenter)
        text(p, plot.center().x(), r.bottom() - 10, tr("silicon.dram.model_time"), 8, DIM,
             align=Qt.AlignHCenter | Qt.AlignVCenter, width=200)


class DramTab(VisibleTimerMixin, QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.cell = DRAMCell()
        self.segments: list[tuple[float, float, str]] = []  # (time, voltage set, kind)
        self.last_result: int | None = None
        self.intended: int | None = None  # what the user last wrote
        self.flash: tuple[str, int] | None = None
        self._msg: list[tuple[str, dict]] = [("silicon.dram.msg_start", {})]
        self._flash_until = 0.0
        self.canvas = DramSchematic(self)
        self.btn_write1, self.btn_write0 = QPushButton(), QPushButton()
        self.btn_read, self.btn_refresh = QPushButton(), QPushButton()
        self.btn_pause = QPushButton()
        self.btn_pause.setCheckable(True)
        self.auto = QCheckBox()
        self.speed = QComboBox()
        self.speed_label = QLabel()
        for name, w in (("dram_write1", self.btn_write1), ("dram_write0", self.btn_write0),
                        ("dram_read", self.btn_read), ("dram_refresh", self.btn_refresh),
                        ("dram_pause", self.btn_pause), ("dram_auto", self.auto), ("dram_speed", self.speed)):
            w.setObjectName(name)
        self.result = QLabel()
        self.result.setObjectName("dram_result")
        self.result.setWordWrap(True)
        self.info = note_label()
        self.note = note_label()
        row = QHBoxLayout()
        for b in (self.btn_write1, self.btn_write0, self.btn_read, self.btn_refresh, self.btn_pause):
            row.addWidget(b)
        row.addStretch(1)
        row2 = QHBoxLayout()
        row2.addWidget(self.auto)
        row2.addStretch(1)
        row3 = QHBoxLayout()
        row3.addWidget(self.speed_label)
        row3.addWidget(shrinkable(self.speed, 24))
        row3.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.canvas)
        lay.addLayout(row)
        lay.addLayout(row2)
        lay.addLayout(row3)
        lay.addWidget(self.result)
        lay.addWidget(self.info)
        lay.addWidget(self.note)
        lay.addStretch(1)
        self.btn_write1.clicked.connect(guarded(lambda: self._op("write", 1)))
        self.btn_write0.clicked.connect(guarded(lambda: self._op("write", 0)))
        self.btn_read.clicked.connect(guarded(lambda: self._op("read")))
        self.btn_refresh.clicked.connect(guarded(lambda: self._op("refresh")))
        self.auto.toggled.connect(self._set_auto)
        self.speed.currentIndexChanged.connect(guarded(lambda _i: self._update_texts()))
        self.btn_pause.toggled.connect(guarded(lambda _c: self._update_texts()))
        self.timer = QTimer(self)
        self.timer.setInterval(33)
        self.timer.timeout.connect(self._tick)
        self.clock = QElapsedTimer()
        self.retranslate()

    # --- model time ---
    def compression(self) -> float:
        """Model seconds per wall-clock second."""
        return COMPRESSIONS_MS_PER_S[max(0, self.speed.currentIndex())] / 1000.0

    def advance(self, model_seconds: float) -> None:
        before = len(self.cell.events)
        self.cell.advance(model_seconds)
        self._record(before)
        self._update_texts()
        self.canvas.update()

    @guarded
    def _tick(self) -> None:
        wall = self.clock.restart() / 1000.0
        if not self.btn_pause.isChecked():
            self.advance(min(wall, 0.2) * self.compression())
        else:
            self.canvas.update()

    def voltage_at(self, t: float) -> float:
        """Capacitor voltage at model time t, from the recorded writes/restores (pure)."""
        v0, ts = 0.0, -math.inf
        for (s, v, _k) in self.segments:
            if s <= t:
                v0, ts = v, s
            else:
                break
        return 0.0 if ts == -math.inf else dram_voltage(v0, t - ts, self.cell.tau)

    def _record(self, before: int) -> None:
        for (t, kind, bit) in self.cell.events[before:]:
            self.segments.append((t, float(bit), kind))
        cutoff = self.cell.now - 4 * WINDOW_S
        while len(self.segments) > 2 and self.segments[1][0] < cutoff:
            self.segments.pop(0)

    # --- operations ---
    def _op(self, kind: str, bit: int | None = None) -> None:
        before = len(self.cell.events)
        if kind == "write":
            self.cell.write(bit)
            self.intended = bit
            self.last_result = None
            self.flash = ("write", bit)
            self._msg = [("silicon.dram.msg_write", {"bit": bit})]
        else:
            v = self.cell.voltage()
            got = self.cell.read() if kind == "read" else self.cell.refresh()
            self.flash = (kind, got)
            if kind == "read":
                self.last_result = got
            key = "silicon.dram.msg_read" if kind == "read" else "silicon.dram.msg_refresh"
            self._msg = [(key, {"bit": got, "v": f"{v:.2f}"})]
            if self.intended is not None and got != self.intended:
                self._msg.append(("silicon.dram.msg_wrong", {"bit": self.intended}))
        self._flash_until = time.monotonic() + FLASH_S
        self._record(before)
        self._update_texts()
        self.canvas.update()

    def flash_active(self) -> bool:
        return self.flash is not None and time.monotonic() < self._flash_until

    @guarded
    def _set_auto(self, on: bool) -> None:
        self.cell.set_auto_refresh(on)
        self._update_texts()

    def retranslate(self) -> None:
        self.btn_write1.setText(tr("silicon.dram.write1"))
        self.btn_write0.setText(tr("silicon.dram.write0"))
        self.btn_read.setText(tr("silicon.dram.read"))
        self.btn_refresh.setText(tr("silicon.dram.refresh"))
        self.auto.setText(tr("silicon.dram.auto", ms=f"{self.cell.refresh_interval * 1000:.0f}"))
        self.speed_label.setText(tr("silicon.dram.speed"))
        i = self.speed.currentIndex()
        self.speed.blockSignals(True)
        self.speed.clear()
        for ms in COMPRESSIONS_MS_PER_S:
            self.speed.addItem(tr("silicon.dram.speed_item", ms=ms, x=f"{1000 / ms:.0f}"))
        self.speed.setCurrentIndex(i if i >= 0 else 2)
        self.speed.blockSignals(False)
        self.note.setText(tr("silicon.dram.note"))
        self._update_texts()
        self.canvas.update()

    def _update_texts(self) -> None:
        c = self.cell
        self.btn_pause.setText(tr("silicon.dram.resume") if self.btn_pause.isChecked() else tr("silicon.dram.pause"))
        self.info.setText(tr("silicon.dram.info", tau=f"{c.tau * 1000:.0f}", th=f"{c.threshold:.2f}",
                             tth=f"{c.threshold_time() * 1000:.1f}", now=f"{c.now * 1000:.1f}",
                             since=f"{c.time_since_write() * 1000:.1f}"))
        self.result.setText(" ".join(tr(k, **f) for k, f in self._msg))
