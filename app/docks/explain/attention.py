"""The Explain dock's attention part: the overview of every layer's attention from the explained position (a
click selects that layer; its axes name the layers, the tokens read and, per head, the heads), the chosen
layer's BertViz head view (app/docks/explain/head_view.py: tokens left and right, a line per head in the 3D
arcs' colours; beside the overview, app/docks/explain/pages.py) and its per-head table.
A part ExplainDock owns (`ExplainDock.attention`); it reads the dock's public names only (the page's widgets,
built by app/docks/explain/pages.py, .result, .state, .side)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QTableWidgetItem

from app.docks.explain.model import ExplainResult
from app.docks.explain.side_by_side import attention_share, share_image
from app.docks.explain.text import lens_series, piece_text
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.controls import fit_table_height, fmt
from scene.palette import diverging


TICK_PX = 26  # px of the overview's width per named token: a long prompt names every k-th token (more would print
# over each other)


class AttentionPage:
    """The attention part of ExplainDock."""

    def __init__(self, dock):
        self.dock = dock

    @guarded
    def overview_clicked(self, event) -> None:
        """A click on the overview selects that layer (the whole app follows)."""
        d = self.dock
        if d.result is None or event.button() != Qt.LeftButton:
            return
        p = d.att_plot.getViewBox().mapSceneToView(event.scenePos())
        row = int(np.floor(p.y() - 0.5))  # 0-based layer
        if 0 <= row < len(d.result.attention):
            d.state.select_layer(row)

    @guarded
    def per_head_toggled(self, on: bool) -> None:
        d = self.dock
        d.side.per_head = bool(on)
        if d.result is not None:
            self.show(d.result)
            d.side.show_result(d.result, lens_series)

    def show(self, res: ExplainResult) -> None:
        """The overview, the chosen layer's head view and its per-head table for a result."""
        d = self.dock
        rows = res.attention
        if not rows:
            return
        T = rows[0].shape[1]
        share = attention_share(rows, d.att_heads.isChecked())  # [L, T] (or per head), |row| sums to ≤ 1
        d.att_image.setImage(share_image(share), levels=(0, 255))  # the largest share fully saturated
        W = share.shape[1]
        d.att_image.setRect(QRectF(-0.5, 0.5, W, len(rows)))  # column i centred on position i, row ℓ on layer ℓ
        d.att_plot.setXRange(-0.5, W - 0.5, padding=0.0)
        d.att_plot.setYRange(0.5, len(rows) + 0.5, padding=0.0)
        li = min(max(d.state.layer, 0), len(rows) - 1)
        d.att_line.setValue(li + 1)
        A = rows[li]
        kind = res.mixers[li]
        d.att_layer.setText(tr(f"explain.att.layer_{kind}", layer=li + 1, position=res.position)
                            + (" " + tr("explain.att.conv") if kind == "kda" else ""))
        self._overview_axes(res, A.shape[0], T)
        heads = [tr("explain.att.head", n=h + 1) for h in range(A.shape[0])]
        d.att_head_view.set_data(A, res.pieces[:T], res.position, heads)
        self._head_view_to_position()
        table = d.att_table
        table.setRowCount(A.shape[0])
        table.setColumnCount(T)
        table.setHorizontalHeaderLabels([f"{i} {piece_text(res.pieces[i])}" for i in range(T)])
        table.setVerticalHeaderLabels([tr("explain.att.head", n=h + 1) for h in range(A.shape[0])])
        scale = max(float(np.abs(A).max()), 1e-12)
        cols = diverging(A, scale)
        for h in range(A.shape[0]):
            for i in range(T):
                it = QTableWidgetItem(fmt(float(A[h, i]), 2))
                it.setTextAlignment(Qt.AlignCenter)
                c = cols[h, i]
                it.setBackground(QColor.fromRgbF(float(c[0]), float(c[1]), float(c[2]), 0.55))
                table.setItem(h, i, it)
        fit_table_height(table)

    def _head_view_to_position(self) -> None:
        """The head view's scroll area (a long prompt: more rows than the page is high) scrolled so that the
        explained token's row, where the lines start, is in sight."""
        view, area = self.dock.att_head_view, self.dock.att_head_scroll
        view.resize(max(view.width(), area.viewport().width()), view.sizeHint().height())
        y, h = view.row_span(view.position)
        area.ensureVisible(0, int(y + h / 2), 0, int(h * 2))

    def _overview_axes(self, res: ExplainResult, heads: int, T: int) -> None:
        """The overview's axes: layers up the left, the tokens read along the bottom (per head: each head's
        name under its block of columns, the tokens as minor ticks)."""
        d = self.dock
        L = len(res.attention)
        left = d.att_plot.getAxis("left")
        left.setLabel(tr("explain.att.axis.layer"))
        step = max(1, L // 8)
        left.setTicks([[(ly, str(ly)) for ly in sorted({1, L, *range(step, L + 1, step)})]])
        bottom = d.att_plot.getAxis("bottom")
        n = min(T, len(res.pieces))
        per_block = n * (heads if d.att_heads.isChecked() else 1)
        room = max(2, int(d.att_plot.width() / TICK_PX))
        step = max(1, -(-per_block // room))  # a long prompt: every step-th token named (and the explained one)
        toks = [(i, piece_text(res.pieces[i])) for i in range(n)
                if i == res.position or (i % step == 0 and abs(i - res.position) * 2 >= step)]
        if d.att_heads.isChecked():
            major = [(h * (T + 1) + (T - 1) / 2, tr("explain.att.head", n=h + 1)) for h in range(heads)]
            minor = [(h * (T + 1) + i, p) for h in range(heads) for i, p in toks]
            bottom.setTicks([major, minor])
            bottom.setLabel(tr("explain.att.axis.head_token"))
        else:
            bottom.setTicks([toks])
            bottom.setLabel(tr("explain.att.axis.token"))
