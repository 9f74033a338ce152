"""R1: the four meanings of "routing" as four cards, each with a small animated diagram of what moves,
who decides and by which rule. The MoE card shows the engine's real selection for the current token and layer
when a trace exists."""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QImage, QPainter, QPen
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from app.docks.experts.model import routing
from app.docks.routing.anim import BG, EDGE, MUTED, PANEL, TEXT, AnimatedDiagram
from app.i18n import tr
from app.widgets.controls import ResponsiveGrid
from app.widgets.paint import along, arrow, box, caption, dot, fit_text, label, line, qcolor
from app.widgets.safe_text import esc, rich_tr
from scene.layout import ModelDims
from scene.tooltips import model_args
from app.slot_guard import guarded

PACKET = qcolor("packet")
REQUEST = qcolor("request")
DATA = qcolor("expert")


class NetworkDiagram(AnimatedDiagram):
    """Host A → switch (MAC) → router → router (IP) → host B; the IP destination stays, the MAC changes per hop."""

    def draw(self, p, w, h):
        y = h * 0.52
        xs = [w * f for f in (0.08, 0.29, 0.50, 0.71, 0.92)]
        names = [tr("routing.net.host_a"), tr("routing.net.switch"), tr("routing.net.router") + " 1",
                 tr("routing.net.router") + " 2", tr("routing.net.host_b")]
        bw, bh = min(74.0, w * 0.16), 34.0
        for i in range(4):
            line(p, QPointF(xs[i] + bw / 2, y), QPointF(xs[i + 1] - bw / 2, y), EDGE, 2)
        for i, (x, n) in enumerate(zip(xs, names)):
            fill = qcolor("network_node") if i in (2, 3) else PANEL
            box(p, QRectF(x - bw / 2, y - bh / 2, bw, bh), fill, label=n)
        label(p, xs[1], y + bh / 2 + 12, tr("routing.net.by_mac"))
        label(p, (xs[2] + xs[3]) / 2, y + bh / 2 + 12, tr("routing.net.by_ip"), w=200)
        t = self.phase(4.0)
        pos = along([QPointF(x, y) for x in xs], t)
        dot(p, pos, PACKET, 6)
        hop = min(3, int(t * 4))
        next_mac = [tr("routing.net.router") + " 1", tr("routing.net.router") + " 1", tr("routing.net.router") + " 2",
                    tr("routing.net.host_b")][hop]
        r = QRectF(min(max(4.0, pos.x() - 70), w - 144), y - bh / 2 - 44, 140, 34)
        box(p, r, qcolor("packet_fill"), PACKET, label=f"IP → 203.0.113.7\nMAC → {next_mac}", text=TEXT, radius=4)
        caption(p, w, h, tr("routing.net.caption"))


class MemoryDiagram(AnimatedDiagram):
    """SM (warps) → L1/SMEM → L2 → memory controller → HBM; a request goes out by address, data comes back."""

    def draw(self, p, w, h):
        y = h * 0.48
        names = ["SM · warp", "L1 / SMEM", "L2", tr("routing.mem.controller"), "HBM"]
        xs = [w * f for f in (0.09, 0.29, 0.49, 0.69, 0.90)]
        bw, bh = min(78.0, w * 0.17), 38.0
        for i in range(4):
            line(p, QPointF(xs[i] + bw / 2, y), QPointF(xs[i + 1] - bw / 2, y), EDGE, 2)
        fills = [qcolor("kda").darker(220), PANEL, PANEL, PANEL, qcolor("state").darker(250)]
        for x, n, f in zip(xs, names, fills):
            box(p, QRectF(x - bw / 2, y - bh / 2, bw, bh), f, label=n)
        t = self.phase(3.0)
        pts = [QPointF(x, y) for x in xs]
        if t < 0.5:  # request travels out with its address
            pos = along(pts, t * 2)
            dot(p, pos, REQUEST, 5)
            label(p, pos.x(), y - bh / 2 - 14, "addr 0x7f3a_2c40", REQUEST, w=130)
        else:  # 128-byte line comes back
            pos = along(pts[::-1], (t - 0.5) * 2)
            dot(p, pos, DATA, 6)
            label(p, pos.x(), y - bh / 2 - 14, tr("routing.mem.line"), DATA, w=130)
        p.setPen(MUTED)  # two lines when the dock is narrow (one line ran past both edges at 388 px)
        fit_text(p, QRectF(5, y + bh / 2 + 5, w - 10, 34), tr("routing.mem.tlb"),
                 Qt.AlignHCenter | Qt.AlignTop | Qt.TextWordWrap)
        caption(p, w, h, tr("routing.mem.caption"))


