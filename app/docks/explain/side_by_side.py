"""Trained and random weights side by side in the Explain dock: the same tokens and position
explained with the other weights, so the difference is visible at a glance — the lens curves of both in one
plot (the other's dashed and paler), a two-column summary (the word, where the lens settles, the top source
and its effect, the largest direct contribution), and the other's attention overview next to this one's."""
from __future__ import annotations


import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QTableWidgetItem, QVBoxLayout, QWidget

from app.docks.experts.heatmap import heatmap_plot
from app.docks.explain.model import other_weights
from app.docks.explain.fit import fit_rows, header_tooltips, wrapping_table
from app.i18n import tr
from app.widgets.controls import fmt
from app.widgets.paint import qcolor
from scene.lens_column import settled_rank_one
from scene.palette import diverging

ROWS = ("word", "settles", "source", "block")


def attention_share(rows, per_head: bool = False) -> np.ndarray:
    """What the overview colours. [L, T]: per layer, the heads' weights summed and divided by their total size;
    per_head: [L, H·(T+1) − 1], every head's row divided by its own size, side by side (BertViz's layer × head
    grid), one blank (NaN) column between heads; layers with fewer heads are padded with NaN."""
    if not per_head:
        return np.stack([r.sum(0) / max(float(np.abs(r).sum()), 1e-12) for r in rows])
    H = max(r.shape[0] for r in rows)
    T = rows[0].shape[1]
    out = np.full((len(rows), H * (T + 1) - 1), np.nan)
    for li, r in enumerate(rows):
        for h in range(r.shape[0]):
            out[li, h * (T + 1):h * (T + 1) + T] = r[h] / max(float(np.abs(r[h]).sum()), 1e-12)
    return out


def share_image(share: np.ndarray) -> np.ndarray:
    """RGBA uint8 of an overview (NaN = the blank between heads: the plot's background shows)."""
    img = (diverging(np.nan_to_num(share)) * 255).astype(np.uint8)
    img[np.isnan(share)] = 0
    return img


