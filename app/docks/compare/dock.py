"""CompareDock: two models side by side (compute.teaching.compare) with a log-x plot of cache bytes vs context length.

The page fits its dock (issue 41.5): the table's cells wrap instead of eliding (the layer pattern is written as its
repeating unit, "KKKM × 23 + M", the whole pattern in the tooltip), the rows grow to their text, the plot takes the
height that is left (at least PLOT_MIN_H), and the page scrolls as a whole when the dock is shorter than that, so
the crossover line under the plot is never cut at the dock's bottom."""
from __future__ import annotations

import math
import os

import pyqtgraph as pg
from PySide6.QtCore import QBuffer, QByteArray, QEvent, QIODevice, Qt, QTimer
from PySide6.QtWidgets import (QComboBox, QDockWidget, QFileDialog, QFrame, QHBoxLayout, QHeaderView, QLabel, QPushButton,
                               QScrollArea, QSlider, QSpinBox, QTabWidget, QTableWidget, QTableWidgetItem, QVBoxLayout,
                               QWidget)

from app.files import atomic_io
from app.docks.compare.runs import SamePromptPage
from app.i18n import tr
from app.widgets.controls import fit_table_height, note_label
from app.widgets.paint import qcolor
from compute.teaching.compare import MAX_CONTEXT, MIN_CONTEXT, ModelSummary, contexts, crossover, summarize
from compute.config import ModelConfig, available_configs
from app.slot_guard import guarded

PLOT_MIN_H = 160  # the plot's least height: with the table and the lines around it the page fits 1920x1080's dock
PATTERN_GROUP = 10  # a pattern with no repeating unit is written in groups of this many layers (it can wrap)
SLIDER_STEPS = 80  # slider position i ↔ context 1024 × 1024^(i / SLIDER_STEPS)
COLOURS = ("phase_a", "phase_b")
ROWS = ("layers", "mixers", "pattern", "ffn", "experts", "top_k", "attn_res", "params_total", "params_active",
        "mla_per_token", "kda_state", "cache_at")


