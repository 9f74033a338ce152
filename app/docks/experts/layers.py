"""Per-layer tab of the expert dock: tokens × 92 MoE layers heatmap and expert usage counts, from the trace.

Heatmap modes:
  weight   the mixing weight of the chosen expert (spin box, follows the app's selected expert) per token and
           MoE layer; 0 where the router did not pick it
  overlap  the fraction of a token's k experts (K3: 16) that the current token also uses in the same layer
Clicking a heatmap cell selects that token and layer in the whole app.
Below: how many (token, layer) slots chose each of the model's experts (K3: 896), with the uniform share as a
line. Ranges and texts follow the shown model (config_changed).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from app.docks.deferred import DeferredRefreshMixin
from app.docks.experts.heatmap import heatmap_plot
from app.docks.experts.model import (expert_weight_map, model_args, overlap_map, processed_positions, shown_expert,
                                     usage, usage_counts)
from app.i18n import tr
from app.slot_guard import guarded

_GOLD_MAP = pg.ColorMap(pos=[0.0, 0.5, 1.0], color=[(18, 20, 26), (150, 100, 30), (255, 214, 120)])
_BLUE_MAP = pg.ColorMap(pos=[0.0, 0.5, 1.0], color=[(18, 20, 26), (40, 110, 170), (190, 235, 255)])


class LayersTab(DeferredRefreshMixin, QWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.mode = QComboBox()
        self.mode.setObjectName("experts.layers.mode")
        self.mode.addItems(["", ""])
        self.mode.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.mode.setMinimumContentsLength(16)
        self.expert_label = QLabel()
        self.expert = QSpinBox()
        n = model_args(state.config)["n"]
        self.expert.setRange(0, n - 1)
        self.expert.setValue(shown_expert(state))
        self.info = QLabel()
        self.info.setWordWrap(True)

        self.heat, self.image = heatmap_plot("experts.layers.heatmap")
        self.marker = pg.ScatterPlotItem(size=9, pen=pg.mkPen((80, 230, 255), width=2), brush=None, symbol="s")
        self.heat.addItem(self.marker)
        self.image.mouseClickEvent = self._on_image_click

        self.counts = pg.PlotWidget(enableMenu=False)
        self.counts.setObjectName("experts.layers.counts")
        self.counts.setMaximumHeight(190)
        self.bars = pg.BarGraphItem(x=np.arange(n), height=np.zeros(n), width=1.0,
                                    brush=(245, 178, 46), pen=None)
        self.counts.addItem(self.bars)
        self.ideal = pg.InfiniteLine(angle=0, pen=pg.mkPen((120, 220, 140), width=1.5, style=Qt.DashLine))
        self.counts.addItem(self.ideal)
        self.counts_info = QLabel()
        self.counts_info.setWordWrap(True)

        top = QHBoxLayout()
        top.addWidget(self.mode)
        top.addWidget(self.expert_label)
        top.addWidget(self.expert)
        top.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.info)
        lay.addWidget(self.heat, 3)
        lay.addWidget(self.counts_info)
        lay.addWidget(self.counts, 1)

        self._idx = None
        self._w = None
        self._layers: list[int] = []
        self._positions = np.zeros(0, dtype=np.int64)
        self._trace_seen = None
        self.mode.currentIndexChanged.connect(self.refresh)
        self.expert.valueChanged.connect(self.refresh)
        state.expert_selected.connect(guarded(lambda e: self.expert.setValue(e) if 0 <= e <= self.expert.maximum() else None))
        state.config_changed.connect(self._on_config)
        for sig in (state.trace_changed, state.layer_changed, state.token_changed, state.pass_changed):
            sig.connect(self.refresh)
        self.retranslate()

    def _load(self):
        tr_ = self.state.trace
        if tr_ is self._trace_seen:
            return
        self._trace_seen = tr_
        self._idx, self._w, self._layers = usage(tr_) if tr_ is not None else (None, None, [])
        self._positions = processed_positions(tr_) if tr_ is not None else np.zeros(0, dtype=np.int64)

    def matrix(self) -> np.ndarray | None:
        """The heatmap values [N tokens, L_moe] for the current mode (None without a trace)."""
        self._load()
        if self._idx is None or self._idx.size == 0:
            return None
        if self.mode.currentIndex() == 0:
            return expert_weight_map(self._idx, self._w, self.expert.value())
        rows = np.nonzero(self._positions == self.state.token)[0]
        return overlap_map(self._idx, int(rows[0])) if rows.size else None

    @guarded
    def refresh(self, *_):
        """Re-read the trace for the current token / layer; deferred while the tab is hidden."""
        if self.postpone_while_hidden():
            return
        self.expert.setEnabled(self.mode.currentIndex() == 0)
        self.expert_label.setEnabled(self.mode.currentIndex() == 0)
        m = self.matrix()
        tr_ = self.state.trace
        no_moe = tr_ is not None and not self._layers  # a model without any MoE layer: a message, no empty plots
        self.heat.setVisible(not no_moe)
        self.counts.setVisible(not no_moe)
        if m is None:
            self.image.clear()
            self.marker.clear()
            self.bars.setOpts(height=np.zeros(len(self.bars.opts["height"])))
            self.info.setText(tr("experts.layers.none") if tr_ is None else
                              tr("checks.experts.no_moe", **model_args(self.state.config)) if no_moe else
                              tr("experts.layers.unprocessed"))
            self.counts_info.setText("")
            return
        weight_mode = self.mode.currentIndex() == 0
        hi = float(m.max()) if weight_mode and m.max() > 0 else 1.0
        lut = (_GOLD_MAP if weight_mode else _BLUE_MAP).getLookupTable(0.0, 1.0, 256)
        self.image.setImage(m, levels=(0.0, hi), lut=lut)
        n, L = m.shape
        self.image.setRect(0, 0, L, n)
        self.heat.setXRange(0, L, padding=0)
        self.heat.setYRange(0, n, padding=0)
        ax_b = self.heat.getAxis("bottom")
        ticks = [(i + 0.5, str(self._layers[i] + 1)) for i in range(0, L, max(1, L // 12))]
        ax_b.setTicks([ticks])
        pieces = [f"{int(p)} {tr_.tokens[int(p)][0].replace(' ', '␣')}" for p in self._positions]
        self.heat.getAxis("left").setTicks([[(i + 0.5, pieces[i]) for i in range(n)]])
        # marker on the current (token, layer)
        rows = np.nonzero(self._positions == self.state.token)[0]
        cols = [i for i, l in enumerate(self._layers) if l == self.state.layer]
        if rows.size and cols:
            self.marker.setData([cols[0] + 0.5], [int(rows[0]) + 0.5])
        else:
            self.marker.clear()
        if weight_mode:
            used = int(np.count_nonzero(m))
            self.info.setText(tr("experts.layers.info_weight", e=self.expert.value(), used=used, total=m.size,
                                 wmax=float(m.max())))
        else:
            self.info.setText(tr("experts.layers.info_overlap", token=self.state.token, mean=float(m.mean()),
                                 **model_args(self.state.config)))
        n_exp = int(np.asarray(tr_.passes[0].layers[self._layers[0]].tensors["moe.router"]).shape[-1])
        counts = usage_counts(self._idx, n_exp)
        ideal = self._idx.size / n_exp
        self.bars.setOpts(x=np.arange(n_exp), height=counts)
        self.ideal.setPos(ideal)
        self.counts.setYRange(0, max(float(counts.max()), ideal) * 1.08, padding=0)
        self.counts.setXRange(-1, n_exp, padding=0)
        self.expert.setMaximum(n_exp - 1)
        self.counts_info.setText(tr("experts.layers.counts", slots=int(self._idx.size), ideal=ideal,
                                    cmax=int(counts.max()), ratio=float(counts.max()) / ideal,
                                    unused=int(np.sum(counts == 0))))

    @guarded
    def _on_config(self, cfg) -> None:
        """Another model: the expert picker and the usage bars span its experts."""
        n = model_args(cfg)["n"]
        self.expert.setMaximum(n - 1)
        self.expert.setValue(shown_expert(self.state))
        self.bars.setOpts(x=np.arange(n), height=np.zeros(n))
        self._trace_seen = None
        self.refresh()

    def _on_image_click(self, event):
        if event.button() != Qt.LeftButton or not self._layers:
            return
        pos = event.pos()
        col, row = int(pos.x()), int(pos.y())
        if 0 <= row < self._positions.size and 0 <= col < len(self._layers):
            event.accept()
            self.state.select_token(int(self._positions[row]))
            self.state.select_layer(self._layers[col])

    def retranslate(self):
        self.mode.setItemText(0, tr("experts.layers.mode_weight"))
        self.mode.setItemText(1, tr("experts.layers.mode_overlap"))
        self.expert_label.setText(tr("experts.layers.expert"))
        self.heat.setLabel("bottom", tr("experts.layers.axis_layer"))
        self.heat.setLabel("left", tr("experts.layers.axis_token"))
        self.counts.setLabel("bottom", tr("experts.layers.axis_expert"))
        self.counts.setLabel("left", tr("experts.layers.axis_count"))
        self.refresh()