class InterconnectDiagram(AnimatedDiagram):
    """8 GPUs around an NVSwitch; cycles AllReduce (ring), AllGather and the expert-parallel all-to-all; a NIC
    leads to other servers over InfiniBand / RoCE."""

    MODES = ("AllReduce", "AllGather", "all-to-all (EP)")

    def draw(self, p, w, h):
        cx, cy = w * 0.36, h * 0.50
        R = min(w * 0.27, h * 0.34)
        n = 8
        centers = [QPointF(cx + R * math.cos(2 * math.pi * i / n - math.pi / 2),
                           cy + R * math.sin(2 * math.pi * i / n - math.pi / 2)) for i in range(n)]
        sw = QRectF(cx - 34, cy - 15, 68, 30)
        for c in centers:
            line(p, c, sw.center(), qcolor("link"), 1.5)
        p.setPen(qcolor("link_dim"))
        p.setBrush(Qt.NoBrush)
        p.drawEllipse(QPointF(cx, cy), R, R)  # the logical ring of the ring algorithms
        box(p, sw, qcolor("switch"), label="NVSwitch")
        for i, c in enumerate(centers):
            box(p, QRectF(c.x() - 22, c.y() - 13, 44, 26), qcolor("kda").darker(230), label=f"GPU{i}")
        period = 3.0
        cycle = int(self.seconds() / period) % 3
        t = self.phase(period)
        mode = self.MODES[cycle]
        if cycle == 0:  # ring AllReduce: each GPU sends a chunk to its neighbour along the ring
            for i in range(n):
                ang = 2 * math.pi * (i + 0.2 + 0.6 * t) / n - math.pi / 2
                dot(p, QPointF(cx + R * math.cos(ang), cy + R * math.sin(ang)), PACKET, 4)
        elif cycle == 1:  # AllGather: every GPU's shard reaches every other GPU (via the switch)
            for i in range(n):
                src = centers[i]
                dot(p, along([src, sw.center()], min(1.0, t * 2)) if t < 0.5 else
                    along([sw.center(), centers[(i + 1 + int(t * 14)) % n]], (t - 0.5) * 2), REQUEST, 4)
        else:  # all-to-all: tokens go to the GPUs that hold their experts
            for i in range(n):
                for j in (2, 5):
                    dst = centers[(i + j) % n]
                    pt = along([centers[i], sw.center(), dst], t)
                    dot(p, pt, DATA, 3.5)
        label(p, 8, 12, tr("routing.gpu.now", mode=mode), TEXT, Qt.AlignLeft, w=w * 0.5)
        # other servers
        nic = QRectF(w * 0.74, cy - 16, w * 0.22, 32)
        box(p, nic, PANEL, label="NIC")
        arrow(p, QPointF(sw.right(), cy), QPointF(nic.left(), cy), EDGE, 1.2)
        label(p, nic.center().x(), nic.bottom() + 12, "InfiniBand / RoCE", MUTED, w=w * 0.36)
        label(p, nic.center().x(), nic.bottom() + 26, tr("routing.gpu.other_servers"), MUTED, w=w * 0.36)
        caption(p, w, h, tr("routing.gpu.caption"))


