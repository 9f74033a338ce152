"""Trace player dock (T1-T4): the end-to-end trace of one inference as numbered steps.

Top: the prompt box (type any text, Korean works; Run), its UTF-8 bytes, the tokens (pieces + IDs) and the
streamed answer. Middle: play / pause / step / seek / speed. Bottom: the step list and the selected step's
facts — data type and shape (toy and real K3), where it lives, how it moves, Phase A / B — computed by the
Qt-free core in app/player.py. Steps, seek and the timer belong to the PlayerController (`state.player`);
this dock shows them. Space / ←/→ / Home / End come from the action registry (they go to a focused input
control instead); the camera and highlights follow through AppState.step_changed. The player never moves
the chosen layer: a step about a layer type it lacks names the layer its values come from.
"""
from __future__ import annotations

import functools
import html
import logging

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QDockWidget, QFrame, QHBoxLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QPushButton, QSplitter, QStyle, QTextBrowser,
                               QVBoxLayout, QWidget)

from app import i18n, player, slot_guard, texts, weights_choice
from app.docks.player_widgets import SeekSlider, _qcolor, _set_if_changed, _tool, _wrap_label
from app.docks.token_chips import (MAX_CHIPS, PHASE_COLOURS, _language_pieces, candidate_rows,  # noqa: F401
                                    chip_piece, shown_text, token_chip)
from app.i18n import tr
from app.player_controller import BASE_INTERVAL_MS, SPEEDS  # noqa: F401
from app.widgets.paint import css, mono_html
from app.widgets.rich_text_view import RichTextView
from app.widgets.safe_text import SafeTextBrowser, md_args, plain
from scene import steps as steps_text
from scene.block_kinds import mixer_key

log = logging.getLogger(__name__)


def _guarded(method):
    """A slot of the dock: any exception is logged and said in one line on the panel, never let out into Qt
    (an exception leaving a slot is printed by Qt and leaves the panel half drawn). Qt's extra signal
    arguments beyond the method's own are dropped."""
    n_args = method.__code__.co_argcount - 1

    @functools.wraps(method)
    def slot(self, *args):
        try:
            return method(self, *args[:n_args])
        except Exception as exc:  # noqa: BLE001 - see above
            slot_guard.report(exc, f"trace player {method.__name__}")  # logged, status line (tests fail on it)
            try:
                self._show_message(tr("app.player.facts_failed", error=f"{type(exc).__name__}: {exc}"))
            except Exception:  # noqa: BLE001 - the message label itself failed: the log has it
                pass
        return None

    return slot