def human_bytes(n: float) -> str:
    """Binary units: B, KiB, MiB, GiB, TiB (3 significant figures)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    i = 0
    while abs(n) >= 1024 and i < len(units) - 1:
        n /= 1024
        i += 1
    return f"{n:.0f} {units[i]}" if i == 0 else f"{n:.3g} {units[i]}"


def pattern_text(pattern: str) -> str:
    """A layer pattern ("KKKMKKKM…M") as its repeating unit and the rest: "KKKM × 23 + M", "M × 61"; a pattern
    without a unit repeated over at least half of it in groups of PATTERN_GROUP letters (so the cell can wrap)."""
    for size in range(1, 9):
        unit = pattern[:size]
        if len(unit) < size:
            break
        times = 0
        while pattern.startswith(unit, times * size):
            times += 1
        if times >= 2 and times * size * 2 >= len(pattern):
            rest = pattern[times * size:]
            return f"{unit} × {times}" + (f" + {_groups(rest)}" if rest else "")
    return _groups(pattern)


def _groups(text: str) -> str:
    return " ".join(text[i:i + PATTERN_GROUP] for i in range(0, len(text), PATTERN_GROUP))


def slider_to_context(pos: int) -> int:
    return round(MIN_CONTEXT * (MAX_CONTEXT / MIN_CONTEXT) ** (pos / SLIDER_STEPS))


def context_to_slider(ctx: int) -> int:
    return round(SLIDER_STEPS * math.log(ctx / MIN_CONTEXT) / math.log(MAX_CONTEXT / MIN_CONTEXT))


class CompareDock(QDockWidget):
    retranslates_itself = True

    def __init__(self, state=None, parent=None):
        super().__init__(parent)
        self.state = state
        self.setObjectName("CompareDock")
        self._configs = available_configs()
        self._summaries: dict[str, ModelSummary] = {}
        self.context = 131_072
        self.export_dir = os.path.expanduser("~")  # File -> Export comparison's folder (app/export/compare_export.py)
        page = QWidget()
        page.setObjectName("compare_page")
        lay = QVBoxLayout(page)
        top = QWidget()  # the title and the two pickers, above both pages
        top_lay = QVBoxLayout(top)
        top_lay.setContentsMargins(6, 4, 6, 0)
        self.title = QLabel()
        self.title.setObjectName("compare_title")
        top_lay.addWidget(self.title)
        row = QHBoxLayout()
        self.pick_a, self.pick_b = QComboBox(), QComboBox()
        for combo, name, default in ((self.pick_a, "compare_model_a", "kimi-k3"),
                                     (self.pick_b, "compare_model_b", "deepseek-v3")):
            combo.setObjectName(name)
            for stem in self._configs:
                try:
                    label = self.summary(stem).display_name
                except (OSError, ValueError):  # an unreadable bundled config is left out, the dock still works
                    continue
                combo.addItem(label, stem)
            i = combo.findData(default)
            combo.setCurrentIndex(i if i >= 0 else 0)
            combo.currentIndexChanged.connect(guarded(lambda _i: self.refresh()))
            row.addWidget(combo, 1)
        top_lay.addLayout(row)
        self.table = QTableWidget(len(ROWS), 2)
        self.table.setObjectName("compare_table")
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)  # both models get half
        self.table.setWordWrap(True)  # a long value wraps in its cell and the row grows: never "896 routed …"
        self.table.setTextElideMode(Qt.ElideNone)
        self.table.viewport().installEventFilter(self)  # a new width: the rows re-fit (_fit_rows)
        lay.addWidget(self.table)
        crow = QHBoxLayout()
        self.context_label = QLabel()
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setObjectName("compare_context_slider")
        self.slider.setRange(0, SLIDER_STEPS)
        self.spin = QSpinBox()
        self.spin.setObjectName("compare_context_spin")
        self.spin.setRange(MIN_CONTEXT, MAX_CONTEXT)
        self.spin.setSingleStep(1024)
        self.spin.setGroupSeparatorShown(True)
        self.spin.setKeyboardTracking(False)  # a typed length applies on Enter, not at every digit
        crow.addWidget(self.context_label)
        crow.addWidget(self.slider, 1)
        crow.addWidget(self.spin)
        lay.addLayout(crow)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("compare_plot")
        self.plot.setLogMode(x=True, y=True)
        self.plot.setMinimumHeight(PLOT_MIN_H)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.getAxis("left").enableAutoSIPrefix(False)  # log axis: ticks read 10^8, 10^9 … bytes
        self.legend = self.plot.addLegend(offset=(10, 10))
        self.curves = [self.plot.plot(pen=pg.mkPen(qcolor(c), width=3)) for c in COLOURS]
        self.cross_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(qcolor("caveat"), width=2, style=Qt.DashLine))
        self.ctx_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(qcolor("note"), width=1))
        self.plot.addItem(self.cross_line)
        self.plot.addItem(self.ctx_line)
        lay.addWidget(self.plot, 1)
        self.crossover_label = note_label()
        self.crossover_label.setObjectName("compare_crossover")
        self.crossover_label.setWordWrap(True)
        lay.addWidget(self.crossover_label)
        erow = QHBoxLayout()
        self.export_button = QPushButton()
        self.export_button.setObjectName("compare_export")
        self.export_button.clicked.connect(self._export_clicked)
        self.status = QLabel()
        self.status.setObjectName("compare_status")
        self.status.setWordWrap(True)
        erow.addWidget(self.export_button)
        erow.addWidget(self.status, 1)
        lay.addLayout(erow)
        self.page = page
        self.scroll = QScrollArea()  # the whole page scrolls when the dock is shorter than it: nothing is cut
        self.scroll.setObjectName("compare_scroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # the page follows the dock's width
        self.scroll.setWidget(page)
        self.runs = SamePromptPage(self._picked, self._app_prompt)
        self.runs_scroll = QScrollArea()
        self.runs_scroll.setObjectName("compare_run_scroll")
        self.runs_scroll.setWidgetResizable(True)
        self.runs_scroll.setFrameShape(QFrame.NoFrame)
        self.runs_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.runs_scroll.setWidget(self.runs)
        self.tabs = QTabWidget()  # the config facts stay a page; the same-prompt run is the other
        self.tabs.setObjectName("compare_tabs")
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.scroll, "")
        self.tabs.addTab(self.runs_scroll, "")
        outer = QWidget()
        outer_lay = QVBoxLayout(outer)
        outer_lay.setContentsMargins(0, 0, 0, 0)
        outer_lay.setSpacing(0)
        outer_lay.addWidget(top)
        outer_lay.addWidget(self.tabs, 1)
        self.setWidget(outer)
        self.slider.valueChanged.connect(self._slider_moved)
        self.spin.valueChanged.connect(self._spin_changed)
        self._set_context(self.context)
        if state is not None and hasattr(state, "language_changed"):
            state.language_changed.connect(self._language_changed)  # bound slot: disconnected when the dock dies
        self.retranslate()

    # -- model ------------------------------------------------------------------------------------------------
    def summary(self, stem: str) -> ModelSummary:
        if stem not in self._summaries:
            self._summaries[stem] = summarize(ModelConfig.from_json(self._configs[stem]))
        return self._summaries[stem]

    def _picked(self) -> tuple[str, str]:
        """The two picked bundled models' config names."""
        return self.pick_a.currentData(), self.pick_b.currentData()

    def _app_prompt(self) -> str:
        """The window's prompt (the same-prompt page's default), else the toy language's example."""
        return getattr(self.state, "prompt", "") or "아이가 상자를 집었다. 그리고"

    def compared(self, view_prompt: str) -> dict:
        """What a view file keeps of the dock (app/files/view_compare.py): the picked models, and the Same-prompt page's
        prompt when its box holds one other than the view's."""
        box = self.runs.prompt_edit.text()
        return {"models": list(self._picked()), "prompt": box if box and box != view_prompt else None}

    def set_compared(self, compare: dict) -> None:
        """A view file's `compare` (validated): pick its models; the page's box holds its prompt (empty: the
        window's). The page's results stay until the user runs the pair (or exports it)."""
        for combo, name in zip((self.pick_a, self.pick_b), compare["models"]):
            i = combo.findData(name)
            if i >= 0:
                combo.setCurrentIndex(i)
        self.runs.prompt_edit.setText(compare.get("prompt") or "")

    def models(self) -> tuple[ModelSummary, ModelSummary]:
        return self.summary(self.pick_a.currentData()), self.summary(self.pick_b.currentData())

    def _set_context(self, ctx: int) -> None:
        self.context = int(min(max(ctx, MIN_CONTEXT), MAX_CONTEXT))
        for w, v in ((self.slider, context_to_slider(self.context)), (self.spin, self.context)):
            w.blockSignals(True)
            w.setValue(v)
            w.blockSignals(False)

    @guarded
    def _slider_moved(self, pos: int) -> None:
        self._set_context(slider_to_context(pos))
        self._context_changed()

    @guarded
    def _spin_changed(self, value: int) -> None:
        self._set_context(value)
        self._context_changed()

    def _context_changed(self) -> None:
        self.table.setVerticalHeaderItem(len(ROWS) - 1,
                                         QTableWidgetItem(tr("compare.row.cache_at", tokens=f"{self.context:,}")))
        self.refresh()

    # -- view -------------------------------------------------------------------------------------------------
    def _facts(self, s: ModelSummary) -> list[str]:
        no = tr("compare.no")
        params = (lambda v: tr("compare.billion", n=f"{v:g}") if v is not None else tr("compare.unknown"))
        return [str(s.layers), tr("compare.mixers", kda=s.kda_layers, mla=s.mla_layers), s.pattern,
                tr("compare.ffn", dense=s.dense_layers, moe=s.moe_layers),
                tr("compare.experts_value", routed=s.routed_experts, shared=s.shared_experts), str(s.top_k),
                tr("compare.attn_res_on", block=s.attn_res_block_size) if s.attn_res else no,
                params(s.total_params_billion), params(s.active_params_billion),
                human_bytes(s.mla_bytes_per_token), human_bytes(s.kda_state_bytes) if s.kda_state_bytes else no,
                human_bytes(s.cache_at(self.context))]

    @guarded
    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Resize and obj is self.table.viewport() and \
                event.size().width() != event.oldSize().width():
            QTimer.singleShot(0, self, guarded(self._fit_rows))  # once the columns have their new widths
        return False

    def _fit_rows(self) -> None:
        """Each row as tall as its wrapped text at the columns' width; the table as tall as its rows."""
        self.table.resizeRowsToContents()
        fit_table_height(self.table)

    @guarded
    def refresh(self) -> None:
        a, b = self.models()
        self.table.setHorizontalHeaderLabels([a.display_name, b.display_name])
        for col, s in enumerate((a, b)):
            for row, text in enumerate(self._facts(s)):
                item = QTableWidgetItem(pattern_text(text) if ROWS[row] == "pattern" else text)
                item.setToolTip(text)  # the whole 93-letter pattern
                if row == len(ROWS) - 1:
                    item.setForeground(qcolor(COLOURS[col]))
                self.table.setItem(row, col, item)
        self._fit_rows()
        xs = contexts()
        self.legend.clear()
        for curve, s in zip(self.curves, (a, b)):  # log mode: raw numbers in, items below in log10 units
            curve.setData(xs, [max(s.cache_at(x), 1.0) for x in xs])
            self.legend.addItem(curve, s.display_name)
        self.ctx_line.setValue(math.log10(self.context))
        self.cross = crossover(a, b)
        if self.cross is not None and MIN_CONTEXT <= self.cross <= MAX_CONTEXT:
            self.cross_line.setValue(math.log10(self.cross))
            self.cross_line.show()
        else:
            self.cross_line.hide()
        if self.cross is None:
            self.crossover_label.setText(tr("compare.crossover.none", a=a.display_name, b=b.display_name))
        else:
            low, high = (a, b) if a.cache_at(self.cross * 2) < b.cache_at(self.cross * 2) else (b, a)
            key = "compare.crossover.at" if self.cross <= MAX_CONTEXT else "compare.crossover.beyond"
            self.crossover_label.setText(tr(key, tokens=f"{round(self.cross):,}", low=low.display_name,
                                            high=high.display_name, bytes=human_bytes(a.cache_at(self.cross))))

    @guarded
    def _language_changed(self, _lang: str) -> None:
        self.retranslate()

    def retranslate(self) -> None:
        self.setWindowTitle(tr("compare.dock.title"))
        self.title.setText(tr("compare.title"))
        self.table.setVerticalHeaderLabels([tr(f"compare.row.{r}") for r in ROWS[:-1]]
                                           + [tr("compare.row.cache_at", tokens=f"{self.context:,}")])
        self.tabs.setTabText(0, tr("compare.tab.facts"))
        self.tabs.setTabText(1, tr("compare.tab.runs"))
        self.runs.retranslate()
        self.context_label.setText(tr("compare.context"))
        self.export_button.setText(tr("compare.export"))
        self.export_button.setToolTip(tr("tip.compare.export"))
        self.slider.setToolTip(tr("tip.compare.context"))
        self.plot.setLabel("bottom", tr("compare.axis.context"))
        self.plot.setLabel("left", tr("compare.axis.bytes"))
        self.refresh()

    # -- export -----------------------------------------------------------------------------------------------
    def render_png(self) -> bytes:
        """The shown page as a PNG: the config facts, or the same-prompt run (with the title and pickers)."""
        img = (self.page if self.tabs.currentIndex() == 0 else self.widget()).grab().toImage()
        buf = QByteArray()
        dev = QBuffer(buf)
        dev.open(QIODevice.WriteOnly)
        img.save(dev, "PNG")
        dev.close()
        return bytes(buf)

    def export_png(self, path: str) -> bool:
        """Write the dock's image to path atomically; a failure is one line in the status label."""
        try:
            written = atomic_io.write_bytes(path, self.render_png())
        except atomic_io.WriteError as exc:
            self.status.setText(atomic_io.message(exc))
            return False
        self.status.setText(tr("compare.exported", path=written))
        return True

    @guarded
    def _export_clicked(self) -> None:
        path, _f = QFileDialog.getSaveFileName(self, tr("compare.export"), "compare.png", tr("compare.png_filter"))
        if path:
            if not path.lower().endswith(".png"):
                path += ".png"
            self.export_png(path)
