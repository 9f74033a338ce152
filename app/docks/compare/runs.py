"""The Compare dock's "Same prompt" page (issue 41.3): the two picked models run on one prompt, side by side —
each model's answer and top-5, the answer's logit-lens curve (x = depth, layer / layers, so a 27-layer and a
93-layer model share the axis), its residual patching map (layer × position, each map over its own model's
depth) and the named figures of compute.compare_run (where the copy leaves the mention and reaches the answer,
the mixer of each kind whose patching restores most, the heads and experts whose knock-out removes most).

A model that runs seeded random weights (no trained toy ships for it) says so in its column's header, in the
caveat colour, before any number: its figures are noise, not findings.

The runs happen on the compare-runs lane of app.background (the engines of app.explain_service's cache, under its ENGINE_LOCK); the page
keeps the latest request only (a newer Run drops an older result)."""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import (QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget)

from app.background import BackgroundJobs
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.paint import qcolor
from app.widgets.safe_text import plain

COLOURS = ("phase_a", "phase_b")
MAP_H = 150  # each patching map's plot height: the two maps side by side, each over its own model's depth


def run_models(names: tuple[str, str], prompt: str):
    """compute.compare_run.side_run of both bundled models (their trained toy where one ships) on `prompt`, on the
    calling thread, with the shared engine cache's lock held while an engine runs."""
    from app.explain_service import ENGINE_LOCK, engine_for
    from compute.compare_run import side_run
    from compute.model_defaults import config_named

    out = []
    for name in names:
        config = config_named(name)
        with ENGINE_LOCK:
            out.append(side_run(engine_for(config, "trained"), prompt))
    return tuple(out)


def models_job(names: tuple[str, str], prompt: str):
    """The background job of one request (app.background): run_models, timed. A prompt outside the vocabulary or
    an unreadable config comes back as the job's one-line failure."""
    def run(job):
        t0 = time.perf_counter()
        return run_models(names, prompt), time.perf_counter() - t0
    return run


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


class _Column(QWidget):
    """One model's column: header (name, weights), figures, patching map."""

    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.header = QLabel()
        self.header.setObjectName(f"compare_run_header_{index}")
        self.header.setWordWrap(True)
        self.figures = QLabel()
        self.figures.setObjectName(f"compare_run_figures_{index}")
        self.figures.setWordWrap(True)
        self.figures.setTextInteractionFlags(Qt.TextSelectableByMouse)
        plain(self.header, self.figures)  # they quote the model's name and the prompt's pieces
        self.map = pg.PlotWidget()
        self.map.setObjectName(f"compare_run_map_{index}")
        self.map.setMenuEnabled(False)
        self.map.setFixedHeight(MAP_H)
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get("viridis"))
        self.map.addItem(self.image)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.header)
        lay.addWidget(self.map)
        lay.addWidget(self.figures)
        lay.addStretch(1)


