"""Experiment 2 (C2): KDA in one dimension — α, β, v sliders, each number of the delta rule, a many-steps plot."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QPushButton

from app.docks.experiments.common import ExperimentPanel
from app.i18n import tr
from app.widgets.controls import FloatSlider, fmt, section_label
from app.widgets.paint import qcolor
from compute.teaching import experiments as T
from app.slot_guard import guarded

STEPS = 16


class KdaPanel(ExperimentPanel):
    see_in_3d = Signal()

    def __init__(self, parent=None):
        super().__init__("kda", "kda", parent)
        self.alpha = FloatSlider(0.0, 1.0, 0.01, 0.9)
        self.beta = FloatSlider(0.0, 1.0, 0.01, 0.5)
        self.v = FloatSlider(-1.0, 1.0, 0.01, 1.0)
        for name, s in (("alpha", self.alpha), ("beta", self.beta), ("v", self.v)):
            s.setObjectName(f"kda_{name}")
            self.body.addWidget(s)
        self.formula = QLabel()
        self.formula.setTextFormat(Qt.RichText)
        self.formula.setWordWrap(True)
        self.body.addWidget(self.formula)

        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        self.rows: dict[str, tuple[QLabel, QLabel, QLabel]] = {}
        for r, key in enumerate(("s_prev", "s_bar", "error", "s_new", "out")):
            name, expr, val = QLabel(), QLabel(), QLabel()
            name.setWordWrap(True); expr.setWordWrap(True)
            val.setObjectName(f"kda_value_{key}")
            f = val.font(); f.setBold(True); f.setPointSizeF(f.pointSizeF() * 1.15); val.setFont(f)
            val.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
            grid.addWidget(name, r, 0)
            grid.addWidget(expr, r, 1)
            grid.addWidget(val, r, 2)
            self.rows[key] = (name, expr, val)
        grid.setColumnStretch(1, 1)
        self.body.addLayout(grid)

        self.plot_title = section_label()
        self.body.addWidget(self.plot_title)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("kda_plot")
        self.plot.setMinimumHeight(200)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.addLegend(offset=(8, 8))
        self.curve_s = self.plot.plot(pen=pg.mkPen(qcolor("kda"), width=3), symbol="o", symbolSize=6,
                                      symbolBrush=qcolor("kda"), name="S")
        self.curve_v = self.plot.plot(pen=pg.mkPen(qcolor("output"), width=2, style=Qt.DashLine), name="v")
        self.body.addWidget(self.plot)
        self.plot_note = QLabel(); self.plot_note.setWordWrap(True)
        self.body.addWidget(self.plot_note)

        link_row = QHBoxLayout()
        self.link = QPushButton()
        self.link.setObjectName("kda_see_in_3d")
        self.link.clicked.connect(self.see_in_3d)
        link_row.addWidget(self.link)
        link_row.addStretch(1)
        self.body.addLayout(link_row)

        for s in (self.alpha, self.beta, self.v):
            s.valueChanged.connect(self.recompute)
        self.retranslate()

    # ------------------------------------------------------------------------------------------------------
    @guarded
    def step(self) -> T.KdaStep1D:
        return T.kda_step_1d(self.alpha.value(), self.beta.value(), self.v.value())

    def sequence(self) -> tuple[np.ndarray, np.ndarray]:
        vs = T.kda_demo_inputs(self.v.value(), STEPS)
        return vs, T.kda_sequence_1d(self.alpha.value(), self.beta.value(), vs)

    @guarded
    def recompute(self, *_):
        a, b, v = self.alpha.value(), self.beta.value(), self.v.value()
        r = self.step()
        sp = fmt(T.KDA_S_PREV, 2)
        prev, new, err = tr("learn.exp.kda.sub_prev"), tr("learn.exp.kda.sub_new"), tr("learn.exp.kda.err_word")
        exprs = {
            "s_prev": tr("learn.exp.kda.fixed"),
            "s_bar": f"α·S<sub>{prev}</sub> = {fmt(a, 2)} × {sp}",
            "error": f"v − k·S̄ = {fmt(v, 2)} − {fmt(r.s_bar)}",
            "s_new": f"S̄ + β·k·{err} = {fmt(r.s_bar)} + {fmt(b, 2)} × {fmt(r.error)}",
            "out": f"q·S<sub>{new}</sub> = 1 × {fmt(r.s_new)}",
        }
        vals = {"s_prev": T.KDA_S_PREV, "s_bar": r.s_bar, "error": r.error, "s_new": r.s_new, "out": r.out}
        for key, (_n, expr, val) in self.rows.items():
            expr.setText(exprs[key])
            val.setText(fmt(vals[key]))
        vs, seq = self.sequence()
        x = np.arange(0, STEPS + 1)
        self.curve_s.setData(x, np.concatenate([[T.KDA_S_PREV], seq]))
        self.curve_v.setData(x[1:], vs)

    def retranslate(self):
        self.retranslate_frame()
        self.alpha.setText(tr("learn.exp.kda.alpha"))
        self.beta.setText(tr("learn.exp.kda.beta"))
        self.v.setText(tr("learn.exp.kda.v"))
        self.formula.setText(tr("learn.exp.kda.formula"))
        for key, (name, _e, _v) in self.rows.items():
            name.setText(tr(f"learn.exp.kda.row.{key}"))
        self.plot_title.setText(tr("learn.exp.kda.plot_title"))
        self.plot_note.setText(tr("learn.exp.kda.plot_note", n=STEPS // 2))
        self.plot.setLabel("bottom", tr("learn.exp.kda.plot_x"))
        self.plot.setLabel("left", tr("learn.exp.kda.plot_y"))
        self.link.setText(tr("learn.exp.kda.see_3d"))
        self.recompute()
