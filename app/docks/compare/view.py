"""What the Compare dock's "Same prompt" page shows of two models' runs (issue 41.3), as one widget: the
answer's logit-lens curve of both models over depth (layer / layers, so a 27-layer and a 93-layer model share the
axis), and per model a column with its header (name, weights), its residual patching map (layer × position,
each over its own model's depth) and its named figures (compute.teaching.compare_run.SideRun).

The page (runs.py) puts it under its prompt box; File → Export comparison and `k3-explorer export --compare`
(sheet.py) draw the same widget off screen into one PNG, so the image is what the page shows."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.i18n import tr
from app.widgets.paint import qcolor
from app.widgets.safe_text import plain

COLOURS = ("phase_a", "phase_b")
MAP_H = 150  # each patching map's plot height: the two maps side by side, each over its own model's depth


def pct(v: float) -> str:
    return f"{100 * v:.1f} %"


def figures_text(r) -> str:
    """The named figures of one SideRun (plain text, one per line)."""
    lines = [tr("compare.run.answer", word=r.word.strip() or repr(r.word), p=pct(r.prob)),
             tr("compare.run.top5", words=", ".join(f"{w.strip() or repr(w)} {pct(p)}" for w, p in r.top))]
    if r.patch is None:
        lines.append(tr("compare.run.no_patch"))
    else:
        lines.append(tr("compare.run.swap", corrupted=r.corrupted))
        at = lambda v: tr("compare.run.none") if v is None else str(v)  # noqa: E731
        if r.mention is not None:
            lines.append(tr("compare.run.copy_leaves", pos=r.mention, piece=r.pieces[r.mention].strip(),
                            layer=at(r.copy_leaves)))
        lines.append(tr("compare.run.copy_arrives", pos=r.position, layer=at(r.copy_arrives)))
        for kind in ("kda", "mla"):
            best = r.mixer_best.get(kind)
            lines.append(tr("compare.run.mixer_none", kind=kind.upper()) if best is None else
                         tr("compare.run.mixer_best", kind=kind.upper(), n=r.mixer_count[kind], share=pct(best[0]),
                            layer=best[1], pos=best[2]))
    lines.append(tr("compare.run.heads", items=", ".join(
        tr("compare.run.head", layer=l, head=h, kind=k.upper(), share=pct(e)) for l, h, k, e in r.heads)
        or tr("compare.run.none")))
    lines.append(tr("compare.run.experts", items=", ".join(
        tr("compare.run.expert", layer=l, expert=e, share=pct(v)) for l, e, v in r.experts) or tr("compare.run.none")))
    return "\n".join(lines)


def position_ticks(pieces, cols: int, most: int = 16):
    """The patching map's position axis: each position with its token (pyqtgraph setTicks levels) when the prompt
    has at most `most` positions, else None (pyqtgraph's own numbered ticks: the pieces would overlap)."""
    if cols > most or len(pieces) < cols:
        return None
    return [[(i, f"{i}\n{(pieces[i].strip() or repr(pieces[i]))[:8]}") for i in range(cols)]]


class _Column:
    """One model's column: header (name, weights), patching map, figures. ComparisonView puts each part in a row
    of its grid, so both models' maps start and end at the same height whatever their headers' lengths."""

    def __init__(self, index: int, map_h: int = MAP_H, fill: bool = False):
        self.header = QLabel()
        self.header.setObjectName(f"compare_run_header_{index}")
        self.header.setWordWrap(True)
        self.figures = QLabel()
        self.figures.setObjectName(f"compare_run_figures_{index}")
        self.figures.setWordWrap(True)
        self.figures.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.figures.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        plain(self.header, self.figures)  # they quote the model's name and the prompt's pieces
        self.map = pg.PlotWidget(enableMenu=False)
        self.map.setObjectName(f"compare_run_map_{index}")
        if fill:  # at least map_h, and whatever height the page has left (the exported sheet); the plot's own
            self.map.setMinimumHeight(map_h)  # size hint is not asked for: the page is as tall as its text needs
            self.map.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Ignored)
        else:
            self.map.setFixedHeight(map_h)
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get("viridis"))
        self.map.addItem(self.image)
        self.note = pg.TextItem(anchor=(0.5, 0.5), color=qcolor("caveat"))  # why a map is missing, on the plot
        self.note.setPos(0.5, 0.5)
        self.map.addItem(self.note)


