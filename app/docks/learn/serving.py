"""Serving panel (X5): multi-GPU traffic diagram, prefix cache / speculative decoding / fleet affinity / PD
disaggregation notes, and live arithmetic from the seed's reported numbers (cost per turn from editable
prices, KV capacity, speculative-decoding expectation)."""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel,
                               QScrollArea, QSizePolicy, QSpinBox, QVBoxLayout, QWidget)

from app.i18n import language, tr
from app.texts import explanation
from app.widgets.controls import FloatSlider, fmt, scroll_page
from app.widgets.markdown import demote_headings, markdown_label
from app.widgets.paint import fit_text, qcolor
from compute.teaching import experiments as T
from app.slot_guard import guarded

KV_TOKENS_REPORTED = 3.25e6  # seed 003: a B300 node holds ~3.25M tokens of KV after the weights
TOPIC_CARDS = ("prefix_cache", "speculative", "fleet_affinity", "pd_disaggregation")




SCENARIOS = ("decode", "all_to_all", "prefix", "pd")
EXPERT_GPUS = (2, 5, 7)  # constructed: the GPUs holding this token's selected experts in the all-to-all view


class TrafficDiagram(QWidget):
    """One 8-GPU node: each GPU = HBM (weights | MLA cache | KDA state) + SMs; NVLink switch between them;
    the CPU host above. A scenario highlights what moves where. Conceptual: proportions are not to scale."""

    PARTS = (("weight", 0.62, "learn.serving.diagram.weights"), ("state", 0.24, "learn.serving.diagram.mla"),
             ("kda", 0.14, "learn.serving.diagram.kda"))

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumHeight(344)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.scenario = "decode"
        self.text_boxes: list[tuple[QRectF, QRectF]] = []  # (box, where its label went) of the last paint

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(640, 344)

    def set_scenario(self, name: str) -> None:
        if name not in SCENARIOS:
            raise ValueError(f"unknown scenario {name!r}")
        self.scenario = name
        self.update()

    def gpu_rects(self) -> list[QRectF]:
        w = self.width()
        n, gap = 4, 10
        gw = (w - 20 - gap * (n - 1)) / n
        rects = []
        for row in range(2):
            for i in range(n):
                rects.append(QRectF(10 + i * (gw + gap), 52 + row * 112, gw, 92))
        return rects

    def bar_rect(self) -> QRectF:
        return QRectF(10, 278, self.width() - 20, 30)

    def active(self) -> dict[str, object]:
        """What the current scenario lights: 'hbm' parts per GPU, 'sm' GPUs, 'nvlink' GPUs, 'pd' flag."""
        sc, all8 = self.scenario, set(range(8))
        if sc == "decode":
            return {"hbm": {"weight", "state", "kda"}, "sm": all8, "nvlink": set(), "pd": False}
        if sc == "all_to_all":
            return {"hbm": {"weight"}, "sm": {0, *EXPERT_GPUS}, "nvlink": {0, *EXPERT_GPUS}, "pd": False}
        if sc == "prefix":
            return {"hbm": {"state", "kda"}, "sm": set(), "nvlink": set(), "pd": False}
        return {"hbm": {"state", "kda"}, "sm": all8, "nvlink": all8, "pd": True}

    @guarded
    def paintEvent(self, _e):  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        pal = self.palette()
        text = pal.windowText().color()
        w = self.width()
        act = self.active()
        self.text_boxes = []
        small = QFont(self.font()); small.setPointSizeF(self.font().pointSizeF() * 0.85)
        bold = QFont(self.font()); bold.setBold(True)
        host = QRectF(w / 2 - 150, 4, 300, 30)
        p.setPen(QPen(pal.mid().color(), 1)); p.setBrush(qcolor("weight", 60)); p.drawRoundedRect(host, 6, 6)
        p.setPen(text); p.setFont(small); self._text(p, host, tr("learn.serving.diagram.host"))
        p.setPen(QPen(pal.mid().color(), 1, Qt.DashLine)); p.drawLine(QPointF(w / 2, 34), QPointF(w / 2, 50))
        bar = self.bar_rect()
        nv = qcolor("activation")
        for g, r in enumerate(self.gpu_rects()):
            on = g in act["nvlink"]
            p.setPen(QPen(nv if on else qcolor("activation", 70), 5 if on else 2))
            p.drawLine(QPointF(r.center().x(), r.bottom()), QPointF(r.center().x(), bar.top()))
        p.setPen(QPen(nv.darker(130), 2 if act["nvlink"] else 1))
        p.setBrush(qcolor("activation", 150 if act["nvlink"] else 60)); p.drawRoundedRect(bar, 6, 6)
        p.setPen(text); p.setFont(small); self._text(p, bar, tr("learn.serving.diagram.nvlink"))
        for g, r in enumerate(self.gpu_rects()):
            p.setPen(QPen(pal.mid().color(), 1)); p.setBrush(pal.base()); p.drawRoundedRect(r, 6, 6)
            p.setPen(text); p.setFont(bold)
            head = f"GPU {g}"
            if act["pd"]:
                head += " · " + tr("learn.serving.diagram.prefill_pool" if g < 4 else "learn.serving.diagram.decode_pool")
            self._text(p, QRectF(r.x() + 6, r.y() + 2, r.width() - 12, 18), head, Qt.AlignLeft | Qt.AlignVCenter)
            p.setFont(small)
            hbm = QRectF(r.x() + 6, r.y() + 22, r.width() - 12, 34)
            x = hbm.x()
            for role, share, key in self.PARTS:
                seg = QRectF(x, hbm.y(), hbm.width() * share, hbm.height())
                lit = role in act["hbm"]
                p.setPen(QPen(text, 2) if lit else Qt.NoPen)
                p.setBrush(qcolor(role, 200 if lit else 70))
                p.drawRect(seg)
                if g == 0 and QFontMetrics(small).horizontalAdvance(tr(key)) + 4 <= seg.width():
                    p.setPen(text)  # named in place where the part is wide enough, always in the key below
                    self._text(p, seg.adjusted(1, 1, -1, -1), tr(key))
                x += seg.width()
            sm = QRectF(r.x() + 6, r.y() + 60, r.width() - 12, 26)
            lit = g in act["sm"]
            p.setPen(QPen(qcolor("output"), 2 if lit else 1)); p.setBrush(qcolor("output", 110 if lit else 30))
            p.drawRoundedRect(sm, 4, 4)
            p.setPen(text); self._text(p, sm.adjusted(2, 1, -2, -1), tr("learn.serving.diagram.sm"))
            if self.scenario == "decode":  # HBM → SM reads
                p.setPen(QPen(qcolor("output"), 4, Qt.SolidLine, Qt.RoundCap)); p.drawLine(QPointF(sm.center().x(), hbm.bottom()),
                                                                 QPointF(sm.center().x(), sm.top()))
        self._key(p, act, small, text)
        if act["pd"]:  # prefill pool hands KV + KDA state to the decode pool
            top, bot = self.gpu_rects()[1], self.gpu_rects()[5]
            a, b = QPointF(top.right() + 5, top.bottom() - 6), QPointF(bot.right() + 5, bot.top() + 6)
            p.setPen(QPen(qcolor("state"), 4)); p.drawLine(a, b)
            p.setBrush(qcolor("state")); p.drawEllipse(b, 5, 5)
            p.setFont(bold)
            label = tr("learn.serving.diagram.handover")
            box = QRectF(a.x() + 8, (a.y() + b.y()) / 2 - 9, QFontMetrics(bold).horizontalAdvance(label) + 10, 18)
            p.setPen(Qt.NoPen); p.setBrush(pal.window()); p.drawRoundedRect(box, 4, 4)
            p.setPen(text)
            self._text(p, box, label)
        p.end()

    def _key(self, p: QPainter, act: dict, font: QFont, text) -> None:
        """The HBM parts' key under the NVLink bar: a swatch and the name of each part (in a narrow dock the MLA
        cache and KDA state are too thin to hold their names)."""
        cell = (self.width() - 20) / len(self.PARTS)
        p.setFont(font)
        for i, (role, _share, key) in enumerate(self.PARTS):
            box = QRectF(10 + i * cell, 316, cell, 24)
            lit = role in act["hbm"]
            p.setPen(QPen(text, 1) if lit else Qt.NoPen)
            p.setBrush(qcolor(role, 200 if lit else 70))
            p.drawRect(QRectF(box.x(), box.center().y() - 6, 12, 12))
            p.setPen(text)
            self._text(p, box.adjusted(16, 0, -2, 0), tr(key), Qt.AlignLeft | Qt.AlignVCenter)

    def _text(self, p: QPainter, rect: QRectF, s: str, flags=Qt.AlignCenter | Qt.TextWordWrap) -> None:
        """Every label is wrapped, shrunk or elided into its box; (box, text's rect) kept for checking."""
        self.text_boxes.append((QRectF(rect), fit_text(p, rect, s, flags | Qt.TextWordWrap)))


