"""ExplainDock: why the toy predicts its word at the chosen position (see the package docstring).

The explanation (a prefill, the lens, one knock-out re-run per token: ~50-150 ms) runs on a pool thread of its
own with its own engine (app/docks/explain/model.py), never on the UI thread; requests are coalesced (latest
wins) and only made while the dock is visible. The result carries plain numbers only.
"""
from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QObject, QRectF, QRunnable, Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QDockWidget, QHBoxLayout, QHeaderView, QLabel,
                               QListWidget, QMenu,
                               QPushButton, QScrollArea, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from app.docks.deferred import on_screen
from app.docks.experts.heatmap import heatmap_plot
from app.docks.explain.model import ABLATION_MODES, Engines, ExplainRequest, ExplainResult, explain_result
from app.docks.explain.side_by_side import SideBySide, attention_share, share_image
from app.docks.explain.show3d import Show3DControls, largest_block, layer_words_html, overlay_of
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.controls import fit_table_height, fmt, note_label, scroll_page, section_label, shrinkable
from app.widgets.paint import qcolor
from compute.trace import Knobs
from scene.palette import diverging

_POOL: QThreadPool | None = None
DEBOUNCE_MS = 300  # a pause in the knob changes, then one explanation: it does not compete with the drag (bench/app.py)


def _pool() -> QThreadPool:
    """One worker thread for the explanations, owned by the application (it waits for a running job on exit)."""
    global _POOL
    if _POOL is None:
        _POOL = QThreadPool(QCoreApplication.instance())
        _POOL.setMaxThreadCount(1)
    return _POOL


def _esc(s: str) -> str:
    return html.escape(s, quote=False)


def source_text(c: int) -> str:
    """An AttnRes source as the knock-out lists name it: 0 = the embedding, j = block j's stored sum."""
    return tr("knockout.what.source0") if c == 0 else tr("knockout.what.source", n=c)


def piece_text(piece: str) -> str:
    """A piece as the dock shows it: quoted, a newline as \\n."""
    return "'" + piece.replace("\n", "\\n") + "'"


def lens_series(res: ExplainResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, probability, rank) of the lens curve: the embedding at 0, after layer ℓ's mixer at ℓ − ½, after the
    whole layer at ℓ (so a jump shows whether the mixer or the FFN made it)."""
    L = len(res.lens_mixer_prob)
    x = np.empty(2 * L + 1)
    prob = np.empty(2 * L + 1)
    rank = np.empty(2 * L + 1)
    x[0], prob[0], rank[0] = 0.0, res.lens_prob[0], res.lens_rank[0]
    x[1::2] = np.arange(1, L + 1) - 0.5
    x[2::2] = np.arange(1, L + 1)
    prob[1::2], rank[1::2] = res.lens_mixer_prob, res.lens_mixer_rank
    prob[2::2], rank[2::2] = res.lens_prob[1:], res.lens_rank[1:]
    return x, prob, rank


class _KnockoutList(QListWidget):
    """The active knock-out's entries; Delete / Backspace removes the selected one."""

    def __init__(self, dock):
        super().__init__()
        self._dock = dock

    @guarded
    def keyPressEvent(self, ev):
        if ev.key() in (Qt.Key_Delete, Qt.Key_Backspace) and self.currentRow() >= 0:
            self._dock.remove_knockout(self.currentRow())
            ev.accept()
            return
        super().keyPressEvent(ev)


class _Relay(QObject):
    """Carries a job's result from the pool thread to the UI thread (a queued signal)."""

    done = Signal(object)  # ExplainResult
    failed = Signal(int, str)  # serial, one-line reason


class _Job(QRunnable):
    def __init__(self, engines: Engines, req: ExplainRequest, relay: _Relay):
        super().__init__()
        self.engines, self.req, self.relay = engines, req, relay

    def run(self) -> None:
        try:
            res = explain_result(self.engines, self.req)
        except Exception as exc:  # noqa: BLE001 - shown in the dock, the app keeps running
            lines = [s for s in str(exc).splitlines() if s.strip()]
            self._emit(self.relay.failed, self.req.serial, f"{type(exc).__name__}: {lines[0] if lines else ''}")
            return
        self._emit(self.relay.done, res)

    @staticmethod
    def _emit(signal, *args) -> None:
        """Hand the result over; when the app is shutting down Qt may have deleted the relay already (the
        result has nowhere to go then: nothing to do)."""
        try:
            signal.emit(*args)
        except RuntimeError:
            pass


