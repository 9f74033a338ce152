"""R4: the seed's logical-router teaching example (top-2 of 4 experts), with K3's rule next to it.

Constructed numbers (labelled in the UI): a 4-wide hidden vector h per input condition and a fixed 4×4 router
matrix. Left: the seed's older softmax form  r = W_router·h, p = softmax(r), selected = TopK(p, 2).
Right: the same logits through K3's rule  s = sigmoid(r), idx = TopK(s + b, 2), w = s[idx] / Σ s[idx].
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPen
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.docks.routing.anim import EDGE, MUTED, PANEL, TEXT, AnimatedDiagram
from app.docks.routing.model import CONDITIONS, H, W_ROUTER, k3_router, logical_router
from app.i18n import tr
from app.widgets.paint import along, arrow, box, css, dot, label, qcolor
from app.slot_guard import guarded

class RouterToyDiagram(AnimatedDiagram):
    def __init__(self, parent=None):
        super().__init__(parent, (400, 260))
        policy = self.sizePolicy()
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.condition = "robot"
        self.bias = np.zeros(4)

    def compute(self):
        h = H[self.condition]
        r, p, idx = logical_router(h, W_ROUTER)
        s, idx3, w3 = k3_router(r, self.bias)
        return h, r, p, idx, s, idx3, w3

    def draw(self, p, w, h_):
        """Wide: h | W | experts | softmax bars | K3 bars in one row. Narrow (< 700 px): the bars go below."""
        h, r, prob, idx, s, idx3, w3 = self.compute()
        gold = qcolor("expert")
        narrow = w < 700
        ch = 26.0
        x0, y0 = 10.0, 40.0
        band = 4 * (ch + 10)  # height of one block of four rows
        span = w if narrow else w * 0.48  # width of the h | W | experts part
        label(p, x0 + 25, y0 - 16, "h", TEXT, w=60)
        for i, v in enumerate(h):
            box(p, QRectF(x0, y0 + i * (ch + 10), 50, ch + 4), qcolor("activation").darker(200 if v < 0.5 else 140),
                label=f"{v:+.2f}")
        rt = QRectF(x0 + 50 + span * 0.08, y0 - 4, max(130.0, span * 0.36), band + 2)
        box(p, rt, qcolor("router"))
        p.setPen(TEXT)
        p.drawText(QRectF(rt.left(), rt.top() - 20, rt.width(), 18), Qt.AlignCenter, "W_router (4 × 4) · h")
        for e in range(4):  # the constructed matrix, one row per expert
            p.setPen(MUTED)
            p.drawText(QRectF(rt.left() + 4, y0 + e * (ch + 10), rt.width() - 8, ch + 4), Qt.AlignCenter,
                       " ".join(f"{v:+.1f}" for v in W_ROUTER[e]))
        arrow(p, QPointF(x0 + 52, rt.center().y()), QPointF(rt.left(), rt.center().y()), EDGE)
        ex_x = rt.right() + span * 0.12
        for e in range(4):
            r_ = QRectF(ex_x, y0 + e * (ch + 10), 46, ch + 4)
            on = e in idx
            box(p, r_, gold.darker(110) if on else PANEL, qcolor("highlight") if on else EDGE, label=f"E{e}",
                text=qcolor("ink") if on else MUTED)
            a = QPointF(rt.right(), rt.center().y())
            b = QPointF(r_.left(), r_.center().y())
            arrow(p, a, b, gold if on else qcolor("wire_off"), 2.0 if on else 1.0)
            if on:
                dot(p, along([a, b], self.phase(1.6)), gold, 4)
        label(p, ex_x + 23, y0 - 16, tr("routing.toy.seed_pick"), TEXT, w=120)

        def bars(x, top, bw, title, values, chosen, fmt, weights=None):
            label(p, x + bw / 2, top - 16, title, TEXT, w=bw + 20)
            for e, v in enumerate(values):
                yy = top + e * (ch + 10)
                full = QRectF(x, yy, bw, ch + 4)
                p.fillRect(full, qcolor("bar_track"))
                p.fillRect(QRectF(x, yy, bw * float(v), ch + 4), gold if e in chosen else qcolor("bar_off"))
                txt = f"E{e}  {fmt.format(v)}"
                if weights is not None and e in chosen:
                    txt += f"  w={weights[list(chosen).index(e)]:.3f}"
                p.setPen(TEXT)
                p.drawText(full.adjusted(4, 0, -2, 0), Qt.AlignVCenter | Qt.AlignLeft, txt)
                if weights is not None and self.bias[e] != 0:  # the bias marker: s + b
                    xb = x + bw * float(min(max(v + self.bias[e], 0.0), 1.0))
                    pen = QPen(qcolor("focus"))
                    pen.setWidthF(2.0)
                    p.setPen(pen)
                    p.drawLine(QPointF(xb, yy), QPointF(xb, yy + ch + 4))

        if narrow:
            top2 = y0 + band + 40
            bw = (w - 30) / 2
            bars(10, top2, bw, tr("routing.toy.softmax_title"), prob, list(idx), "p={:.3f}")
            bars(20 + bw, top2, bw, tr("routing.toy.k3_title"), s, list(idx3), "s={:.3f}", w3)
            yb = top2 + band + 8
        else:
            bw = w * 0.24
            bars(w * 0.50, y0, bw, tr("routing.toy.softmax_title"), prob, list(idx), "p={:.3f}")
            bars(w * 0.76 - 6, y0, bw, tr("routing.toy.k3_title"), s, list(idx3), "s={:.3f}", w3)
            yb = y0 + band + 8
        r_txt = "  ".join(f"r{e}={v:+.2f}" for e, v in enumerate(r))
        p.setPen(TEXT)
        p.drawText(QRectF(8, yb, w - 16, 18), Qt.AlignCenter, "r = W·h:  " + r_txt)
        p.setPen(MUTED)
        p.drawText(QRectF(8, yb + 20, w - 16, 70), Qt.AlignHCenter | Qt.AlignTop | Qt.TextWordWrap,
                   tr("routing.toy.formula_softmax") + "\n" + tr("routing.toy.formula_k3"))

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        band = 4 * (26.0 + 10)
        return int(40 + band + (band + 40 if width < 700 else 0) + 8 + 20 + 64)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True


class RouterToyTab(QWidget):
    def __init__(self, state=None, parent=None):
        super().__init__(parent)
        self.badge = QLabel()
        self.badge.setStyleSheet(f"background:{css('badge_fill')}; color:{css('badge_text')}; padding:3px 6px; border-radius:4px;")
        self.badge.setWordWrap(True)
        self.cond_label = QLabel()
        self.condition = QComboBox()
        self.condition.setObjectName("routing.toy.condition")
        self.condition.addItems([""] * len(CONDITIONS))
        # as wide as its longest condition: the English robot condition is 45 characters, and a 20-character
        # minimum cut it off at any dock width
        self.condition.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.diagram = RouterToyDiagram(self)
        self.diagram.setObjectName("routing.toy.diagram")
        self.result = QLabel()
        self.result.setObjectName("routing.toy.result")
        self.result.setWordWrap(True)
        self.result.setTextFormat(Qt.RichText)
        self.caveat = QLabel()
        self.caveat.setWordWrap(True)
        self.caveat.setStyleSheet(f"color: {css('caveat')};")
        self.bias_label = QLabel()
        self.bias_spins = []
        row = QHBoxLayout()
        row.addWidget(self.cond_label)
        row.addWidget(self.condition)
        row.addStretch(1)
        row2 = QHBoxLayout()
        row = (row, row2)

        for e in range(4):
            sp = QDoubleSpinBox()
            sp.setObjectName(f"routing.toy.bias{e}")
            sp.setRange(-1.0, 1.0)
            sp.setSingleStep(0.05)
            sp.setDecimals(2)
            sp.setPrefix(f"b{e} ")
            sp.valueChanged.connect(self._on_bias)
            self.bias_spins.append(sp)
            row2.addWidget(sp)
        row2.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.badge)
        lay.addLayout(row[0])
        lay.addWidget(self.bias_label)
        lay.addLayout(row[1])
        lay.addWidget(self.diagram, 1)
        lay.addWidget(self.result)
        lay.addWidget(self.caveat)
        lay.addStretch(0)
        self.condition.currentIndexChanged.connect(self._on_condition)
        self.retranslate()

    @guarded
    def _on_condition(self, i: int):
        self.diagram.condition = CONDITIONS[max(0, i)]
        self.diagram.update()
        self._update_result()

    @guarded
    def _on_bias(self, *_):
        self.diagram.bias = np.array([sp.value() for sp in self.bias_spins])
        self.diagram.update()
        self._update_result()

    def _update_result(self):
        h, r, p, idx, s, idx3, w3 = self.diagram.compute()
        soft = ", ".join(f"E{e} (p={p[e]:.3f})" for e in idx)
        k3 = ", ".join(f"E{e} (w={w:.3f})" for e, w in zip(idx3, w3))
        self.result.setText(tr("routing.toy.result", soft=soft, k3=k3) + "<br>" + tr("routing.toy.same_note"))

    def retranslate(self):
        self.badge.setText(tr("routing.toy.badge"))
        self.cond_label.setText(tr("routing.toy.condition"))
        self.bias_label.setText(tr("routing.toy.bias"))
        for i, c in enumerate(CONDITIONS):
            self.condition.setItemText(i, tr(f"routing.toy.cond.{c}"))
        self.caveat.setText(tr("routing.toy.caveat"))
        self._update_result()
        self.diagram.update()