class TracePlayerDock(QDockWidget):
    # its body grows with the trace (token chips, facts, candidates): the window puts it in a scroll area from
    # the start, so a short screen scrolls the panel instead of growing the window (main_window._scroll_if_wide)
    scroll_body = True
    chip_menu_requested = Signal(int, QPoint)  # a token chip's position, where its context menu opens

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("TracePlayerDock")
        self.state = state
        self.player = state.player
        self._build()
        self.player.playing_changed.connect(slot_guard.guarded(lambda _p: self._update_play_button()))
        state.trace_changed.connect(self._on_trace)
        state.step_changed.connect(self._on_step_changed)
        state.engine_error.connect(self._on_error)
        state.layer_changed.connect(slot_guard.guarded(lambda _l: self._show_details()))
        state.config_changed.connect(slot_guard.guarded(lambda _c: self.retranslate()))  # step texts name the model's numbers
        self._struck: frozenset = frozenset()  # token positions the Explain dock's experiment knocks out
        state.knockouts_changed.connect(self._on_knockouts)
        self.retranslate()
        if state.trace is not None:
            self._on_trace(state.trace)

    # --- widgets -----------------------------------------------------------------------------
    def _build(self) -> None:
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(6)

        row = QHBoxLayout()
        self.prompt = QLineEdit(self.state.prompt)
        self.prompt.setObjectName("prompt_edit")
        self.prompt.setClearButtonEnabled(True)
        self.prompt.returnPressed.connect(self.run_prompt)
        self.run_button = QPushButton()
        self.run_button.setObjectName("run_button")
        self.run_button.clicked.connect(self.run_prompt)
        row.addWidget(self.prompt, 1)
        row.addWidget(self.run_button)
        layout.addLayout(row)
        self.message = QLabel()
        self.message.setObjectName("prompt_message")
        self.message.setStyleSheet(f"color: {css('error')};")
        self.message.setWordWrap(True)
        plain(self.message)  # quotes the engine's error message
        self.message.hide()
        layout.addWidget(self.message)

        self.bytes_label = _wrap_label("utf8_label")
        # rich text that changes on every step (the bold chip, the streamed answer): not QLabels (see RichTextView)
        self.tokens_label = RichTextView("tokens_label")
        self.stream_label = RichTextView("stream_label")
        self.weights_caption = _wrap_label("stream_weights")  # which weights wrote the answer (not K3's text)
        self.weights_caption.setStyleSheet(f"color: {css('caveat')}; font-style: italic;")
        self.outside_note = _wrap_label("outside_language_note")  # a prompt outside the toy language
        self.outside_note.setStyleSheet(f"color: {css('caveat')}; font-weight: bold;")
        self.outside_note.hide()
        self.tokens_label.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tokens_label.customContextMenuRequested.connect(self._chip_menu)
        for w in (self.bytes_label, self.tokens_label, self.outside_note, self.stream_label, self.weights_caption):
            layout.addWidget(w)

        transport = QHBoxLayout()
        transport.setSpacing(2)
        self.first_button = _tool(QStyle.SP_MediaSkipBackward, "player_first", lambda: self.seek(0))
        self.back_button = _tool(QStyle.SP_MediaSeekBackward, "player_back", lambda: self.step_by(-1))
        self._icons: dict = {}  # (style, QStyle.StandardPixmap) -> QIcon (see _update_play_button)
        self._play_icon_key = None
        self.play_button = _tool(QStyle.SP_MediaPlay, "player_play", self.toggle_play)
        self.forward_button = _tool(QStyle.SP_MediaSeekForward, "player_forward", lambda: self.step_by(1))
        self.last_button = _tool(QStyle.SP_MediaSkipForward, "player_last", lambda: self.player.last())
        for b in (self.first_button, self.back_button, self.play_button, self.forward_button, self.last_button):
            transport.addWidget(b)
        self.seek_slider = SeekSlider(Qt.Horizontal)  # jumps to the click, like a media player's
        self.seek_slider.setObjectName("seek_slider")
        self.seek_slider.setFocusPolicy(Qt.NoFocus)
        self.seek_slider.valueChanged.connect(self._on_seek_slider)
        transport.addWidget(self.seek_slider, 1)
        self.counter = QLabel()
        self.counter.setObjectName("step_counter")
        self.counter.setAlignment(Qt.AlignCenter)
        self.counter.setWordWrap(True)  # 'Step 18 of 33 · stage 12 of 17 · decode token 2': its own line, never
        # the width that decides the dock's (it widened the 1280x720 dock by 20 px in Korean)
        self.speed = QComboBox()
        self.speed.setObjectName("speed_combo")
        self.speed.setFocusPolicy(Qt.NoFocus)
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setCurrentIndex(SPEEDS.index(1.0))
        self.speed.currentIndexChanged.connect(self._on_speed)
        transport.addWidget(self.speed)
        layout.addLayout(transport)
        layout.addWidget(self.counter)

        split = QSplitter(Qt.Vertical)
        split.setObjectName("player_split")
        self.list = QListWidget()
        self.list.setObjectName("step_list")
        self.list.setFocusPolicy(Qt.NoFocus)
        self.list.currentRowChanged.connect(self._on_list_row)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # a long row is elided, never widens
        self.list.setTextElideMode(Qt.ElideRight)
        split.addWidget(self.list)

        detail = QFrame()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 4, 0, 0)
        dl.setSpacing(4)
        head = QHBoxLayout()
        self.title = QLabel()
        self.title.setObjectName("step_title")
        plain(self.title)  # step titles name the model (its config's display_name)
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.title.setFont(font)
        self.title.setWordWrap(True)
        self.phase = QLabel()
        self.phase.setObjectName("step_phase")
        self.phase.setAlignment(Qt.AlignCenter)
        head.addWidget(self.title, 1)
        head.addWidget(self.phase, 0, Qt.AlignTop)
        dl.addLayout(head)
        self.facts = RichTextView("step_facts")  # a new table on every step: not a QLabel (see the module)
        dl.addWidget(self.facts)
        self.explain = SafeTextBrowser()  # Markdown naming the model: its arguments are escaped (md_args)
        self.explain.setObjectName("step_explanation")
        self.explain.setOpenExternalLinks(True)
        self.explain.setFocusPolicy(Qt.NoFocus)
        dl.addWidget(self.explain, 1)
        split.addWidget(detail)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        layout.addWidget(split, 1)
        self.setWidget(body)
        self.setMinimumWidth(340)

    # --- the controller's state and control (state.player; kept here for the dock's callers) ----
    @property
    def steps(self) -> list[player.Step]:
        return self.player.steps

    @property
    def index(self) -> int:
        return self.player.index

    @property
    def timer(self):
        return self.player.timer

    @property
    def playing(self) -> bool:
        return self.player.playing

    def seek(self, index: int) -> None:
        self.player.seek(index)

    def step_by(self, delta: int) -> None:
        self.player.step_by(delta)

    def toggle_play(self) -> None:
        self.player.toggle_play()

    def play(self) -> None:
        self.player.play()

    def pause(self) -> None:
        self.player.pause()

    @_guarded
    def run_prompt(self) -> None:
        text = self.prompt.text()
        if not text.strip():
            self._show_message(tr("app.player.empty_prompt"))
            return
        self.message.hide()
        self.state.request_prompt(text)

    # --- internals ---------------------------------------------------------------------------
    @_guarded
    def _on_speed(self, _i: int) -> None:
        self.player.set_speed(float(self.speed.currentData() or 1.0))

    @_guarded
    def _on_seek_slider(self, value: int) -> None:
        if value != self.index:
            self.seek(value)

    @_guarded
    def _on_list_row(self, row: int) -> None:
        if row >= 0 and row != self.index:
            self.seek(row)

    @_guarded
    def _on_step_changed(self, _index: int) -> None:
        self._refresh()

    @_guarded
    def _on_trace(self, trace) -> None:
        if self.prompt.text() != trace.text and not self.prompt.hasFocus():
            self.prompt.setText(trace.text)
        self.message.hide()
        self._fill_list()
        self.seek_slider.blockSignals(True)
        self.seek_slider.setRange(0, max(len(self.steps) - 1, 0))
        self.seek_slider.blockSignals(False)
        self._refresh()

    @_guarded
    def _on_error(self, message: str) -> None:
        self._show_message(tr("app.status.engine_error", message=message))

    def _show_message(self, text: str) -> None:
        self.message.setText(shown_text(text))
        self.message.show()

    def _fill_list(self) -> None:
        rows = [(self._step_label(step), step.phase) for step in self.steps]
        if rows == getattr(self, "_rows", None):
            return  # a knob change keeps the steps: keep the list (and its scroll position)
        self._rows = rows
        self.list.blockSignals(True)
        self.list.clear()
        for label, phase in rows:
            item = QListWidgetItem(label)
            item.setForeground(_qcolor(PHASE_COLOURS[phase]))
            self.list.addItem(item)
        self.list.blockSignals(False)

    def _step_label(self, step: player.Step) -> str:
        label = f"{step.index + 1:02d}  {tr(step.title_key, **self._text_args())}"  # place in the whole trace
        if step.phase == "B":
            label += "  · " + tr("app.player.token_n", n=step.pass_index + 1)
        return label

    def _update_play_button(self) -> None:
        """Runs on every step: the icon is set only when play/pause flips, from a QIcon made once per style (each
        new QIcon's pixmaps went into Qt's pixmap cache under a new key: ~2 KiB of C++ heap per step, the
        soak's steady malloc growth)."""
        kind = QStyle.SP_MediaPause if self.timer.isActive() else QStyle.SP_MediaPlay
        key = (id(self.style()), kind)
        if self._play_icon_key != key:
            self._play_icon_key = key
            icon = self._icons.get(key)
            if icon is None:
                icon = self._icons[key] = self.style().standardIcon(kind)
            self.play_button.setIcon(icon)
        _set_if_changed(self.play_button, "toolTip", "setToolTip", tr("app.action.play_pause"))

    @_guarded
    def _refresh(self) -> None:
        n = len(self.steps)
        self.counter.setText(player.step_caption(self.steps[self.index], tr, n) if n else "")
        self.seek_slider.blockSignals(True)
        self.seek_slider.setValue(self.index)
        self.seek_slider.blockSignals(False)
        self.list.blockSignals(True)
        if n:
            self.list.setCurrentRow(self.index)
            self.list.scrollToItem(self.list.currentItem(), QAbstractItemView.PositionAtCenter)
        self.list.blockSignals(False)
        self._show_io()
        self._show_details()
        self._update_play_button()

    @slot_guard.guarded
    def _on_knockouts(self, value) -> None:
        """The experiment changed: its knocked-out tokens' chips are struck through."""
        struck = frozenset(int(it[1]) for it in value[0] if it[0] == "token")
        if struck != self._struck:
            self._struck = struck
            self._show_io()

    def _show_io(self) -> None:
        trace = self.state.trace
        if trace is None:
            self.bytes_label.setText(tr("app.player.waiting"))
            self.tokens_label.setText("")
            self.stream_label.setText("")
            self.weights_caption.setText("")
            return
        data = trace.text.encode("utf-8")
        hexes = " ".join(f"{b:02X}" for b in data[:40]) + (" …" if len(data) > 40 else "")
        self.bytes_label.setText(tr("app.player.utf8", n=len(data)) + "  " + hexes)
        chips = []
        used = _language_pieces(trace)
        for pos, (piece, token_id) in enumerate(trace.tokens[:MAX_CHIPS]):
            generated = pos >= trace.prompt_len
            weight = "bold" if self.steps and pos == self.steps[self.index].token else "normal"
            chip = token_chip(piece, token_id, generated, weight == "bold", used is not None and piece not in used,
                              pos in self._struck)
            chips.append(f"<a href='tok:{pos}' style='text-decoration:none'>{chip}</a>")  # its context menu
        if len(trace.tokens) > MAX_CHIPS:
            chips.append(f"… +{len(trace.tokens) - MAX_CHIPS}")
        unused = used is not None and any(p not in used for p, _ in trace.tokens[:MAX_CHIPS])
        notes = [tr("app.player.toy_tokenizer")] + ([tr("knockout.unused")] if unused else [])
        self.tokens_label.setText(tr("app.player.tokens") + " " + " ".join(chips)
                                  + f"<br><i style='color:gray'>{html.escape(' '.join(notes))}</i>")
        outside = used is not None and not trace.prompt_in_language
        self.outside_note.setText(tr("knockout.outside") if outside else "")
        self.outside_note.setVisible(outside)
        streamed = player.streamed_text(trace, self.steps, self.index) if self.steps else ""
        self.stream_label.setText(f"{html.escape(tr('app.player.stream'))} "
                                  f"<b>{html.escape(shown_text(trace.text))}</b>"
                                  f"<span style='color:{PHASE_COLOURS['B']}; font-weight:bold'>"
                                  f"{html.escape(shown_text(streamed))}</span>▌")
        self.weights_caption.setText(self._answer_caption(trace))

    @_guarded
    def _chip_menu(self, pos) -> None:
        """Right-click on a token chip: `chip_menu_requested(position, global position)` (the window's knock-out
        menu, app/window/knockout_menu.py)."""
        href = self.tokens_label.anchorAt(pos)
        if href.startswith("tok:") and href[4:].isdigit():
            self.chip_menu_requested.emit(int(href[4:]), self.tokens_label.viewport().mapToGlobal(pos))

    @_guarded
    def _answer_caption(self, trace) -> str:
        """Which weights wrote the answer, and that it is not the shown model's text (the Model menu's weights
        caption for the default model; for another, the same naming that model)."""
        from compute.config import default_config

        name = weights_choice.weights_of(trace)
        if trace.config_name == default_config().name or name is None:
            return weights_choice.answer_caption(trace, tr)
        dims = player.model_dims(trace, self.state.config)
        return tr(f"truth.answer.{name}", model=dims.display_name if dims is not None else trace.config_name)

    @_guarded
    def _show_details(self) -> None:
        trace = self.state.trace
        if trace is None or not self.steps:
            self.title.setText(tr("app.player.waiting"))
            self.phase.setText("")
            self.facts.setText("")
            self.explain.setMarkdown("")
            self._explain_md = ""
            return
        step = self.steps[self.index]
        self.title.setText(f"{step.index + 1:02d}  {tr(step.title_key, **self._text_args())}")
        colour = PHASE_COLOURS[step.phase]
        self.phase.setText(tr(f"app.player.phase_{step.phase}"))
        _set_if_changed(self.phase, "styleSheet", "setStyleSheet",
                        f"background:{colour}; color:white; border-radius:4px; padding:2px 6px;")
        try:
            facts = player.describe(trace, step, self.state.layer, self.state.config)
        except Exception as exc:  # noqa: BLE001 - a slot: nothing may leave it; the panel says what failed
            slot_guard.report(exc, f"trace player: facts of step {step.kind}")  # logged, status line
            self.facts.setText(html.escape(tr("app.player.facts_failed", error=f"{type(exc).__name__}: {exc}")))
            return
        if facts.absent:
            data = html.escape(tr("app.player.none_data"))
        else:
            data = f"{tr('app.data.' + step.data_kind)} · {mono_html(html.escape(facts.dtype))} {player.shape_text(facts.shape)}"
        if facts.real_shape is not None:
            model = player.model_dims(trace, self.state.config).display_name
            data += f" &nbsp;<span style='color:gray'>{html.escape(tr('app.player.real_model', model=model))} " \
                    f"{player.shape_text(facts.real_shape)}</span>"
        places = [tr(f"app.place.{p}") for p in step.path]
        places[-1] = f"<b>{places[-1]}</b>"
        rows = [(tr("app.player.data"), data)]
        if not facts.absent:
            rows += [
                (tr("app.player.where"), " → ".join(places)),
                (tr("app.player.moves"), html.escape(tr(step.move_key, **self._text_args()))),
                (tr("app.player.value"), mono_html(html.escape(shown_text(facts.value)))),
            ]
        for key, fmt in facts.extra:
            rows.append(("", html.escape(tr(key, **fmt))))
        rows += candidate_rows(facts.candidates)  # the sampling step: the top words with their probabilities
        note = "" if facts.absent else self._layer_note(trace, step)
        if note:
            rows.append(("", f"<i>{html.escape(note)}</i>"))
        body = "".join(f"<tr><td style='color:gray; padding-right:8px; vertical-align:top'>{html.escape(k)}</td>"
                       f"<td>{v}</td></tr>" for k, v in rows)
        _set_if_changed(self.facts, "text", "setText", f"<table cellspacing='2'>{body}</table>")
        md = texts.explanation("step", step.kind, i18n.language())
        args = self._text_args(markdown=True)  # Markdown: the model's name is literal text
        md = steps_text.fill(md, args)
        what = tr(step.what_key, **args)
        phase_note = tr(f"app.player.phase_{step.phase}.note", **args)
        if md:  # demote headings: the panel is narrow
            md = "\n".join("###" + line.lstrip("#") if line.startswith("#") else line for line in md.splitlines())
        # the step's own explanation text when there is one, else the short catalogue line
        explain = f"*{phase_note}*\n\n---\n\n{md}" if md else f"{what}\n\n*{phase_note}*"
        if explain != getattr(self, "_explain_md", None):  # a new trace of the same step keeps its text
            self._explain_md = explain
            self.explain.setMarkdown(explain)

    def _layer_note(self, trace, step: player.Step) -> str:
        """Says so when the step's values come from another layer than the chosen one (which stays)."""
        if not step.layer_type:
            return ""
        mixers = [L.mixer for L in trace.passes[0].layers]
        ffns = [L.ffn for L in trace.passes[0].layers]
        chosen = min(max(self.state.layer, 0), len(mixers) - 1)
        shown = player.focus_layer(step, mixers, ffns, chosen)
        if shown == chosen:
            return ""
        return tr("app.player.layer_note", chosen=chosen + 1, shown=shown + 1,
                  type=tr(f"app.type.{mixer_key(step.layer_type, self._mla_gate())}"))

    def _mla_gate(self) -> bool:
        cfg = self.state.config
        return cfg is not None and cfg.mla_output_gate is not None

    def _text_args(self, markdown: bool = False) -> dict:
        """Format arguments of the step texts: the shown model's real numbers (scene/steps.py), kept per model
        and language (a new trace asks for them once per step of the list); markdown: their strings escaped
        for a Markdown template (md_args), kept too: every step while the player plays uses them."""
        key = (self.state.config, i18n.language())
        cached = getattr(self, "_text_args_cache", None)
        if cached is None or cached[0][0] is not key[0] or cached[0][1] != key[1]:
            args = steps_text.text_args(self.state.config, tr)
            cached = self._text_args_cache = (key, args, md_args(args))
        return dict(cached[2] if markdown else cached[1])

    @_guarded
    def retranslate(self) -> None:
        self.setWindowTitle(tr("app.dock.trace_player"))
        self.prompt.setPlaceholderText(tr("app.player.prompt_placeholder"))
        self.run_button.setText(tr("app.player.run"))
        self.first_button.setToolTip(tr("app.action.step_first"))
        self.back_button.setToolTip(tr("app.action.step_back"))
        self.forward_button.setToolTip(tr("app.action.step_forward"))
        self.last_button.setToolTip(tr("app.action.step_last"))
        self.speed.setToolTip(tr("app.player.speed"))
        self.seek_slider.setToolTip(tr("app.player.seek"))
        if self.message.isVisible():
            self.message.hide()
        for step, i in zip(self.steps, range(self.list.count())):
            self.list.item(i).setText(self._step_label(step))
        self._refresh()
