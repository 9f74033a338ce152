"""Attention toy (C5): "로봇이 컵을 탁자에서 집었다" — click a token, switch heads; line thickness = weight.
Plus the conceptual 2-D "same word, different context" projection."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEasingCurve, QPointF, QRectF, QSize, Qt, QVariantAnimation, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import (QButtonGroup, QHBoxLayout, QHeaderView, QLabel, QRadioButton, QSizePolicy,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from app.docks.experiments.common import ExperimentPanel
from app.i18n import tr
from app.widgets.controls import fit_table_height, fmt, section_label
from app.widgets.paint import qcolor
from compute.teaching import experiments as T
from app.slot_guard import guarded

MAX_LINE = 16.0  # px for weight 1.0


class AttentionView(QWidget):
    """Tokens on a top row (queries) and a bottom row (keys); lines from the selected query to every key it
    may attend to, pen width = 1 + weight × MAX_LINE. Click a token on either row to select it as the query."""

    token_clicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumHeight(230)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.weights = np.eye(len(T.ATTN_TOKENS_KO))
        self.query = 3
        self.gloss = True

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(520, 230)

    def token_rect(self, i: int, row: int) -> QRectF:
        n = len(T.ATTN_TOKENS_KO)
        slot = (self.width() - 20) / n
        y = 8 if row == 0 else self.height() - 62
        return QRectF(10 + i * slot + 6, y, slot - 12, 54)

    def line_widths(self) -> np.ndarray:
        return 1.0 + self.weights[self.query] * MAX_LINE

    @guarded
    def mousePressEvent(self, event):  # noqa: N802
        pos = event.position()
        for row in (0, 1):
            for i in range(len(T.ATTN_TOKENS_KO)):
                if self.token_rect(i, row).contains(pos):
                    self.token_clicked.emit(i)
                    return
        super().mousePressEvent(event)

    @guarded
    def paintEvent(self, _e):  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        pal = self.palette()
        text = pal.windowText().color()
        n = len(T.ATTN_TOKENS_KO)
        w = self.weights[self.query]
        line = qcolor("mla")
        src = self.token_rect(self.query, 0)
        for j in range(n):
            dst = self.token_rect(j, 1)
            if w[j] <= 0:
                p.setPen(QPen(pal.mid().color(), 1, Qt.DotLine))
            else:
                c = QColor(line); c.setAlpha(int(90 + 165 * w[j]))
                p.setPen(QPen(c, 1.0 + w[j] * MAX_LINE, Qt.SolidLine, Qt.RoundCap))
            a = QPointF(src.center().x(), src.bottom())
            b = QPointF(dst.center().x(), dst.top())
            p.drawLine(a, b)
            mid = a + (b - a) * 0.72
            p.setPen(text)
            label = fmt(w[j]) if w[j] > 0 else tr("learn.exp.attention.masked")
            p.drawText(QRectF(mid.x() + 8, mid.y() - 10, 90, 20), Qt.AlignLeft | Qt.AlignVCenter, label)
        big = QFont(self.font()); big.setPointSizeF(self.font().pointSizeF() * 1.2); big.setBold(True)
        small = QFont(self.font()); small.setPointSizeF(self.font().pointSizeF() * 0.85)
        for row in (0, 1):
            for i in range(n):
                r = self.token_rect(i, row)
                sel = row == 0 and i == self.query
                fill = qcolor("mla", 200) if sel else qcolor("weight", 70)
                p.setPen(QPen(qcolor("mla") if sel else pal.mid().color(), 2 if sel else 1))
                p.setBrush(fill)
                p.drawRoundedRect(r, 8, 8)
                p.setPen(text)
                p.setFont(big)
                p.drawText(r.adjusted(0, 4, 0, -22), Qt.AlignCenter, T.ATTN_TOKENS_KO[i])
                if self.gloss:
                    p.setFont(small)
                    p.drawText(r.adjusted(0, 30, 0, -2), Qt.AlignCenter, T.ATTN_TOKENS_EN[i])
        p.end()


# Conceptual 2-D map: hand-placed points (NOT a real embedding). Context A = the robot picks up the cup;
# context B = coffee is poured into the cup.
MAP_WORDS = {
    "grasp": (-0.70, 0.55), "robot": (-0.85, 0.15), "table": (-0.10, 0.80),
    "coffee": (0.78, -0.60), "drink": (0.86, 0.12), "water": (0.35, -0.80),
}
CUP_POS = {"a": (-0.45, 0.40), "b": (0.55, -0.30)}


class ContextMap(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumHeight(220)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.context = "a"
        self.t = 0.0  # 0 = where "컵" sits in context A, 1 = in context B (animated between them)
        self.anim = QVariantAnimation(self)
        self.anim.setDuration(450)
        self.anim.setEasingCurve(QEasingCurve.InOutCubic)
        self.anim.valueChanged.connect(self._moved)

    def set_context(self, ctx: str) -> None:
        self.context = ctx
        self.anim.stop()
        self.anim.setStartValue(float(self.t))
        self.anim.setEndValue(0.0 if ctx == "a" else 1.0)
        self.anim.start()

    @guarded
    def _moved(self, value) -> None:
        self.t = float(value)
        self.update()

    def cup_position(self) -> tuple[float, float]:
        (ax, ay), (bx, by) = CUP_POS["a"], CUP_POS["b"]
        return ax + self.t * (bx - ax), ay + self.t * (by - ay)

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(420, 220)

    def to_px(self, x: float, y: float) -> QPointF:
        return QPointF(self.width() / 2 + x * (self.width() / 2 - 50), self.height() / 2 - y * (self.height() / 2 - 24))

    @guarded
    def paintEvent(self, _e):  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        pal = self.palette()
        p.setPen(QPen(pal.mid().color(), 1, Qt.DashLine))
        p.drawLine(self.to_px(-1, 0), self.to_px(1, 0))
        p.drawLine(self.to_px(0, -1), self.to_px(0, 1))
        for word, (x, y) in MAP_WORDS.items():
            c = self.to_px(x, y)
            p.setPen(Qt.NoPen); p.setBrush(qcolor("weight")); p.drawEllipse(c, 5, 5)
            p.setPen(pal.windowText().color())
            p.drawText(QRectF(c.x() - 60, c.y() + 6, 120, 18), Qt.AlignHCenter, tr(f"learn.exp.attention.word.{word}"))
        for ctx, (x, y) in CUP_POS.items():  # faint marks where "컵" sits in each context
            if ctx == self.context:
                continue
            c = self.to_px(x, y)
            p.setPen(QPen(qcolor("output", 90), 1, Qt.DashLine)); p.setBrush(Qt.NoBrush)
            p.drawEllipse(c, 7, 7)
            p.setPen(pal.mid().color())
            p.drawText(QRectF(c.x() + 12, c.y() - 9, 160, 18), Qt.AlignLeft | Qt.AlignVCenter,
                       tr("learn.exp.attention.cup", ctx=ctx.upper()))
        c = self.to_px(*self.cup_position())
        col = qcolor("output")
        p.setPen(QPen(col.darker(120), 2)); p.setBrush(col)
        p.drawEllipse(c, 9, 9)
        f = QFont(self.font()); f.setBold(True); p.setFont(f)
        p.setPen(pal.windowText().color())
        p.drawText(QRectF(c.x() + 13, c.y() - 9, 160, 18), Qt.AlignLeft | Qt.AlignVCenter,
                   tr("learn.exp.attention.cup", ctx=self.context.upper()))
        p.end()


class AttentionPanel(ExperimentPanel):
    def __init__(self, parent=None):
        super().__init__("attention", "mla", parent)
        self.sentence = QLabel(); self.sentence.setWordWrap(True); self.sentence.setTextFormat(Qt.RichText)
        self.body.addWidget(self.sentence)
        heads = QHBoxLayout()
        self.heads_label = QLabel()
        heads.addWidget(self.heads_label)
        self.head_group = QButtonGroup(self)
        self.head_buttons = []
        for h in range(T.ATTN_HEADS):
            rb = QRadioButton(); rb.setObjectName(f"attention_head_{h}")
            self.head_group.addButton(rb, h); self.head_buttons.append(rb); heads.addWidget(rb)
        heads.addStretch(1)
        self.head_buttons[0].setChecked(True)
        self.body.addLayout(heads)
        self.view = AttentionView()
        self.view.setObjectName("attention_view")
        self.body.addWidget(self.view)
        self.hint = QLabel(); self.hint.setWordWrap(True); self.hint.setTextFormat(Qt.RichText)
        self.body.addWidget(self.hint)
        self.matrix_title = section_label()
        self.body.addWidget(self.matrix_title)
        self.matrix = QTableWidget(len(T.ATTN_TOKENS_KO), len(T.ATTN_TOKENS_KO))
        self.matrix.setObjectName("attention_matrix")
        self.matrix.setEditTriggers(QTableWidget.NoEditTriggers)
        self.matrix.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.matrix.setMinimumHeight(150)
        self.body.addWidget(self.matrix)
        self.warning = QLabel(); self.warning.setWordWrap(True); self.warning.setObjectName("attention_warning")
        self.warning.setTextFormat(Qt.RichText)
        self.body.addWidget(self.warning)
        self.map_title = section_label()
        self.body.addWidget(self.map_title)
        ctx = QVBoxLayout()
        self.ctx_group = QButtonGroup(self)
        self.ctx_a = QRadioButton(); self.ctx_a.setObjectName("attention_ctx_a")
        self.ctx_b = QRadioButton(); self.ctx_b.setObjectName("attention_ctx_b")
        self.ctx_group.addButton(self.ctx_a, 0); self.ctx_group.addButton(self.ctx_b, 1)
        self.ctx_a.setChecked(True)
        ctx.addWidget(self.ctx_a); ctx.addWidget(self.ctx_b)
        self.body.addLayout(ctx)
        self.map = ContextMap(); self.map.setObjectName("attention_map")
        self.body.addWidget(self.map)
        self.map_note = QLabel(); self.map_note.setWordWrap(True)
        self.body.addWidget(self.map_note)

        self.view.token_clicked.connect(self.set_query)
        self.head_group.idToggled.connect(guarded(lambda _i, on: on and self.recompute()))
        self.ctx_group.idToggled.connect(self._context)
        self.retranslate()

    def head(self) -> int:
        return self.head_group.checkedId()

    @guarded
    def set_query(self, i: int):
        self.view.query = i
        self.recompute()

    @guarded
    def _context(self, i: int, on: bool):
        if on:
            self.map.set_context("ab"[i])

    @guarded
    def recompute(self, *_):
        _q, _k, a = T.attention_toy(self.head())
        self.view.weights = a
        self.view.update()
        toks = T.ATTN_TOKENS_KO
        for i in range(len(toks)):
            for j in range(len(toks)):
                item = QTableWidgetItem(fmt(a[i, j]) if j <= i else "—")
                item.setTextAlignment(Qt.AlignCenter)
                if i == self.view.query:
                    f = item.font(); f.setBold(True); item.setFont(f)
                self.matrix.setItem(i, j, item)
        q = self.view.query
        qv, kv, _a = T.attention_toy(self.head())
        scores = qv[q] @ kv[: q + 1].T / np.sqrt(qv.shape[1])
        self.hint.setText(tr("learn.exp.attention.hint", token=toks[q], head=self.head() + 1,
                             best=toks[int(np.argmax(a[q]))], w=fmt(float(np.max(a[q]))))
                          + "<br>" + tr("learn.exp.attention.scores", q="[" + ", ".join(fmt(x, 2) for x in qv[q]) + "]",
                                        s="[" + ", ".join(fmt(x, 2) for x in scores) + "]",
                                        a="[" + ", ".join(fmt(x) for x in a[q, : q + 1]) + "]"))

    def retranslate(self):
        self.retranslate_frame()
        self.sentence.setText(tr("learn.exp.attention.sentence"))
        self.heads_label.setText(tr("learn.exp.attention.heads"))
        for h, rb in enumerate(self.head_buttons):
            rb.setText(tr(f"learn.exp.attention.head{h + 1}"))
        self.matrix_title.setText(tr("learn.exp.attention.matrix"))
        labels = [f"{ko}" for ko in T.ATTN_TOKENS_KO]
        self.matrix.setHorizontalHeaderLabels(labels)
        self.matrix.setVerticalHeaderLabels(labels)
        fit_table_height(self.matrix)
        self.warning.setText(tr("learn.exp.attention.warning"))
        self.map_title.setText(tr("learn.exp.attention.map_title"))
        self.ctx_a.setText(tr("learn.exp.attention.ctx_a"))
        self.ctx_b.setText(tr("learn.exp.attention.ctx_b"))
        self.map_note.setText(tr("learn.exp.attention.map_note"))
        self.map.update()
        self.recompute()
