"""Experiment 4: Stable LatentMoE routing — sigmoid + bias → top-16 of 896, expert-17 bias slider."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTableWidget, QTableWidgetItem, QHeaderView

from app.docks.experiments.common import ExperimentPanel
from app.i18n import tr
from app.widgets.controls import FloatSlider, fit_table_height, fmt, section_label
from app.widgets.expert_grid import ExpertGridWidget
from compute.teaching import experiments as T
from app.slot_guard import guarded

FOCUS = 17


class _SquareGrid(ExpertGridWidget):
    """The shared expert grid with about square cells: its height follows its width (32 × 28 + shared column)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        policy = self.sizePolicy()
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, w: int) -> int:  # noqa: N802
        return int(min(520, max(200, (w - 70) * 28 / 32 + 12)))


class MoePanel(ExperimentPanel):
    def __init__(self, parent=None):
        super().__init__("moe", "expert", parent)
        row = QHBoxLayout()
        self.feature_label = QLabel()
        self.feature = QComboBox()
        self.feature.setObjectName("moe_feature")
        for f in T.MOE_FEATURES:
            self.feature.addItem("", f)
        row.addWidget(self.feature_label)
        row.addWidget(self.feature)
        row.addStretch(1)
        self.body.addLayout(row)
        self.bias = FloatSlider(-0.3, 0.3, 0.005, 0.0, digits=3)
        self.bias.setObjectName("moe_bias")
        self.body.addWidget(self.bias)
        self.status = QLabel(); self.status.setObjectName("moe_status"); self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.RichText)
        self.body.addWidget(self.status)
        self.grid = _SquareGrid()
        self.grid.setObjectName("moe_grid")
        self.grid.setMinimumHeight(200)
        self.grid.set_focus_expert(FOCUS)
        self.body.addWidget(self.grid)
        self.flow = QLabel(); self.flow.setAlignment(Qt.AlignCenter); self.flow.setTextFormat(Qt.RichText)
        self.body.addWidget(self.flow)
        self.table_title = section_label()
        self.body.addWidget(self.table_title)
        self.table = QTableWidget(T.K3_TOPK, 4)
        self.table.setObjectName("moe_table")
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setMinimumHeight(200)
        self.body.addWidget(self.table)
        self.formula = QLabel(); self.formula.setWordWrap(True); self.formula.setTextFormat(Qt.RichText)
        self.body.addWidget(self.formula)
        self.bias.valueChanged.connect(self.recompute)
        self.feature.currentIndexChanged.connect(self.recompute)
        self.retranslate()

    def result(self) -> T.RouteResult:
        logits = T.moe_toy_logits(self.feature.currentData() or T.MOE_FEATURES[0], FOCUS)
        bias = np.zeros(T.K3_EXPERTS)
        bias[FOCUS] = self.bias.value()
        return T.route_topk(logits, bias)

    @guarded
    def recompute(self, *_):
        r = self.result()
        bias = np.zeros(T.K3_EXPERTS); bias[FOCUS] = self.bias.value()
        self.grid.set_scores(r.scores, bias, r.idx, r.weights)
        chosen = FOCUS in r.idx.tolist()
        # the k-th best among the OTHER experts: what expert 17's biased score must beat
        others = np.delete(r.biased, FOCUS)
        rival = float(np.sort(others)[::-1][T.K3_TOPK - 1])
        verdict = tr("learn.exp.moe.in") if chosen else tr("learn.exp.moe.out")
        w = f"{fmt(float(r.weights[r.idx.tolist().index(FOCUS)]), 4)}" if chosen else "—"
        self.status.setText(tr("learn.exp.moe.status", e=FOCUS, s=fmt(r.scores[FOCUS], 4), b=fmt(self.bias.value(), 3),
                               sb=fmt(r.biased[FOCUS], 4), cut=fmt(rival, 4), verdict=verdict, w=w))
        for i, (e, wt) in enumerate(zip(r.idx, r.weights)):
            vals = (str(int(e)), fmt(r.scores[e], 4), fmt(r.biased[e], 4), fmt(wt, 4))
            for c, v in enumerate(vals):
                item = QTableWidgetItem(v)
                item.setTextAlignment(Qt.AlignCenter)
                if int(e) == FOCUS:
                    f = item.font(); f.setBold(True); item.setFont(f)
                self.table.setItem(i, c, item)

    def retranslate(self):
        self.retranslate_frame()
        self.feature_label.setText(tr("learn.exp.moe.feature"))
        for i, f in enumerate(T.MOE_FEATURES):
            self.feature.setItemText(i, tr(f"learn.exp.moe.feature.{f}"))
        self.bias.setText(tr("learn.exp.moe.bias", e=FOCUS))
        self.flow.setText(tr("learn.exp.moe.flow"))
        self.table_title.setText(tr("learn.exp.moe.table"))
        self.table.setHorizontalHeaderLabels([tr("learn.exp.moe.col.expert"), tr("learn.exp.moe.col.score"),
                                              tr("learn.exp.moe.col.biased"), tr("learn.exp.moe.col.weight")])
        self.formula.setText(tr("learn.exp.moe.formula"))
        fit_table_height(self.table)
        self.recompute()