class ExplainDock(QDockWidget):
    retranslates_itself = True  # follows state.language_changed (the main window leaves it alone)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.setObjectName("ExplainDock")
        self._engines = Engines()
        self._relay = _Relay()  # unparented: the job holds it too, so it outlives a closed dock
        self._relay.done.connect(self._on_done)
        self._relay.failed.connect(self._on_failed)
        self._serial = 0
        self._busy = False
        self._pending: ExplainRequest | None = None
        self._shown_key = None
        self._tokens: tuple = ()
        self.result: ExplainResult | None = None
        self._knockout: tuple = ()
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._submit)

        area = QScrollArea()
        area.setObjectName("explain_scroll")
        lay, self.title = scroll_page(area)
        self.header = QLabel()
        self.header.setObjectName("explain_header")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.RichText)
        lay.addWidget(self.header)
        row = QHBoxLayout()
        self.position_label = QLabel()
        self.position = shrinkable(QComboBox(), 18)
        self.position.setObjectName("explain_position")
        self.position.activated.connect(guarded(lambda _i: self.refresh()))
        row.addWidget(self.position_label)
        row.addWidget(self.position, 1)
        lay.addLayout(row)
        self.status = note_label()
        self.status.setObjectName("explain_status")
        self.status.setTextFormat(Qt.PlainText)  # it may quote an error message (a config's name): never rich text
        lay.addWidget(self.status)
        self.show3d = Show3DControls()
        self.show3d.changed.connect(self._show3d_changed)
        lay.addWidget(self.show3d)

        self.lens_title = section_label()
        lay.addWidget(self.lens_title)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("explain_lens_plot")
        self.plot.setMinimumHeight(220)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setYRange(0.0, 1.0, padding=0.04)
        self.legend = self.plot.addLegend(offset=(8, 8))
        self.curve_prob = self.plot.plot(pen=pg.mkPen(qcolor("output"), width=3))
        self.curve_rank = self.plot.plot(pen=pg.mkPen(qcolor("kda"), width=2, style=Qt.DashLine))
        lay.addWidget(self.plot)
        self.lens_column = note_label()
        self.lens_column.setObjectName("explain_lens_column")
        lay.addWidget(self.lens_column)
        self.lens_note = note_label()
        lay.addWidget(self.lens_note)
        self.side = SideBySide(self.plot)
        self.side.toggled.connect(guarded(lambda _on: self.refresh()))
        lay.addWidget(self.side)

        self.sources_title = section_label()
        lay.addWidget(self.sources_title)
        self.sources = QTableWidget(0, 4)
        self.sources.setObjectName("explain_sources")
        self.sources.verticalHeader().setVisible(False)
        self.sources.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.sources.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.sources.setSelectionMode(QAbstractItemView.SingleSelection)
        self.sources.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.sources.setContextMenuPolicy(Qt.CustomContextMenu)
        self.sources.customContextMenuRequested.connect(self._sources_menu)
        self.sources.itemSelectionChanged.connect(self._update_buttons)
        lay.addWidget(self.sources)
        krow = QHBoxLayout()
        self.knock = QPushButton()
        self.knock.setObjectName("explain_knockout")
        self.knock.clicked.connect(self.knock_out_selected)
        self.mode = QComboBox()
        self.mode.setObjectName("explain_mode")
        self.mode.activated.connect(guarded(lambda _i: self.refresh()))
        self.restore = QPushButton()
        self.restore.setObjectName("explain_restore")
        self.restore.clicked.connect(self.restore_knockout)
        krow.addWidget(self.knock)
        krow.addWidget(self.mode)
        krow.addWidget(self.restore)
        krow.addStretch(1)
        lay.addLayout(krow)
        self.sources_note = note_label()
        lay.addWidget(self.sources_note)
        self.ko_list_title = QLabel()
        self.ko_list_title.setTextFormat(Qt.PlainText)
        self.ko_list_title.setWordWrap(True)
        lay.addWidget(self.ko_list_title)
        self.ko_list = _KnockoutList(self)
        self.ko_list.setObjectName("explain_knockout_list")
        self.ko_list.setContextMenuPolicy(Qt.CustomContextMenu)
        self.ko_list.customContextMenuRequested.connect(self._ko_list_menu)
        lay.addWidget(self.ko_list)
        self.ko_list.hide()
        self.ko_list_title.hide()
        self.ko_label = QLabel()
        self.ko_label.setObjectName("explain_knockout_result")
        self.ko_label.setWordWrap(True)
        self.ko_label.setTextFormat(Qt.RichText)
        lay.addWidget(self.ko_label)
        self.ko_table = QTableWidget(5, 2)
        self.ko_table.setObjectName("explain_knockout_table")
        self.ko_table.verticalHeader().setVisible(False)
        self.ko_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.ko_table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        lay.addWidget(self.ko_table)

        self.att_title = section_label()
        lay.addWidget(self.att_title)
        self.att_heads = QCheckBox()
        self.att_heads.setObjectName("explain_attention_per_head")
        self.att_heads.toggled.connect(self._per_head_toggled)
        lay.addWidget(self.att_heads)
        self.att_plot, self.att_image = heatmap_plot("explain_attention_overview")
        self.att_plot.setMinimumHeight(260)
        self.att_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(qcolor("focus"), width=1))
        self.att_plot.addItem(self.att_line)
        self.att_plot.scene().sigMouseClicked.connect(self._attention_clicked)
        lay.addWidget(self.att_plot)
        self.att_layer = QLabel()
        self.att_layer.setObjectName("explain_attention_layer")
        self.att_layer.setWordWrap(True)
        lay.addWidget(self.att_layer)
        self.att_table = QTableWidget(0, 0)
        self.att_table.setObjectName("explain_attention")
        self.att_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.att_table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        lay.addWidget(self.att_table)
        self.att_note = note_label()
        lay.addWidget(self.att_note)

        self.blocks_title = section_label()
        lay.addWidget(self.blocks_title)
        self.blocks = QTableWidget(0, 3)
        self.blocks.setObjectName("explain_blocks")
        self.blocks.verticalHeader().setVisible(False)
        self.blocks.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.blocks.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.blocks.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.blocks.setSelectionMode(QAbstractItemView.SingleSelection)
        self.blocks.itemSelectionChanged.connect(self._update_buttons)
        self.blocks.setContextMenuPolicy(Qt.CustomContextMenu)
        self.blocks.customContextMenuRequested.connect(self._blocks_menu)
        lay.addWidget(self.blocks)
        brow = QHBoxLayout()
        self.knock_block = QPushButton()
        self.knock_block.setObjectName("explain_knockout_block")
        self.knock_block.clicked.connect(self.knock_out_block)
        brow.addWidget(self.knock_block)
        brow.addStretch(1)
        lay.addLayout(brow)
        self.block_words = QLabel()
        self.block_words.setObjectName("explain_block_words")
        self.block_words.setWordWrap(True)
        self.block_words.setTextFormat(Qt.RichText)
        lay.addWidget(self.block_words)
        self.blocks_note = note_label()
        lay.addWidget(self.blocks_note)
        lay.addStretch(1)
        self.setWidget(area)

        state.trace_changed.connect(self._on_trace)
        state.layer_changed.connect(self._on_layer)
        state.language_changed.connect(self._language_changed)  # bound slots: disconnected when the dock dies
        self.visibilityChanged.connect(self._on_visible)
        self.retranslate()
        if state.trace is not None:
            self._on_trace(state.trace)

    # ------------------------------------------------------------------ requests
    @guarded
    def _on_trace(self, trace) -> None:
        toks = tuple(tuple(t) for t in trace.tokens)
        if toks[:trace.prompt_len] != self._tokens[:trace.prompt_len] or self.position.count() != len(toks):
            keep = self.position.currentData() if toks[:trace.prompt_len] == self._tokens[:trace.prompt_len] else None
            self.position.clear()
            for i, (pc, _) in enumerate(toks):
                self.position.addItem(f"{i} · {piece_text(pc)}" + ("" if i < trace.prompt_len else " ⋯"), i)
            want = keep if keep is not None and keep < len(toks) else trace.prompt_len - 1
            self.position.setCurrentIndex(want)
            if keep is None:
                self._knockout = ()
                if self.result is not None:  # another prompt: the drawn explanation no longer applies
                    self.result = None
                    self._emit_overlay()
        self._tokens = toks
        if on_screen(self.widget()) or self.show3d.any_on():  # the 3D view shows it even when this dock is closed
            self.refresh()

    @guarded
    def _on_visible(self, visible: bool) -> None:
        if visible:  # shown: the sources too (a result made for the 3D view alone has none)
            self.refresh()

    def current_request(self) -> ExplainRequest | None:
        tr_ = self.state.trace
        if tr_ is None or self.position.count() == 0:
            return None
        k = tr_.knobs  # only the knobs that change the layers: temperature / top-p leave the explanation as it is
        knobs = Knobs(alpha=k.alpha, beta=k.beta, temperature=0.0, expert_bias=dict(k.expert_bias))
        return ExplainRequest(0, self.state.config, tr_.weights_name, tuple(tuple(t) for t in tr_.tokens),
                              int(self.position.currentData()), knobs, self._knockout,
                              ABLATION_MODES[max(0, self.mode.currentIndex())], self.side.enabled(),
                              on_screen(self.widget()))  # the sources' re-runs only for a dock that is seen

    @guarded
    def refresh(self) -> None:
        """Ask for the explanation of the current trace, position, mode and knock-out (skipped when shown), after
        DEBOUNCE_MS without another ask: a slider drag's stream of traces costs one explanation at its end."""
        self._debounce.start()

    @guarded
    def _submit(self) -> None:
        req = self.current_request()
        if req is None:
            return
        key = (req.tokens, req.position, req.knobs, req.weights, req.knockout, req.mode,
               getattr(req.config, "name", None), req.compare, req.sources)
        if key == self._shown_key and self._pending is None:
            return
        self._shown_key = key
        self._serial += 1
        from dataclasses import replace

        req = replace(req, serial=self._serial)
        if self._busy:
            self._pending = req
            return
        self._start(req)

    def _start(self, req: ExplainRequest) -> None:
        self._busy = True
        self.status.setText(tr("explain.computing"))
        _pool().start(_Job(self._engines, req, self._relay))

    def _next(self) -> None:
        self._busy = False
        if self._pending is not None:
            req, self._pending = self._pending, None
            self._start(req)

    @guarded
    def _on_done(self, res: ExplainResult) -> None:
        if res.serial == self._serial:
            self.result = res
            self.status.setText(tr("explain.took", ms=f"{res.seconds * 1000:.0f}"))
            self._show(res)
        self._next()

    @guarded
    def _on_failed(self, serial: int, message: str) -> None:
        if serial == self._serial:
            self.status.setText(tr("explain.error", message=message))
            self._shown_key = None
        self._next()

    @property
    def busy(self) -> bool:
        return self._busy or self._pending is not None or self._debounce.isActive()

    # ------------------------------------------------------------------ knock-outs
    def _selected_position(self) -> int | None:
        rows = self.sources.selectionModel().selectedRows() if self.sources.selectionModel() else []
        if not rows or self.result is None:
            return None
        return self.result.sources[rows[0].row()][0]

    @guarded
    def knock_out_selected(self) -> None:
        p = self._selected_position()
        if p is None:
            return
        self._knockout = (("token", p),)
        self._knockouts_changed()

    def knockable_block(self, row: int) -> tuple | None:
        """The knock-out item of a contributions row: a mixer or dense MLP (a block), a routed expert at its
        layer; None for the embedding and the shared experts (no knock-out of their own)."""
        if self.result is None or not 0 <= row < len(self.result.blocks):
            return None
        ly, part, _ = self.result.blocks[row]
        if part in ("mixer", "ffn"):
            return ("block", ly, part)
        if part.startswith("expert "):
            return ("expert", ly, int(part.split()[1]))
        return None

    def _selected_block(self) -> tuple | None:
        rows = self.blocks.selectionModel().selectedRows() if self.blocks.selectionModel() else []
        return self.knockable_block(rows[0].row()) if rows else None

    @guarded
    def knock_out_block(self) -> None:
        item = self._selected_block()
        if item is None:
            return
        self._knockout = (item,)
        self._knockouts_changed()

    # --- knock-outs as view files store them (app/viewfile.py: mode, tokens, blocks, experts; 1-based layers)
    def knockouts(self) -> dict | None:
        """The active knock-out set as a view file's `knockouts` value, or None."""
        if not self._knockout:
            return None
        out = {"mode": ABLATION_MODES[max(0, self.mode.currentIndex())], "tokens": [], "blocks": [], "experts": []}
        sources = [int(item[1]) for item in self._knockout if item[0] == "source"]
        if sources:
            out["sources"] = sources
        for item in self._knockout:
            if item[0] == "token":
                out["tokens"].append(int(item[1]))
            elif item[0] == "block":
                out["blocks"].append([int(item[1]), str(item[2])])
            elif item[0] == "expert":
                out["experts"].append([None if item[1] is None else int(item[1]), int(item[2])])
        return out

    def set_knockouts(self, ko: dict | None) -> None:
        """Apply a view file's (already validated) knock-out set and re-run; None clears it. An expert without a
        layer is knocked out at every MoE layer, as compute.explain reads a bare id."""
        if not ko:
            self._knockout = ()
            self._knockouts_changed()
            return
        items: list[tuple] = [("token", int(p)) for p in ko.get("tokens", ())]
        items += [("block", int(ly), str(part)) for ly, part in ko.get("blocks", ())]
        for ly, e in ko.get("experts", ()):
            items.append(("expert", None if ly is None else int(ly), int(e)))  # None: every MoE layer
        items += [("source", int(c)) for c in ko.get("sources", ())]
        mode = ko.get("mode", ABLATION_MODES[0])
        if mode in ABLATION_MODES:
            self.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self._knockout = tuple(dict.fromkeys(items))
        self._knockouts_changed()

    def explained_position(self) -> int | None:
        """The 0-based position whose prediction is explained (the position box), None before a trace."""
        return int(self.position.currentData()) if self.position.count() else None

    def set_explain3d(self, e: dict) -> None:
        """A view file's explain3d (validated): the 3D view choices and the explained position (None or one the
        trace lacks: the last prompt position)."""
        self.show3d.set_values(e["lens"], e["route"], e["route_threshold"], e["arcs"])
        pos = e.get("position")
        i = self.position.findData(int(pos)) if pos is not None else -1
        if i >= 0 and i != self.position.currentIndex():
            self.position.setCurrentIndex(i)
            self.refresh()

    def explain_position(self, position: int) -> None:
        """Explain the prediction after `position` (a token chip's or a token row's menu) and show this dock."""
        i = self.position.findData(int(position))
        if i < 0:
            return
        self.position.setCurrentIndex(i)
        self.refresh()
        self.state.show_dock(self.objectName(), "")

    def add_knockout(self, item: tuple, mode: str) -> None:
        """Knock `item` out too (a context menu outside this dock: the 3D view, a token chip) in `mode`, re-run,
        and bring this dock to the front to show the before / after."""
        if mode in ABLATION_MODES:
            self.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self._knockout = tuple(dict.fromkeys(self._knockout + (tuple(item),)))
        self._knockouts_changed()
        self.state.show_dock(self.objectName(), "")

    def remove_knockout(self, index: int) -> None:
        """Take one entry out of the active knock-out (the list's Delete key or its menu)."""
        if 0 <= index < len(self._knockout):
            self._knockout = self._knockout[:index] + self._knockout[index + 1:]
            self._knockouts_changed()

    @guarded
    def _ko_list_menu(self, pos) -> None:
        it = self.ko_list.itemAt(pos)
        if it is None:
            return
        menu = QMenu(self)
        menu.setObjectName("explain_knockout_list_menu")
        row = self.ko_list.row(it)
        menu.addAction(tr("knockout.list.remove"), lambda: self.remove_knockout(row))
        menu.exec(self.ko_list.viewport().mapToGlobal(pos))

    def _fill_ko_list(self) -> None:
        """The active knock-out's entries, one per row."""
        self.ko_list.clear()
        pieces = self.result.pieces if self.result is not None else []
        for it in self._knockout:
            if it[0] == "token":
                piece = pieces[it[1]] if it[1] < len(pieces) else ""
                text = tr("knockout.what.token", position=it[1], piece=piece_text(piece))
            elif it[0] == "source":
                text = source_text(it[1])
            elif it[0] == "block":
                text = tr("explain.ko.what_block", layer=it[1], block=self._part(it[2]))
            elif it[1] is None:
                text = tr("knockout.what.expert_all", n=it[2])
            else:
                text = tr("explain.ko.what_expert", layer=it[1], n=it[2])
            self.ko_list.addItem(text)
        shown = bool(self._knockout)
        self.ko_list.setVisible(shown)
        self.ko_list_title.setVisible(shown)
        self.ko_list.setFixedHeight(min(6, max(1, len(self._knockout))) * (self.ko_list.fontMetrics().height() + 6) + 6)

    def set_knockout_items(self, value: tuple) -> None:
        """Undo / redo (app/history.py): the (items, mode) pair knockouts_changed carried."""
        items, mode = value
        if mode in ABLATION_MODES:
            self.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self._knockout = tuple(items)
        self._knockouts_changed()

    def _knockouts_changed(self) -> None:
        self.state.knockouts_changed.emit((self._knockout, ABLATION_MODES[max(0, self.mode.currentIndex())]))
        self._fill_ko_list()
        self.refresh()

    @guarded
    def restore_knockout(self) -> None:
        """Undo the knock-out: the explanation without it."""
        self._knockout = ()
        self._knockouts_changed()

    @guarded
    def _sources_menu(self, pos) -> None:
        item = self.sources.itemAt(pos)
        if item is None:
            return
        self.sources.selectRow(item.row())
        self._knock_menu(self.sources, pos, self.knock_out_selected)

    @guarded
    def _blocks_menu(self, pos) -> None:
        item = self.blocks.itemAt(pos)
        if item is None or self.knockable_block(item.row()) is None:
            return
        self.blocks.selectRow(item.row())
        self._knock_menu(self.blocks, pos, self.knock_out_block)

    def _knock_menu(self, table, pos, knock) -> None:
        """'Knock out (zero ablation)' / 'Knock out (mean ablation)': the mode the action names, then the re-run."""
        menu = QMenu(self)
        menu.setObjectName("explain_knockout_menu")
        for i, m in enumerate(ABLATION_MODES):
            def act(_checked=False, i=i):
                self.mode.setCurrentIndex(i)
                knock()
            menu.addAction(tr("knockout.menu", mode=tr(f"explain.mode.{m}")), act)
        menu.exec(table.viewport().mapToGlobal(pos))

    @guarded
    def _update_buttons(self) -> None:
        self.knock.setEnabled(self._selected_position() is not None)
        self.knock_block.setEnabled(self._selected_block() is not None)
        self._show_block_words()
        self.restore.setEnabled(bool(self._knockout))

    # ------------------------------------------------------------------ drawing
    def _show(self, res: ExplainResult) -> None:
        pos_piece = res.pieces[res.position] if res.position < len(res.pieces) else ""
        self.header.setText(tr("explain.header", position=res.position, piece=_esc(piece_text(pos_piece)),
                               word=_esc(piece_text(res.word)), prob=fmt(res.prob),
                               logit=fmt(res.logit, 2), weights=tr(f"explain.weights.{res.weights}")))
        x, prob, rank = lens_series(res)
        self.curve_prob.setData(x, prob)
        self.curve_rank.setData(x, 1.0 / rank)
        self.plot.setXRange(0, x[-1], padding=0.02)
        x = np.arange(len(res.lens_prob))
        self.plot.setYRange(0.0, 1.0, padding=0.04)
        first = next((i for i in range(len(res.lens_rank)) if all(r == 1 for r in res.lens_rank[i:])), None)
        marks = sorted(set(list(range(0, len(x), 12)) + [len(x) - 1]))
        column = " · ".join(f"L{i} {_esc(piece_text(res.lens_top[i][0]))}" for i in marks)
        self.lens_column.setText(tr("explain.lens.column", column=column) + " "
                                 + (tr("explain.lens.first", layer=first) if first is not None
                                    else tr("explain.lens.never")))
        top = max(range(len(res.sources)), key=lambda i: res.sources[i][2]) if res.sources else -1
        self.sources.setRowCount(len(res.sources))
        for r, (p, pc, eff, ans) in enumerate(res.sources):
            cells = [str(p), piece_text(pc), fmt(eff), piece_text(ans)]
            for c, text in enumerate(cells):
                it = QTableWidgetItem(text)
                it.setTextAlignment((Qt.AlignRight if c in (0, 2) else Qt.AlignLeft) | Qt.AlignVCenter)
                if r == top:
                    f = it.font(); f.setBold(True); it.setFont(f)
                if c == 3 and ans != res.word:
                    it.setForeground(qcolor("output"))
                self.sources.setItem(r, c, it)
        fit_table_height(self.sources)
        self._show_knockout(res)
        self.blocks.setRowCount(len(res.blocks))
        for r, (ly, part, v) in enumerate(res.blocks):
            kind = "" if ly == 0 else res.mixers[ly - 1].upper() + " · " if part == "mixer" else ""
            for c, text in enumerate((str(ly), kind + self._part(part), fmt(v))):
                it = QTableWidgetItem(text)
                it.setTextAlignment((Qt.AlignRight if c != 1 else Qt.AlignLeft) | Qt.AlignVCenter)
                if c == 2:
                    it.setForeground(qcolor("good" if v > 0 else "output"))
                self.blocks.setItem(r, c, it)
        fit_table_height(self.blocks)
        self._show_attention(res)
        self.side.show_result(res, lens_series)
        self.show3d.set_largest(largest_block(res))
        self._emit_overlay()
        self.blocks_note.setText(tr("explain.blocks.note", n=res.n_blocks, rest=f"{res.rest:.1e}",
                                    logit=fmt(res.logit, 3)))
        self._update_buttons()

    # ------------------------------------------------------------------ attention
    @guarded
    def _on_layer(self, layer: int) -> None:
        """A layer picked anywhere (a slab clicked in the 3D stack, PgUp/PgDn): its attention row and what its
        mixer and FFN promote and suppress."""
        if self.result is not None:
            self._show_attention(self.result)
            text = layer_words_html(self.result, layer + 1)
            if text:
                self.block_words.setText(text)

    # ------------------------------------------------------------------ the 3D view
    @guarded
    def _show3d_changed(self) -> None:
        if self.show3d.any_on() and self.result is None:
            self.refresh()
        self._emit_overlay()

    def _emit_overlay(self) -> None:
        """Hand the 3D view what it draws of the shown result (None: nothing)."""
        self.state.explanation_shown.emit(overlay_of(self.result, *self.show3d.values()))

    @guarded
    def _attention_clicked(self, event) -> None:
        """A click on the overview selects that layer (the whole app follows)."""
        if self.result is None or event.button() != Qt.LeftButton:
            return
        p = self.att_plot.getViewBox().mapSceneToView(event.scenePos())
        row = int(np.floor(p.y() - 0.5))  # 0-based layer
        if 0 <= row < len(self.result.attention):
            self.state.select_layer(row)

    @guarded
    def _per_head_toggled(self, on: bool) -> None:
        self.side.per_head = bool(on)
        if self.result is not None:
            self._show_attention(self.result)
            self.side.show_result(self.result, lens_series)

    def _show_attention(self, res: ExplainResult) -> None:
        rows = res.attention
        if not rows:
            return
        T = rows[0].shape[1]
        share = attention_share(rows, self.att_heads.isChecked())  # [L, T] (or per head), |row| sums to ≤ 1
        self.att_image.setImage(share_image(share), levels=(0, 255))  # the largest share fully saturated
        W = share.shape[1]
        self.att_image.setRect(QRectF(-0.5, 0.5, W, len(rows)))  # column i centred on position i, row ℓ on layer ℓ
        self.att_plot.setXRange(-0.5, W - 0.5, padding=0.0)
        self.att_plot.setYRange(0.5, len(rows) + 0.5, padding=0.0)
        li = min(max(self.state.layer, 0), len(rows) - 1)
        self.att_line.setValue(li + 1)
        A = rows[li]
        kind = res.mixers[li]
        self.att_layer.setText(tr(f"explain.att.layer_{kind}", layer=li + 1, position=res.position))
        self.att_table.setRowCount(A.shape[0])
        self.att_table.setColumnCount(T)
        self.att_table.setHorizontalHeaderLabels([f"{i} {piece_text(res.pieces[i])}" for i in range(T)])
        self.att_table.setVerticalHeaderLabels([tr("explain.att.head", n=h + 1) for h in range(A.shape[0])])
        scale = max(float(np.abs(A).max()), 1e-12)
        cols = diverging(A, scale)
        for h in range(A.shape[0]):
            for i in range(T):
                it = QTableWidgetItem(fmt(float(A[h, i]), 2))
                it.setTextAlignment(Qt.AlignCenter)
                c = cols[h, i]
                it.setBackground(QColor.fromRgbF(float(c[0]), float(c[1]), float(c[2]), 0.55))
                self.att_table.setItem(h, i, it)
        fit_table_height(self.att_table)

    def _show_block_words(self) -> None:
        """The words the selected contributions row promotes and suppresses (its direct effect on every logit)."""
        rows = self.blocks.selectionModel().selectedRows() if self.blocks.selectionModel() else []
        res = self.result
        if not rows or res is None or rows[0].row() >= len(res.block_words):
            self.block_words.setText(tr("explain.blocks.pick"))
            return
        r = rows[0].row()
        up, down = res.block_words[r]
        ly, part, _ = res.blocks[r]

        def words(items):
            return ", ".join(f"{_esc(piece_text(p))} {fmt(v, 2)}" for p, v in items)

        self.block_words.setText(tr("explain.blocks.words", layer=ly, block=self._part(part), up=words(up),
                                    down=words(down)))

    def _part(self, part: str) -> str:
        if part.startswith("expert "):
            return tr("explain.part.expert", n=part.split()[1])
        return tr(f"explain.part.{part}")

    def _show_knockout(self, res: ExplainResult) -> None:
        ko = res.knockout
        self.ko_table.setVisible(ko is not None)
        if ko is None:
            self.ko_label.setText("")
            return
        what = []
        for it in ko["items"]:
            if it[0] == "token":
                what.append(tr("explain.ko.what_token", position=it[1], piece=_esc(piece_text(res.pieces[it[1]]))))
            elif it[0] == "source":
                what.append(_esc(source_text(it[1])))
            elif it[0] == "block":
                what.append(tr("explain.ko.what_block", layer=it[1], block=self._part(it[2])))
            elif it[1] is None:
                what.append(tr("knockout.what.expert_all", n=it[2]))
            else:
                what.append(tr("explain.ko.what_expert", layer=it[1], n=it[2]))
        self.ko_label.setText(tr("explain.ko.result", tokens=", ".join(what), mode=tr(f"explain.mode.{ko['mode']}"),
                                 before=_esc(piece_text(res.word)), after=_esc(piece_text(ko["word"])),
                                 logit=fmt(res.logit, 2), logit_after=fmt(ko["logit_after"], 2)))
        for r in range(5):
            for c, top in enumerate((res.top5, ko["top5"])):
                pc, p = top[r]
                self.ko_table.setItem(r, c, QTableWidgetItem(f"{piece_text(pc)}  {fmt(p)}"))
        fit_table_height(self.ko_table)

    # ------------------------------------------------------------------ language
    @guarded
    def _language_changed(self, _lang: str) -> None:
        self.retranslate()

    def retranslate(self) -> None:
        self.setWindowTitle(tr("explain.dock.title"))
        self.title.setText(tr("explain.title"))
        self.position_label.setText(tr("explain.position"))
        self.show3d.retranslate()
        self.ko_list_title.setText(tr("knockout.list.title"))
        self._fill_ko_list()
        self.lens_title.setText(tr("explain.lens.title"))
        self.legend.clear()
        self.legend.addItem(self.curve_prob, tr("explain.lens.prob"))
        self.legend.addItem(self.curve_rank, tr("explain.lens.inv_rank"))
        self.side.add_legend(self.legend)
        self.side.retranslate()
        self.plot.setLabel("bottom", tr("explain.lens.axis_layer"))
        self.lens_note.setText(tr("explain.lens.note"))
        self.sources_title.setText(tr("explain.sources.title"))
        self.sources.setHorizontalHeaderLabels([tr(f"explain.sources.col{c}") for c in range(4)])
        self.knock.setText(tr("explain.ko.button"))
        self.knock_block.setText(tr("explain.ko.button_block"))
        i = self.mode.currentIndex()
        self.mode.clear()
        self.mode.addItems([tr(f"explain.mode.{m}") for m in ABLATION_MODES])
        self.mode.setCurrentIndex(max(0, i))
        self.restore.setText(tr("explain.ko.restore"))
        self.sources_note.setText(tr("explain.sources.note"))
        self.ko_table.setHorizontalHeaderLabels([tr("explain.ko.before"), tr("explain.ko.after")])
        self.att_title.setText(tr("explain.att.title"))
        self.att_heads.setText(tr("explain.att.per_head"))
        self.att_heads.setToolTip(tr("explain.att.per_head.tip"))
        self.att_note.setText(tr("explain.att.note"))
        self.att_plot.setLabel("left", tr("explain.att.axis_layer"))
        self.att_plot.setLabel("bottom", tr("explain.att.axis_position"))
        self.blocks_title.setText(tr("explain.blocks.title"))
        self.blocks.setHorizontalHeaderLabels([tr(f"explain.blocks.col{c}") for c in range(3)])
        if self.result is not None:
            self._show(self.result)
        else:
            self.header.setText(tr("explain.empty"))
            self.ko_table.setVisible(False)
            self._update_buttons()