class MoEDiagram(AnimatedDiagram):
    """Token → router → the shown model's routed experts (32 dots a row; K3: 896 = 32 × 28), its top-k chosen
    lit; from the engine's trace when there is one."""

    COLS = 32

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state

    def text_args(self) -> dict:
        """The shown model's numbers for the card's texts ({experts}, {top_k}, {model})."""
        return model_args(ModelDims.from_config(getattr(self.state, "config", None)))

    def selection(self):
        """(expert ids, caption) for the current token and layer from the trace, else (empty, caption)."""
        st = self.state
        r = routing(st.trace, st.token, st.layer, st.pass_index) if st is not None and st.trace is not None else None
        if r is None:
            return np.zeros(0, dtype=int), tr("routing.moe.no_trace")
        return r.selected, tr("routing.moe.from_trace", layer=st.layer + 1, token=st.token, **self.text_args())

    def draw(self, p, w, h):
        sel, cap = self.selection()
        y = h * 0.48
        tok = QRectF(w * 0.03, y - 18, w * 0.12, 36)  # "x (token)" takes two lines in a narrow dock
        box(p, tok, qcolor("activation").darker(200), label="x (token)")
        rt = QRectF(w * 0.19, y - 22, w * 0.19, 44)
        text = "router\nsigmoid(W_r·x) + b"
        for formula in ("sigmoid(W_r·x) + b", "σ(W_r·x) + b", "σ(W_r·x)+b"):  # the widest that fits one line
            text = f"router\n{formula}"
            if p.fontMetrics().horizontalAdvance(formula) <= rt.width() - 6:
                break
        box(p, rt, qcolor("router"), label=text)
        arrow(p, QPointF(tok.right(), y), QPointF(rt.left(), y), EDGE)
        args = self.text_args()
        n = int(args["experts"].replace(",", ""))
        cols = self.COLS
        rows = -(-n // cols)
        cell = min((w * 0.54) / cols, (h * 0.72) / rows)
        gx, gy = w * 0.43, y - rows * cell / 2
        lit = set(int(e) for e in sel)
        rgba = np.zeros((cols * rows, 4), dtype=np.uint8)  # one image for all the experts' cells
        rgba[:] = (52, 60, 74, 255)
        rgba[n:] = (BG.red(), BG.green(), BG.blue(), 255)  # a last row the experts do not fill
        if lit:
            rgba[sorted(lit)] = (DATA.red(), DATA.green(), DATA.blue(), 255)
        self._buf = np.ascontiguousarray(rgba.reshape(rows, cols, 4))
        img = QImage(self._buf.data, cols, rows, cols * 4, QImage.Format_RGBA8888)
        area = QRectF(gx, gy, cols * cell, rows * cell)
        p.setRenderHint(QPainter.Antialiasing, False)
        p.drawImage(area, img)
        gap = QPen(BG)
        gap.setWidthF(1.0)
        p.setPen(gap)
        p.drawLines([QLineF(gx + c * cell, gy, gx + c * cell, area.bottom()) for c in range(cols + 1)]
                    + [QLineF(gx, gy + r * cell, area.right(), gy + r * cell) for r in range(rows + 1)])
        p.setRenderHint(QPainter.Antialiasing, True)
        t = self.phase(2.5)
        for e in sorted(lit):
            r_, c_ = divmod(e, cols)
            dst = QPointF(gx + (c_ + 0.5) * cell, gy + (r_ + 0.5) * cell)
            line(p, QPointF(rt.right(), y), dst, qcolor("route"), 1)
            dot(p, along([QPointF(rt.right(), y), dst], t), DATA, 2.5)
        label(p, gx + cols * cell / 2, gy - 10, tr("routing.moe.grid", **args), TEXT, w=w * 0.6)
        caption(p, w, h, cap)


CARDS = ("net", "mem", "gpu", "moe")


class MeaningCard(QFrame):
    def __init__(self, key: str, diagram: AnimatedDiagram, parent=None):
        super().__init__(parent)
        self.key = key
        self.setObjectName(f"routing.card.{key}")
        self.setFrameShape(QFrame.StyledPanel)
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: bold; font-size: 11pt;")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.diagram = diagram
        self.facts = QLabel()
        self.facts.setWordWrap(True)
        self.facts.setTextFormat(Qt.RichText)
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.summary)
        lay.addWidget(diagram, 1)
        lay.addWidget(self.facts)

    def retranslate(self):
        k = self.key
        args = getattr(self.diagram, "text_args", dict)()  # the MoE card names the shown model's numbers
        self.title.setText(tr(f"routing.{k}.title"))
        self.summary.setText(tr(f"routing.{k}.summary"))
        self.facts.setText(
            f"<b>{esc(tr('routing.what'))}</b> {rich_tr(f'routing.{k}.what', **args)}<br>"  # args name the model
            f"<b>{esc(tr('routing.who'))}</b> {rich_tr(f'routing.{k}.who', **args)}<br>"
            f"<b>{esc(tr('routing.rule'))}</b> {rich_tr(f'routing.{k}.rule', **args)}")
        self.diagram.update()


class MeaningsTab(QWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        diagrams = {"net": NetworkDiagram(), "mem": MemoryDiagram(), "gpu": InterconnectDiagram(),
                    "moe": MoEDiagram(state)}
        self.cards = {k: MeaningCard(k, diagrams[k]) for k in CARDS}
        inner = ResponsiveGrid(860)  # 2 × 2 cards in a wide dock, one column in the default narrow one
        for k in CARDS:
            self.cards[k].setMinimumHeight(430)
            inner.addWidget(self.cards[k])
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)
        scroll.setFrameShape(QFrame.NoFrame)
        lay = QVBoxLayout(self)
        lay.addWidget(self.intro)
        lay.addWidget(scroll, 1)
        for sig in (state.trace_changed, state.layer_changed, state.token_changed, state.pass_changed):
            sig.connect(guarded(lambda *_: self.cards["moe"].diagram.update()))
        state.config_changed.connect(guarded(lambda _cfg: self.cards["moe"].retranslate()))  # its texts name the model
    def retranslate(self):
        self.intro.setText(tr("routing.meanings.intro"))
        for c in self.cards.values():
            c.retranslate()
