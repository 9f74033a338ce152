"""Experiment 3 (C3): Block AttnRes — query strength, which block holds the feature → softmax weights, mix."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QRadioButton, QVBoxLayout

from app.docks.experiments.common import BarChart, ExperimentPanel
from app.i18n import tr
from app.widgets.controls import FloatSlider, fmt, section_label
from app.widgets.paint import qcolor
from compute.teaching import experiments as T
from app.slot_guard import guarded


def _paren(v: float) -> str:
    return f"({fmt(v, 1)})" if v < 0 else fmt(v, 1)


class AttnResPanel(ExperimentPanel):
    def __init__(self, parent=None):
        super().__init__("attnres", "attnres", parent)
        self.blocks_label = QLabel(); self.blocks_label.setWordWrap(True)
        self.body.addWidget(self.blocks_label)
        self.values_chart = BarChart(min_height=150, digits=1)
        self.values_chart.setObjectName("attnres_values")
        self.body.addWidget(self.values_chart)
        self.strength = FloatSlider(0.0, 6.0, 0.05, 2.0)
        self.strength.setObjectName("attnres_strength")
        self.body.addWidget(self.strength)
        pick = QHBoxLayout()
        self.pick_label = QLabel(); self.pick_label.setWordWrap(True)
        self.body.addWidget(self.pick_label)
        self.group = QButtonGroup(self)
        self.radios = []
        for i in range(len(T.ATTNRES_BLOCKS)):
            rb = QRadioButton()
            rb.setObjectName(f"attnres_block_{i}")
            self.group.addButton(rb, i)
            self.radios.append(rb)
            pick.addWidget(rb)
        pick.addStretch(1)
        self.radios[3].setChecked(True)
        self.body.addLayout(pick)

        cols = QHBoxLayout()
        left = QVBoxLayout()
        self.weights_title = section_label()
        left.addWidget(self.weights_title)
        self.bars = BarChart(min_height=180)
        self.bars.setObjectName("attnres_bars")
        left.addWidget(self.bars)
        cols.addLayout(left, 3)
        right = QVBoxLayout()
        self.result_title = section_label()
        right.addWidget(self.result_title)
        self.mixed = QLabel(); self.mixed.setObjectName("attnres_mixed"); self.mixed.setWordWrap(True)
        self.plain = QLabel(); self.plain.setObjectName("attnres_plain"); self.plain.setWordWrap(True)
        self.mixed.setTextFormat(Qt.RichText); self.plain.setTextFormat(Qt.RichText)
        right.addWidget(self.mixed)
        right.addWidget(self.plain)
        right.addStretch(1)
        cols.addLayout(right, 2)
        self.body.addLayout(cols)
        self.formula = QLabel(); self.formula.setWordWrap(True); self.formula.setTextFormat(Qt.RichText)
        self.body.addWidget(self.formula)

        self.strength.valueChanged.connect(self.recompute)
        self.group.idToggled.connect(guarded(lambda _i, on: on and self.recompute()))
        self.retranslate()

    def result(self) -> T.AttnResToy:
        return T.attnres_toy(self.strength.value(), self.group.checkedId())

    @guarded
    def recompute(self, *_):
        r = self.result()
        imp = self.group.checkedId()
        names = [tr("learn.exp.attnres.block", n=i + 1) for i in range(len(r.weights))]
        colors = [qcolor("attnres") if i == imp else qcolor("weight") for i in range(len(r.weights))]
        self.bars.set_data(names, r.weights, colors, vmax=1.0, highlight=imp)
        vcol = [qcolor("output") if v >= 0 else qcolor("activation") for v in T.ATTNRES_BLOCKS]
        self.values_chart.set_data([f"V{i + 1}" for i in range(len(names))], T.ATTNRES_BLOCKS, vcol, highlight=imp)
        terms = " + ".join(f"{fmt(w)}×{_paren(v)}" for w, v in zip(r.weights, T.ATTNRES_BLOCKS))
        self.mixed.setText(tr("learn.exp.attnres.mixed", terms=terms, value=f"<b>{fmt(r.mixed)}</b>"))
        plain_terms = " + ".join(_paren(v) for v in T.ATTNRES_BLOCKS)
        self.plain.setText(tr("learn.exp.attnres.plain", terms=plain_terms, value=f"<b>{fmt(r.plain)}</b>"))

    def retranslate(self):
        self.retranslate_frame()
        vals = ", ".join(f"b{i + 1} = {fmt(v, 1)}" for i, v in enumerate(T.ATTNRES_BLOCKS))
        self.blocks_label.setText(tr("learn.exp.attnres.blocks", values=vals))
        self.strength.setText(tr("learn.exp.attnres.strength"))
        self.pick_label.setText(tr("learn.exp.attnres.pick"))
        for i, rb in enumerate(self.radios):
            rb.setText(tr("learn.exp.attnres.block", n=i + 1))
        self.weights_title.setText(tr("learn.exp.attnres.weights"))
        self.result_title.setText(tr("learn.exp.attnres.result"))
        self.formula.setText(tr("learn.exp.attnres.formula"))
        self.recompute()