class ServingPanel(QScrollArea):
    def __init__(self, parent=None):
        super().__init__(parent)
        lay, self.title = scroll_page(self)
        self.traffic = markdown_label("")
        lay.addWidget(self.traffic)
        row = QHBoxLayout()
        self.scenario_label = QLabel()
        self.scenario = QComboBox(); self.scenario.setObjectName("serving_scenario")
        for sc in SCENARIOS:
            self.scenario.addItem("", sc)
        row.addWidget(self.scenario_label); row.addWidget(self.scenario, 1)
        lay.addLayout(row)
        self.diagram = TrafficDiagram(); self.diagram.setObjectName("serving_diagram")
        lay.addWidget(self.diagram)
        self.scenario_text = QLabel(); self.scenario_text.setObjectName("serving_scenario_text")
        self.scenario_text.setWordWrap(True); self.scenario_text.setTextFormat(Qt.RichText)
        lay.addWidget(self.scenario_text)
        self.diagram_note = QLabel(); self.diagram_note.setWordWrap(True)
        lay.addWidget(self.diagram_note)

        # --- cost per turn -------------------------------------------------------------------------------
        self.cost_box = QGroupBox()
        form = QFormLayout(self.cost_box)
        self.price_in = self._money(3.0); self.price_in.setObjectName("serving_price_in")
        self.price_out = self._money(15.0); self.price_out.setObjectName("serving_price_out")
        self.tok_in = self._count(142_000, 10_000_000); self.tok_in.setObjectName("serving_tokens_in")
        self.tok_out = self._count(444, 1_000_000); self.tok_out.setObjectName("serving_tokens_out")
        self.turns = self._count(65, 100_000); self.turns.setObjectName("serving_turns")
        self.cost_labels = [QLabel() for _ in range(5)]
        for lab, w in zip(self.cost_labels, (self.price_in, self.price_out, self.tok_in, self.tok_out, self.turns)):
            form.addRow(lab, w)
        self.cost_result = QLabel(); self.cost_result.setObjectName("serving_cost"); self.cost_result.setWordWrap(True)
        self.cost_result.setTextFormat(Qt.RichText)
        form.addRow(self.cost_result)
        lay.addWidget(self.cost_box)

        # --- KV capacity -----------------------------------------------------------------------------------
        self.kv_box = QGroupBox()
        kv = QVBoxLayout(self.kv_box)
        self.kv_text = QLabel(); self.kv_text.setObjectName("serving_kv"); self.kv_text.setWordWrap(True)
        self.kv_text.setTextFormat(Qt.RichText)
        kv.addWidget(self.kv_text)
        lay.addWidget(self.kv_box)

        # --- speculative decoding ------------------------------------------------------------------------------
        self.spec_box = QGroupBox()
        sp = QVBoxLayout(self.spec_box)
        self.acceptance = FloatSlider(0.0, 1.0, 0.01, 0.7)
        self.acceptance.setObjectName("serving_acceptance")
        self.draft = FloatSlider(1, 8, 1, 3, digits=0)
        self.draft.setObjectName("serving_draft")
        self.spec_result = QLabel(); self.spec_result.setObjectName("serving_spec"); self.spec_result.setWordWrap(True)
        self.spec_result.setTextFormat(Qt.RichText)
        sp.addWidget(self.acceptance); sp.addWidget(self.draft); sp.addWidget(self.spec_result)
        lay.addWidget(self.spec_box)

        # --- topic cards -----------------------------------------------------------------------------------------
        self.cards = QGridLayout()
        self.card_labels = []
        for i, _key in enumerate(TOPIC_CARDS):
            box = QGroupBox()
            box.setLayout(QVBoxLayout())
            lab = markdown_label("")
            box.layout().addWidget(lab)
            self.cards.addWidget(box, i // 2, i % 2)
            self.card_labels.append(lab)
        lay.addLayout(self.cards)
        self.source = QLabel(); self.source.setWordWrap(True)
        lay.addWidget(self.source)
        lay.addStretch(1)

        for w in (self.price_in, self.price_out, self.tok_in, self.tok_out, self.turns):
            w.valueChanged.connect(self.recompute)
        self.acceptance.valueChanged.connect(self.recompute)
        self.draft.valueChanged.connect(self.recompute)
        self.scenario.currentIndexChanged.connect(self._scenario)

    @guarded
    def _scenario(self, *_):
        sc = self.scenario.currentData()
        self.diagram.set_scenario(sc)
        self.scenario_text.setText(tr(f"learn.serving.scenario.{sc}.text"))

    @staticmethod
    def _money(v: float) -> QDoubleSpinBox:
        s = QDoubleSpinBox(); s.setRange(0.0, 1000.0); s.setDecimals(2); s.setSingleStep(0.25); s.setPrefix("$ ")
        s.setValue(v)
        return s

    @staticmethod
    def _count(v: int, hi: int) -> QSpinBox:
        s = QSpinBox(); s.setRange(0, hi); s.setGroupSeparatorShown(True); s.setValue(v)
        return s

    def cost_per_turn(self) -> float:
        return T.cost_per_turn(self.tok_in.value(), self.tok_out.value(), self.price_in.value(), self.price_out.value())

    @guarded
    def recompute(self, *_):
        c_in = self.tok_in.value() * self.price_in.value() / 1e6
        c_out = self.tok_out.value() * self.price_out.value() / 1e6
        turn = self.cost_per_turn()
        share = 100.0 * c_in / turn if turn > 0 else 0.0
        self.cost_result.setText(tr("learn.serving.cost.result", tin=f"{self.tok_in.value():,}", pin=fmt(self.price_in.value(), 2),
                                    cin=fmt(c_in, 4), tout=f"{self.tok_out.value():,}", pout=fmt(self.price_out.value(), 2),
                                    cout=fmt(c_out, 4), turn=fmt(turn, 4), turns=self.turns.value(),
                                    total=fmt(turn * self.turns.value(), 2), share=fmt(share, 1)))
        per_tok = T.mla_cache_bytes_per_token()
        kv_gb = KV_TOKENS_REPORTED * per_tok / 1e9
        sessions = fmt(KV_TOKENS_REPORTED / self.tok_in.value(), 1) if self.tok_in.value() else "—"
        self.kv_text.setText(tr("learn.serving.kv.text", tokens="3.25M", per_tok=f"{per_tok:,.0f}", gb=fmt(kv_gb, 1),
                                ctx=f"{self.tok_in.value():,}", sessions=sessions,
                                kda=fmt(T.kda_state_bytes() / 1e6, 0)))
        a, g = self.acceptance.value(), int(self.draft.value())
        e = T.speculative_expected_tokens(a, g)
        self.spec_result.setText(tr("learn.serving.spec.result", a=fmt(a, 2), g=g, e=fmt(e, 2)))

    def retranslate(self):
        lang = language()
        self.title.setText(tr("learn.serving.title"))
        self.traffic.setText(demote_headings(explanation("topic", "serving_traffic", lang) or ""))
        self.diagram_note.setText(tr("learn.serving.diagram.note"))
        self.scenario_label.setText(tr("learn.serving.scenario"))
        for i, sc in enumerate(SCENARIOS):
            self.scenario.setItemText(i, tr(f"learn.serving.scenario.{sc}"))
        self._scenario()
        self.cost_box.setTitle(tr("learn.serving.cost.title"))
        for lab, key in zip(self.cost_labels, ("price_in", "price_out", "tokens_in", "tokens_out", "turns")):
            lab.setText(tr(f"learn.serving.cost.{key}"))
        self.kv_box.setTitle(tr("learn.serving.kv.title"))
        self.spec_box.setTitle(tr("learn.serving.spec.title"))
        self.acceptance.setText(tr("learn.serving.spec.acceptance"))
        self.draft.setText(tr("learn.serving.spec.draft"))
        for lab, key in zip(self.card_labels, TOPIC_CARDS):
            lab.setText(demote_headings(explanation("topic", key, lang) or ""))
        self.source.setText(tr("learn.serving.source"))
        self.diagram.update()
        self.recompute()
