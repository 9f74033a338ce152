"""Quantile Balancing tab of the expert dock (feature E3): compute.teaching.qb_sim driven by buttons and a timer.

Two pyqtgraph plots: load per expert (sorted, before vs after, with the ideal line q = m·k/n) and
max-load/ideal over updates (with the 1.0 line). The simulator (numpy) is created on first show, and the
play timer runs only while the tab is visible.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QCheckBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

from app.i18n import tr
from app.widgets.controls import ResponsiveBox
from app.widgets.paint import css
from app.slot_guard import guarded

_BEFORE = (150, 160, 175)
_AFTER = (245, 178, 46)
_IDEAL = (120, 220, 140)


class QBTab(QWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.sim = None
        self.error = QLabel()
        self.error.setStyleSheet(f"color: {css('error')};")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.PlainText)  # quotes an error message
        self.intro = QLabel()
        self.intro.setWordWrap(True)

        self.tokens_label, self.skew_label = QLabel(), QLabel()
        self.tokens = QSpinBox()
        self.tokens.setRange(112, 32768)
        self.tokens.setSingleStep(448)
        self.tokens.setValue(4088)
        self.skew = QDoubleSpinBox()
        self.skew.setRange(0.0, 2.0)
        self.skew.setSingleStep(0.05)
        self.skew.setValue(0.25)
        self.fresh = QCheckBox()
        self.update_button = QPushButton()
        self.update_button.setObjectName("experts.qb.update")
        self.play_button = QPushButton()
        self.play_button.setObjectName("experts.qb.play")
        self.play_button.setCheckable(True)
        self.reset_button = QPushButton()
        self.numbers = QLabel()
        self.numbers.setObjectName("experts.qb.numbers")
        self.numbers.setWordWrap(True)
        self.numbers.setTextFormat(Qt.RichText)
        self.verdict = QLabel()  # why Play stopped: the target reached, or the balance levelled off (and where)
        self.verdict.setObjectName("experts.qb.verdict")
        self.verdict.setWordWrap(True)

        self.load_plot = pg.PlotWidget(enableMenu=False)
        self.load_plot.setObjectName("experts.qb.load_plot")
        self.load_plot.addLegend(offset=(-10, 10))
        self.before_curve = self.load_plot.plot(pen=pg.mkPen(_BEFORE, width=2), stepMode="center")
        self.after_curve = self.load_plot.plot(pen=pg.mkPen(_AFTER, width=2), stepMode="center")
        self.ideal_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(_IDEAL, width=2, style=Qt.DashLine))
        self.load_plot.addItem(self.ideal_line)
        self.ratio_plot = pg.PlotWidget(enableMenu=False)
        self.ratio_plot.setObjectName("experts.qb.ratio_plot")
        self.ratio_curve = self.ratio_plot.plot(pen=pg.mkPen(_AFTER, width=2), symbol="o", symbolSize=7,
                                                symbolBrush=_AFTER)
        self.ratio_plot.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen(_IDEAL, width=2, style=Qt.DashLine)))

        controls_w = QWidget()
        controls = QHBoxLayout(controls_w)
        controls.setContentsMargins(0, 0, 0, 0)
        for w in (self.tokens_label, self.tokens, self.skew_label, self.skew):
            controls.addWidget(w)
        controls.addStretch(1)
        buttons_w = QWidget()
        buttons = QHBoxLayout(buttons_w)
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.update_button)
        buttons.addWidget(self.play_button)
        buttons.addWidget(self.reset_button)
        buttons.addWidget(self.fresh)
        buttons.addStretch(1)
        rows = ResponsiveBox(980)
        rows.addWidget(controls_w)
        rows.addWidget(buttons_w)
        self.load_plot.setMinimumSize(300, 220)
        self.ratio_plot.setMinimumSize(300, 180)
        self.load_plot.setMinimumHeight(300)
        self.load_plot.setMaximumHeight(380)
        self.ratio_plot.setMaximumHeight(380)
        plots = ResponsiveBox(820)
        plots.addWidget(self.load_plot, 3)
        plots.addWidget(self.ratio_plot, 2)
        lay = QVBoxLayout(self)
        lay.addWidget(self.intro)
        lay.addWidget(rows)
        lay.addWidget(self.numbers)
        lay.addWidget(self.verdict)
        lay.addWidget(self.error)
        lay.addWidget(plots)
        lay.addStretch(1)

        self.timer = QTimer(self)
        self.timer.setInterval(700)
        self.timer.timeout.connect(self.step)
        self.update_button.clicked.connect(self.step)
        self.play_button.toggled.connect(self._on_play)
        self.reset_button.clicked.connect(self.reset)
        self.tokens.editingFinished.connect(self.reset)
        self.skew.editingFinished.connect(self.reset)
        self.fresh.toggled.connect(self.reset)
        state.config_changed.connect(guarded(lambda _c: self.reset() if self.sim is not None else None))  # its experts
        self.retranslate()

    # --- simulation ---------------------------------------------------------------------------------
    def ensure_sim(self):
        if self.sim is None:
            self.reset()
        return self.sim

    @guarded
    def reset(self):
        from compute.teaching.qb_sim import QBSimulator

        try:
            cfg = self.state.config
            size = {} if cfg is None else dict(n_experts=cfg.n_routed_experts, top_k=cfg.num_experts_per_tok)
            self.sim = QBSimulator(n_tokens=self.tokens.value(), skew=self.skew.value(),
                                   fresh_batches=self.fresh.isChecked(), **size)
            self.error.setText("")
        except (ValueError, ImportError) as exc:  # bad size or engine operators missing: say so inline
            self.sim = None
            self.error.setText(tr("experts.qb.error", msg=str(exc)))
        self.redraw()

    @guarded
    def step(self):
        if self.ensure_sim() is None:
            return
        self.sim.update()
        self.redraw()
        if self.play_button.isChecked() and self.sim.stop_reason() is not None:
            self.play_button.setChecked(False)

    def redraw(self):
        sim = self.sim
        if sim is None:
            self.before_curve.setData([], [])
            self.after_curve.setData([], [])
            self.ratio_curve.setData([], [])
            self.numbers.setText("")
            self.verdict.setText("")
            return
        before = np.sort(sim.before.load)[::-1]
        after = np.sort(sim.current.load)[::-1]
        edges = np.arange(before.size + 1)
        self.before_curve.setData(edges, before)
        self.after_curve.setData(edges, after)
        self.ideal_line.setPos(sim.ideal)
        self.load_plot.setYRange(0, float(max(before.max(), after.max())) * 1.05, padding=0)
        curve = sim.imbalance_curve()
        self.ratio_curve.setData(np.arange(curve.size), curve)
        self.ratio_plot.setYRange(0, float(curve.max()) * 1.08, padding=0)
        self.ratio_plot.setXRange(-0.3, max(5, curve.size - 1) + 0.3, padding=0)
        self.numbers.setText(tr("experts.qb.numbers", t=sim.current.update, m=sim.n_tokens, k=sim.top_k,
                                n=sim.n_experts, q=sim.ideal, r0=sim.before.max_over_ideal,
                                r=sim.current.max_over_ideal, lmax=int(sim.current.load.max()),
                                lmin=int(sim.current.load.min()), bmin=float(sim.current.bias.min()),
                                bmax=float(sim.current.bias.max())))
        self.verdict.setText(self._verdict(sim))

    @staticmethod
    def _verdict(sim) -> str:
        from compute.teaching.qb_sim import PATIENCE, TARGET

        stop = sim.stop_reason()
        if stop is None:
            return ""
        return tr(f"experts.qb.stop.{stop.reason}", value=stop.value, target=TARGET, t=stop.updates, n=PATIENCE)

    # --- visibility-bound timer -----------------------------------------------------------------------
    @guarded
    def _on_play(self, on: bool):
        self.play_button.setText(tr("experts.qb.pause") if on else tr("experts.qb.play"))
        if on and self.isVisible():
            self.ensure_sim()
            self.timer.start()
        else:
            self.timer.stop()

    @guarded
    def showEvent(self, event):  # noqa: N802
        super().showEvent(event)
        self.ensure_sim()
        if self.play_button.isChecked():
            self.timer.start()

    @guarded
    def hideEvent(self, event):  # noqa: N802
        self.timer.stop()
        super().hideEvent(event)

    def retranslate(self):
        self.intro.setText(tr("experts.qb.intro"))
        self.tokens_label.setText(tr("experts.qb.tokens"))
        self.skew_label.setText(tr("experts.qb.skew"))
        self.fresh.setText(tr("experts.qb.fresh"))
        self.update_button.setText(tr("experts.qb.update"))
        self.play_button.setText(tr("experts.qb.pause") if self.play_button.isChecked() else tr("experts.qb.play"))
        self.reset_button.setText(tr("experts.qb.reset"))
        self.load_plot.setTitle(tr("experts.qb.load_title"))
        self.load_plot.setLabel("bottom", tr("experts.qb.axis_rank"))
        self.load_plot.setLabel("left", tr("experts.qb.axis_load"))
        legend = self.load_plot.plotItem.legend
        legend.clear()
        legend.addItem(self.before_curve, tr("experts.qb.before"))
        legend.addItem(self.after_curve, tr("experts.qb.after"))
        legend.addItem(pg.PlotDataItem(pen=pg.mkPen(_IDEAL, width=2, style=Qt.DashLine)), tr("experts.qb.ideal"))
        self.ratio_plot.setTitle(tr("experts.qb.ratio_title"))
        self.ratio_plot.setLabel("bottom", tr("experts.qb.axis_update"))
        self.ratio_plot.setLabel("left", tr("experts.qb.axis_ratio"))
        self.redraw()