class ComparisonView(QWidget):
    """The lens plot over both columns. `show_results((SideRun, SideRun))` draws them; None clears. The plots are
    MAP_H tall in the dock; an exported sheet makes them taller (lens_h, map_h) and, with `fill`, lets the patching
    maps take whatever height its page has left, so the image has no empty band at its bottom."""

    def __init__(self, lens_h: int = MAP_H, map_h: int = MAP_H, fill: bool = False, parent=None):
        super().__init__(parent)
        self.lens = pg.PlotWidget(enableMenu=False)
        self.lens.setObjectName("compare_run_lens")
        self.lens.setFixedHeight(lens_h)
        self.lens.setYRange(0, 1, padding=0.02)
        self.lens.setXRange(0, 1, padding=0.02)
        self.lens_legend = self.lens.addLegend(offset=(10, 10))
        self.curves = [self.lens.plot(pen=pg.mkPen(qcolor(c), width=2.5)) for c in COLOURS]
        self.columns = [_Column(0, map_h, fill), _Column(1, map_h, fill)]
        grid = QGridLayout()
        for i, col in enumerate(self.columns):  # rows: headers, maps, figures
            grid.addWidget(col.header, 0, i)
            grid.addWidget(col.map, 1, i)
            grid.addWidget(col.figures, 2, i, Qt.AlignTop)
            grid.setColumnStretch(i, 1)
        grid.setRowStretch(1 if fill else 3, 1)  # the maps take the height left, or nothing does (the dock)
        self.lens_label = QLabel()
        self.lens_label.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.lens_label)
        lay.addWidget(self.lens)
        lay.addLayout(grid, 1 if fill else 0)
        self.retranslate()

    def show_results(self, results) -> None:
        self.lens_legend.clear()
        for i, (col, curve) in enumerate(zip(self.columns, self.curves)):
            r = results[i] if results is not None else None
            if r is None:
                col.header.clear()
                col.figures.clear()
                col.image.clear()
                col.note.setText("")
                curve.setData([], [])
                continue
            weights = tr("compare.run.trained") if r.trained else tr("compare.run.random")
            col.header.setText(f"{r.display} · {weights}")
            col.header.setStyleSheet(f"color: {qcolor(COLOURS[i]).name()}; font-weight: bold;" if r.trained else
                                     f"color: {qcolor('caveat').name()}; font-weight: bold;")
            col.figures.setText(figures_text(r))
            depth = np.arange(len(r.lens)) / max(1, r.layers)
            curve.setData(depth, np.asarray(r.lens))
            self.lens_legend.addItem(curve, f"{r.display}: P({r.word.strip() or repr(r.word)})")
            if r.patch is not None:  # rows = layers (0 = embedding), columns = positions
                rows, cols = r.patch.shape
                col.image.setImage(np.nan_to_num(r.patch.T, nan=0.0), levels=(0.0, 1.0))
                col.image.setRect(QRectF(-0.5, -0.5, cols, rows))  # cell (t, ℓ) centred on its position and layer
                col.map.setXRange(-0.5, cols - 0.5, padding=0)
                col.map.setYRange(-0.5, rows - 0.5, padding=0)
                col.map.getAxis("bottom").setTicks(position_ticks(r.pieces, cols))
            else:  # no map for this prompt: the plot says why instead of showing empty axes
                col.image.clear()
                col.map.getAxis("bottom").setTicks(None)
                col.map.setXRange(0, 1, padding=0)
                col.map.setYRange(0, 1, padding=0)
            col.note.setText("" if r.patch is not None else tr("compare.run.no_patch"))
            for side in ("left", "bottom"):  # no numbers on the axes of a map that is not there
                col.map.getAxis(side).setStyle(showValues=r.patch is not None)
            col.map.setLabel("left", tr("compare.run.axis_layer", n=r.layers))

    def retranslate(self) -> None:
        self.lens_label.setText(tr("compare.run.lens"))
        self.lens.setLabel("bottom", tr("compare.run.axis_depth"))
        for col in self.columns:
            col.map.setLabel("bottom", tr("compare.run.axis_position"))