def _q(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"


def summary_cells(res) -> list[str]:
    """The summary column of one result, in ROWS order (plain text)."""
    settled = settled_rank_one(res.lens_rank)
    src = max(res.sources, key=lambda s: s[2]) if res.sources else None
    top = sorted(res.totals, key=lambda t: -abs(t[2]))[:3]
    part = {"embedding": tr("explain.part.embedding"), "mixer": tr("explain.part.mixer"),
            "ffn": "FFN"}
    return [f"{_q(res.word)} · p {fmt(res.prob)}",
            tr("explain.side.settles", layer=settled) if settled is not None else "—",
            tr("explain.side.source", position=src[0], piece=_q(src[1]), effect=fmt(src[2], 2)) if src else "—",
            " · ".join(tr("explain.side.block", layer=b[0], part=part.get(b[1], b[1]), value=fmt(b[2], 2))
                       for b in top) or "—"]


class SideBySide(QWidget):
    """The check box and the comparison; `toggled(bool)` when the user turns it on or off."""

    toggled = Signal(bool)

    def __init__(self, lens_plot: pg.PlotWidget, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.box = QCheckBox()
        self.box.setObjectName("explain_side_by_side")
        self.box.toggled.connect(self.toggled)
        lay.addWidget(self.box)
        self.note = QLabel()
        self.note.setObjectName("explain_side_note")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.PlainText)
        self.note.hide()
        lay.addWidget(self.note)
        # each compared row is a label spanning both columns above its two cells: at the default 460-px dock
        # a row-label column took half the width and elided the cells
        self.table = wrapping_table(2 * len(ROWS), 2, "explain_side_table")
        for r in range(len(ROWS)):
            self.table.setSpan(2 * r, 0, 1, 2)
        lay.addWidget(self.table)
        self.att_title = QLabel()
        self.att_title.setWordWrap(True)
        self.att_title.setTextFormat(Qt.PlainText)
        lay.addWidget(self.att_title)
        self.att_plot, self.att_image = heatmap_plot("explain_attention_other")
        self.att_plot.setMinimumHeight(220)
        lay.addWidget(self.att_plot)
        pen = pg.mkPen(qcolor("output"), width=2, style=Qt.DashLine)
        pen.setColor(pen.color().darker(150))
        self.curve_prob = lens_plot.plot(pen=pen)
        pen2 = pg.mkPen(qcolor("kda"), width=1.5, style=Qt.DotLine)
        self.curve_rank = lens_plot.plot(pen=pen2)
        self.other = None
        self.per_head = False  # the dock's "per head" choice, for the other overview too
        self._weights = "trained"
        self.retranslate()
        self.show_result(None)

    def enabled(self) -> bool:
        return self.box.isChecked()

    def show_result(self, res, lens_series=None) -> None:
        """Fill from a result (its .other: the other weights' explanation), or hide the comparison."""
        other = getattr(res, "other", None) if res is not None and self.box.isChecked() else None
        if res is not None:
            self._weights = res.weights or self._weights
        same = other is not None and other.weights == res.weights  # no trained toy for this model: both random
        self.note.setText(tr("explain.side.same", weights=tr(f"explain.weights.{res.weights}")) if same else "")
        self.note.setVisible(same)
        other = None if same else other
        self.other = other
        self._sync_legend()
        for w in (self.table, self.att_title, self.att_plot):
            w.setVisible(other is not None)
        if other is None:
            self.curve_prob.setData([], [])
            self.curve_rank.setData([], [])
            self._headers()
            return
        x, prob, rank = lens_series(other)
        self.curve_prob.setData(x, prob)
        self.curve_rank.setData(x, 1.0 / rank)
        for c, r in enumerate((res, other)):
            for row, text in enumerate(summary_cells(r)):
                it = QTableWidgetItem(text)
                it.setToolTip(text)
                if row == 0 and r.word != res.word:
                    it.setForeground(qcolor("output"))
                self.table.setItem(2 * row + 1, c, it)
        self._headers()
        fit_rows(self.table)
        if other.attention:
            share = attention_share(other.attention, self.per_head)
            self.att_image.setImage(share_image(share), levels=(0, 255))
            T = share.shape[1]
            self.att_image.setRect(QRectF(-0.5, 0.5, T, share.shape[0]))
            self.att_plot.setXRange(-0.5, T - 0.5, padding=0.0)
            self.att_plot.setYRange(0.5, share.shape[0] + 0.5, padding=0.0)

    def _headers(self) -> None:
        this, that = self._weights, other_weights(self._weights)
        self.table.setHorizontalHeaderLabels([tr(f"explain.weights.{this}"), tr(f"explain.weights.{that}")])
        header_tooltips(self.table)
        for r, name in enumerate(ROWS):
            it = QTableWidgetItem(tr(f"explain.side.row.{name}"))
            f = it.font()
            f.setBold(True)
            it.setFont(f)
            self.table.setItem(2 * r, 0, it)
        self.box.setText(tr("explain.side.box", other=tr(f"explain.weights.{that}")))
        self.att_title.setText(tr("explain.side.attention", other=tr(f"explain.weights.{that}")))

    def add_legend(self, legend) -> None:
        """The lens plot's legend: it lists the other weights' curves only while they are drawn."""
        self._legend = legend
        self._sync_legend()

    def _sync_legend(self) -> None:
        legend = getattr(self, "_legend", None)
        if legend is None:
            return
        for curve, key in ((self.curve_prob, "explain.side.legend_prob"), (self.curve_rank, "explain.side.legend_rank")):
            legend.removeItem(curve)
            if self.other is not None:
                legend.addItem(curve, tr(key))

    def retranslate(self) -> None:
        self.box.setToolTip(tr("explain.side.tip"))
        self.att_plot.setLabel("left", tr("explain.att.axis_layer"))
        self.att_plot.setLabel("bottom", tr("explain.att.axis_position"))
        self._headers()
