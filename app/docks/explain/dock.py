"""ExplainDock: why the toy predicts its word at the chosen position (see the package docstring).

The explanation (a prefill, the lens, one knock-out re-run per token: ~50-150 ms) runs on a pool thread of its
own with the explanation service's engine (app/engine/explain_service.py), never on the UI thread; requests are coalesced (latest
wins) and only made while the dock is visible. The result carries plain numbers only.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QComboBox, QDockWidget, QHBoxLayout, QLabel, QTableWidgetItem, QToolButton, QVBoxLayout,
                               QWidget)

from app.docks.deferred import on_screen
from app.docks.explain.attention import AttentionPage
from app.docks.explain.knockouts import KnockoutPanel, part_name
from app.docks.explain.fit import GROWING_PAGES, PAGES, fit_rows, header_tooltips
from app.docks.explain.pages import build_pages, page_tabs, retranslate_tabs
from app.docks.explain.show3d import layer_words_html, route_line, route_tip, with_units
from app.docks.explain.side_by_side import SideBySide
from app.docks.explain.text import _esc, lens_series, piece_text, source_text  # noqa: F401 (re-exported)
from app.docks.explain.turns import Turns
from app.docks.explain.units3d import Units3D
from app.engine.background import BackgroundJobs
from app.docks.explain.worker import explain_job
from app.engine.explain_service import (ABLATION_MODES, ExplainRequest, ExplainResult, knobs_of, largest_block,
                                 overlay_of)
from app.i18n import tr
from app.engine.lens_note import lens_note
from app.slot_guard import guarded
from app.widgets.safe_text import rich_tr
from app.widgets.controls import fmt, note_label, shrinkable
from app.widgets.paint import qcolor

DEBOUNCE_MS = 300  # a pause in the knob changes, then one explanation: it does not compete with the drag (bench/app.py)


class ExplainDock(QDockWidget):
    retranslates_itself = True  # follows state.language_changed (the main window leaves it alone)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.setObjectName("ExplainDock")
        self.auto = getattr(parent, "explain_auto", True)  # False (MainWindow(explain=False)): never explains
        # app.engine.background's "explain" lane; unparented: a closed dock's last result still arrives (and is dropped)
        self.jobs = BackgroundJobs("explain")
        self.jobs.done.connect(self._on_done)
        self.jobs.failed.connect(self._on_failed)
        self._serial = 0
        self._busy = False
        self._pending: ExplainRequest | None = None
        self._shown_key = None
        self._word: tuple[int, int] | None = None  # (position, vocabulary index): the answer strip's clicked word
        self._tokens: tuple = ()
        self._layer_stale = False  # a layer was picked while the dock was not seen (_on_layer)
        self._result_stale = False  # a result came while the dock was not seen (_on_done): shown when it is
        self.turns = Turns(self)  # what is left to draw of a new result, a part per event-loop turn
        self.result: ExplainResult | None = None
        self.knockout_panel = KnockoutPanel(self)  # the active knock-out, its list and menus (the Experiments page)
        self.attention = AttentionPage(self)  # the Attention page's overview, head view and table
        self.units3d = Units3D(self)  # the exploded layer's heads and experts lit by total effects (their own jobs)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._submit)

        body = QWidget()
        top = QVBoxLayout(body)
        top.setContentsMargins(8, 6, 8, 4)
        self.title = QLabel()  # the dock's title bar names it; kept for the language walk
        self.title.hide()
        self.header = QLabel()
        self.header.setObjectName("explain_header")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.RichText)
        top.addWidget(self.header)
        row = QHBoxLayout()
        self.position_label = QLabel()
        self.position = shrinkable(QComboBox(), 18)
        self.position.setObjectName("explain_position")
        self.position.activated.connect(guarded(lambda _i: self.refresh()))
        row.addWidget(self.position_label)
        row.addWidget(self.position, 1)
        self.tour_button = QToolButton()  # Help -> Tour: why this word (set_tour; hidden without a window)
        self.tour_button.setObjectName("explain_tour")
        self.tour_button.setToolButtonStyle(Qt.ToolButtonTextOnly)
        self.tour_button.hide()
        row.addWidget(self.tour_button)
        top.addLayout(row)
        self.status = note_label()
        self.status.setObjectName("explain_status")
        self.status.setTextFormat(Qt.PlainText)  # it may quote an error message (a config's name): never rich text
        top.addWidget(self.status)
        self.pages, page = page_tabs()
        self.pages.currentChanged.connect(self._page_changed)
        top.addWidget(self.pages, 1)
        build_pages(self, page)
        self.side = SideBySide(self.plot)
        self.side.toggled.connect(guarded(lambda _on: self.refresh()))
        page["side"].addWidget(self.side)
        for name, lay in page.items():
            if name not in GROWING_PAGES:
                lay.addStretch(1)
        self.setWidget(body)

        state.trace_changed.connect(self._on_trace)
        state.layer_changed.connect(self._on_layer)
        state.language_changed.connect(self._language_changed)  # bound slots: disconnected when the dock dies
        state.config_changed.connect(self._language_changed)  # the lens note names the model's layers (lens_note)
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
                self.knockout_panel.items = ()
                if self.result is not None:  # another prompt: the drawn explanation no longer applies
                    self.result = None
                    self._emit_overlay()
        self._tokens = toks
        if on_screen(self.widget()) or self.show3d.any_on():  # the 3D view shows it even when this dock is closed
            self.refresh()

    @guarded
    def _on_visible(self, visible: bool) -> None:
        if visible:  # shown: the sources too (a result made for the 3D view alone has none)
            if self._result_stale and self.result is not None:  # a result came while it was not seen
                self._show(self.result)
            if self._layer_stale:  # a layer was picked after it (or after the last result shown)
                self._show_layer(self.state.layer)
            self._result_stale = self._layer_stale = False
            self.refresh()

    def current_request(self) -> ExplainRequest | None:
        tr_ = self.state.trace
        if tr_ is None or self.position.count() == 0:
            return None
        knobs = knobs_of(tr_.knobs)
        return ExplainRequest(0, self.state.config, tr_.weights_name, tuple(tuple(t) for t in tr_.tokens),
                              int(self.position.currentData()), knobs, self.knockout_panel.items,
                              self.knockout_panel.mode_name(), self.side.enabled(),
                              on_screen(self.widget()),  # the sources' re-runs only for a dock that is seen
                              word=self._word[1] if self._word and self._word[0] == self.position.currentData()
                              else None, causal=self._wants_causal(), effects=self._wants_effects())

    def _wants_causal(self) -> bool:
        """The causal route and the patching map are computed while the causal route is drawn or the route page
        is looked at (their knock-outs and re-runs are the costly part)."""
        drawn = self.show3d.route.isChecked() and self.show3d.route_kind() == "causal"
        return drawn or (on_screen(self.widget()) and self.pages.currentIndex() == PAGES.index("route"))

    def _wants_effects(self) -> tuple:
        """The heads' or experts' total effects while their table is looked at (each one's re-run is costly)."""
        seen = on_screen(self.widget()) and self.pages.currentIndex() == PAGES.index("route")
        return self.effects_view.wanted() if seen else ()

    @guarded
    def _page_changed(self, _index: int) -> None:
        self.refresh()  # the route page asks for the causal part

    @guarded
    def refresh(self) -> None:
        """Ask for the explanation of the current trace, position, mode and knock-out (skipped when shown), after
        DEBOUNCE_MS without another ask: a slider drag's stream of traces costs one explanation at its end."""
        if self.auto:
            self._debounce.start()

    @guarded
    def _submit(self) -> None:
        req = self.current_request()
        if req is None:
            return
        key = (req.tokens, req.position, req.knobs, req.weights, req.knockout, req.mode,
               getattr(req.config, "name", None), req.compare, req.sources, req.word, req.causal, req.effects)
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
        self._set_status("explain.route.computing" if req.causal else "explain.computing")
        self.jobs.start(req.serial, explain_job(req))

    @guarded
    def _next(self) -> None:
        self._busy = False
        if self._pending is not None:
            req, self._pending = self._pending, None
            self._start(req)

    @guarded
    def _on_done(self, _serial: int, res: ExplainResult) -> None:
        if res.serial == self._serial:
            self.result = res
            self._set_status("explain.remembered" if res.extra.get("remembered") else "explain.took",
                             ms=f"{res.seconds * 1000:.0f}")
            if on_screen(self.widget()):
                self._show_in_turns(res)
            else:  # behind another dock's tab or closed: the 3D view's part now, the dock's when it is raised
                self._result_stale, self._layer_stale = True, False  # as _show would: its rows, then picks
                self._show_3d(res)
        self._next()

    @guarded
    def _on_failed(self, serial: int, message: str) -> None:
        if serial == self._serial:
            self._set_status("explain.error", message=message)
            self._shown_key = None
        self._next()

    def _set_status(self, key: str, **kw) -> None:
        """The status line, kept as its key so that it follows a language switch."""
        self._status = (key, kw)
        self.status.setText(tr(key, **kw))

    @property
    def busy(self) -> bool:
        return (self._busy or self._pending is not None or self._debounce.isActive() or self.turns.pending
                or self.units3d.busy())

    # ------------------------------------------------------------------ knock-outs (the panel's public faces)
    def knockouts(self) -> dict | None:
        """The active knock-out set as a view file's `knockouts` value, or None."""
        return self.knockout_panel.as_view()

    def set_knockouts(self, ko: dict | None) -> None:
        self.knockout_panel.set_from_view(ko)

    def add_knockout(self, item: tuple, mode: str) -> None:
        self.knockout_panel.add(item, mode)

    def set_knockout_items(self, value: tuple) -> None:
        self.knockout_panel.set_items(value)

    @guarded
    def restore_knockout(self) -> None:
        self.knockout_panel.restore_knockout()

    # ------------------------------------------------------------------ the explained position
    def explained_position(self) -> int | None:
        """The 0-based position whose prediction is explained (the position box), None before a trace."""
        return int(self.position.currentData()) if self.position.count() else None

    def set_tour(self, action) -> None:
        """The window's Help -> Tour: why this word action, started by the dock's tour button (then shown)."""
        self.tour_button.clicked.connect(guarded(lambda _c=False: action.trigger()))
        self.tour_button.show()

    def set_explain3d(self, e: dict) -> None:
        """A view file's explain3d (validated): the 3D view choices and the explained position (None or one the
        trace lacks: the last prompt position)."""
        self.show3d.set_values(e["lens"], e["route"], e["route_threshold"], e["arcs"], e.get("units", False))
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

    def explain_word(self, position: int, word: int) -> None:
        """Explain why `word` (a vocabulary index; the answer strip's clicked bar) at `position`, not the answer."""
        self._word = (int(position), int(word))
        self.explain_position(position)
        self.refresh()

    # ------------------------------------------------------------------ drawing
    def _show(self, res: ExplainResult) -> None:
        """Draw the whole result now (a language switch, the dock raised); a pending drawing is dropped."""
        self.turns.cancel()
        for part in self._show_parts(res):
            part(res)

    def _show_parts(self, res: ExplainResult) -> tuple:  # the answer page first, the 3D view last
        return self._show_tables, self._show_lens, self._show_blocks, self._show_pages, self._show_3d

    def _show_in_turns(self, res: ExplainResult) -> None:
        """Draw a new result a part (2-12 ms on Kimi Linear) per event-loop turn: input and timers run between
        them, not after ~25 ms of drawing at once (issue 44.5). `busy` holds until the last part is drawn."""
        self.turns.start([lambda part=part: res is self.result and part(res)  # else a newer one replaced it
                          for part in self._show_parts(res)])

    def _show_tables(self, res: ExplainResult) -> None:
        """The header, the sources and the knock-out's before / after."""
        pos_piece = res.pieces[res.position] if res.position < len(res.pieces) else ""
        self.header.setText(tr("explain.header", position=res.position, piece=_esc(piece_text(pos_piece)),
                               word=_esc(piece_text(res.word)), prob=fmt(res.prob),
                               logit=fmt(res.logit, 2), weights=tr(f"explain.weights.{res.weights}")))
        earlier = range(len(res.sources) - 1) if len(res.sources) > 1 else range(len(res.sources))
        top = max(earlier, key=lambda i: res.sources[i][2]) if res.sources else -1  # as Explanation.top_source()
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
        fit_rows(self.sources)
        self.knockout_panel.show(res)

    def _show_lens(self, res: ExplainResult) -> None:
        """The logit-lens plot and its column of top words."""
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
                                 + (tr("explain.lens.readable", layer=first) if first is not None
                                    else tr("explain.lens.never")))

    def _show_blocks(self, res: ExplainResult) -> None:
        """The contributions table (a row per block: ~60 on Kimi Linear) and its note."""
        self.blocks.setRowCount(len(res.blocks))
        for r, (ly, part, v) in enumerate(res.blocks):
            kind = "" if ly == 0 else res.mixers[ly - 1].upper() + " · " if part == "mixer" else ""
            for c, text in enumerate((str(ly), kind + part_name(part), fmt(v))):
                it = QTableWidgetItem(text)
                it.setTextAlignment((Qt.AlignRight if c != 1 else Qt.AlignLeft) | Qt.AlignVCenter)
                if c == 2:
                    it.setForeground(qcolor("good" if v > 0 else "output"))
                self.blocks.setItem(r, c, it)
        fit_rows(self.blocks)
        self.blocks_note.setText(tr("explain.blocks.note", n=res.n_blocks, rest=f"{res.rest:.1e}",
                                    logit=fmt(res.logit, 3)))
        self.knockout_panel.update_buttons()

    def _show_pages(self, res: ExplainResult) -> None:
        """The attention page, the patching map, the total effects and the side-by-side lens."""
        self.attention.show(res)
        self.patch_map.show_result(res)
        self.effects_view.show_result(res)
        self.side.show_result(res, lens_series)

    # ------------------------------------------------------------------ attention
    @guarded
    def _on_layer(self, layer: int) -> None:
        """A layer picked anywhere (a slab clicked in the 3D stack, PgUp/PgDn): its attention row and what its
        mixer and FFN promote and suppress. Behind another dock's tab (or closed) they are shown when it is
        raised (_on_visible): not on every layer change of an auto-play nobody sees here."""
        self._layer_stale = not on_screen(self.widget())
        if not self._layer_stale:
            self._show_layer(layer)

    def _show_layer(self, layer: int) -> None:
        if self.result is not None:
            self.attention.show(self.result)
            text = layer_words_html(self.result, layer + 1)
            if text:
                self.block_words.setText(text)

    # ------------------------------------------------------------------ the 3D view
    @guarded
    def show3d_changed(self) -> None:
        """The 'In the 3D view' boxes changed: a result for them when needed, and the overlay again."""
        if self.show3d.any_on() and (self.result is None or (self._wants_causal() and not self.result.causal)):
            self.refresh()  # first result, or the causal route switched on over a result made without it
        self._emit_overlay()

    def _show_3d(self, res: ExplainResult) -> None:
        """The 3D view's part of a result (its largest block for the route's threshold, the overlay)."""
        self.show3d.set_largest(largest_block(res))
        self._emit_overlay()

    def _emit_overlay(self) -> None:
        """Hand the 3D view what it draws of the shown result (None: nothing)."""
        on = self.show3d.units_on()  # the heads' and experts' total effects: their own jobs (units3d.py)
        ov = with_units(overlay_of(self.result, *self.show3d.values(), kind=self.show3d.route_kind()), self.result, on,
                        self.units3d.units_for(self.result) if on else None)
        self.route_line.setText(route_line(ov))
        self.route_line.setToolTip(route_tip(ov))
        self.route_line.setVisible(bool(self.route_line.text()))
        self.state.explanation_shown.emit(ov)

    def refresh_overlay(self) -> None:
        self._emit_overlay()

    def show_block_words(self) -> None:
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

        self.block_words.setText(tr("explain.blocks.words", layer=ly, block=part_name(part), up=words(up),
                                    down=words(down)))

    # ------------------------------------------------------------------ language
    @guarded
    def _language_changed(self, _lang: str) -> None:
        self.retranslate()

    def retranslate(self) -> None:
        self.setWindowTitle(tr("explain.dock.title"))
        self.title.setText(tr("explain.title"))
        retranslate_tabs(self.pages)
        if getattr(self, "_status", None):
            self._set_status(self._status[0], **self._status[1])
        self.plot.setLabel("left", tr("explain.lens.axis_y"))
        self.ko_empty.setText(tr("explain.ko.empty"))
        self.position_label.setText(tr("explain.position"))
        self.tour_button.setText(tr("explain.tour"))
        self.tour_button.setToolTip(tr("explain.tour.tip"))
        self.show3d.retranslate()
        self.ko_list_title.setText(tr("knockout.list.title"))
        self.knockout_panel.fill_list()
        self.lens_title.setText(tr("explain.lens.title"))
        self.legend.clear()
        self.legend.addItem(self.curve_prob, tr("explain.lens.prob"))
        self.legend.addItem(self.curve_rank, tr("explain.lens.inv_rank"))
        self.side.add_legend(self.legend)
        self.side.retranslate()
        self.plot.setLabel("bottom", tr("explain.lens.axis_layer"))
        self.lens_note.setText(lens_note(self.state.config, rich_tr))  # the model's name is escaped (untrusted)
        self.sources_title.setText(tr("explain.sources.title"))
        self.sources.setHorizontalHeaderLabels([tr(f"explain.sources.col{c}") for c in range(4)])
        header_tooltips(self.sources)
        self.knock.setText(tr("explain.ko.button"))
        self.knock_block.setText(tr("explain.ko.button_block"))
        i = self.mode.currentIndex()
        self.mode.clear()
        self.mode.addItems([tr(f"explain.mode.{m}") for m in ABLATION_MODES])
        self.mode.setCurrentIndex(max(0, i))
        self.restore.setText(tr("explain.ko.restore"))
        self.sources_note.setText(tr("explain.sources.note"))
        self.ko_table.setHorizontalHeaderLabels([tr("explain.ko.before"), tr("explain.ko.after")])
        header_tooltips(self.ko_table)
        self.att_title.setText(tr("explain.att.title"))
        self.att_heads.setText(tr("explain.att.per_head"))
        self.att_heads.setToolTip(tr("explain.att.per_head.tip"))
        self.att_note.setText(tr("explain.att.note"))
        self.att_plot.setLabel("left", tr("explain.att.axis_layer"))
        self.att_plot.setLabel("bottom", tr("explain.att.axis_position"))
        self.blocks_title.setText(tr("explain.blocks.title.direct"))
        self.patch_map.retranslate()
        self.effects_view.retranslate()
        self.blocks.setHorizontalHeaderLabels([tr(f"explain.blocks.col{c}") for c in range(3)])
        header_tooltips(self.blocks)
        if self.result is not None:
            self._show(self.result)
        else:
            self.header.setText(tr("explain.empty"))
            self.ko_table.setVisible(False)
            self.knockout_panel.update_buttons()