class SamePromptPage(QWidget):
    """See the module docstring. `models()` -> (stem A, stem B) of the dock's pickers; `prompt()` the app's."""

    def __init__(self, models, prompt, parent=None):
        super().__init__(parent)
        self.setObjectName("compare_run_page")
        self._models, self._prompt = models, prompt
        self.results = None  # (SideRun, SideRun) of the latest finished request
        self.seconds = None
        self._serial = 0
        self.jobs = BackgroundJobs("compare-runs", self)
        self.jobs.done.connect(self._finished)
        self.jobs.failed.connect(self._failed)
        self.prompt_edit = QLineEdit()
        self.prompt_edit.setObjectName("compare_run_prompt")
        self.prompt_edit.returnPressed.connect(self.run_both)
        self.run_button = QPushButton()
        self.run_button.setObjectName("compare_run_button")
        self.run_button.clicked.connect(self.run_both)
        row = QHBoxLayout()
        row.addWidget(self.prompt_edit, 1)
        row.addWidget(self.run_button)
        self.status = QLabel()
        self.status.setObjectName("compare_run_status")
        self.status.setWordWrap(True)
        plain(self.status)
        self.lens = pg.PlotWidget()
        self.lens.setObjectName("compare_run_lens")
        self.lens.setMenuEnabled(False)
        self.lens.setFixedHeight(MAP_H)
        self.lens.setYRange(0, 1, padding=0.02)
        self.lens.setXRange(0, 1, padding=0.02)
        self.lens_legend = self.lens.addLegend(offset=(10, 10))
        self.curves = [self.lens.plot(pen=pg.mkPen(qcolor(c), width=2.5)) for c in COLOURS]
        self.columns = [_Column(0), _Column(1)]
        grid = QGridLayout()
        for i, col in enumerate(self.columns):
            grid.addWidget(col, 0, i)
            grid.setColumnStretch(i, 1)
        self.lens_label = QLabel()
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.status)
        lay.addWidget(self.lens_label)
        lay.addWidget(self.lens)
        lay.addLayout(grid)
        lay.addStretch(1)
        self.retranslate()

    # -- run ---------------------------------------------------------------------------------------------------
    @guarded
    def run_both(self) -> None:
        """Run both models on the prompt in the box (the app's prompt when the box is empty)."""
        text = self.prompt_edit.text() or self._prompt()
        self.prompt_edit.setText(text)
        self._serial += 1
        self.status.setText(tr("compare.run.running", n=2))
        self.jobs.start(self._serial, models_job(tuple(self._models()), text))

    def busy(self) -> bool:
        return self.jobs.busy()

    @guarded
    def _finished(self, serial: int, result) -> None:
        if serial != self._serial:
            return  # an older request: the newer one's result is coming
        self.results, self.seconds = result
        self.show_results()

    @guarded
    def _failed(self, serial: int, err: str) -> None:
        if serial == self._serial:
            self.status.setText(tr("compare.run.failed", error=err))

    def show_results(self) -> None:
        if self.results is None:
            self.status.setText(tr("compare.run.idle"))
            return
        self.status.setText(tr("compare.run.done", s=f"{self.seconds:.1f}"))
        self.lens_legend.clear()
        for i, (r, col, curve) in enumerate(zip(self.results, self.columns, self.curves)):
            weights = tr("compare.run.trained") if r.trained else tr("compare.run.random")
            col.header.setText(f"{r.display} · {weights}")
            col.header.setStyleSheet("" if r.trained else f"color: {qcolor('caveat').name()}; font-weight: bold;")
            col.figures.setText(figures_text(r))
            depth = np.arange(len(r.lens)) / max(1, r.layers)
            curve.setData(depth, np.asarray(r.lens))
            self.lens_legend.addItem(curve, f"{r.display}: P({r.word.strip()})")
            if r.patch is not None:  # rows = layers (0 = embedding), columns = positions
                rows, cols = r.patch.shape
                col.image.setImage(np.nan_to_num(r.patch.T, nan=0.0), levels=(0.0, 1.0))
                col.image.setRect(QRectF(-0.5, -0.5, cols, rows))  # cell (t, ℓ) centred on its position and layer
                col.map.setXRange(-0.5, cols - 0.5, padding=0)
                col.map.setYRange(-0.5, rows - 0.5, padding=0)
            else:
                col.image.clear()
            col.map.setLabel("left", tr("compare.run.axis_layer", n=r.layers))

    def retranslate(self) -> None:
        self.run_button.setText(tr("compare.run.button"))
        self.run_button.setToolTip(tr("tip.compare.run"))
        self.prompt_edit.setPlaceholderText(tr("compare.run.placeholder"))
        self.lens_label.setText(tr("compare.run.lens"))
        self.lens.setLabel("bottom", tr("compare.run.axis_depth"))
        for col in self.columns:
            col.map.setLabel("bottom", tr("compare.run.axis_position"))
        self.show_results()
