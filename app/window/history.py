"""Edit -> Undo / Redo / History…: the window's changes as a QUndoStack.

`History(window)` watches the state (knobs, layer, step, selection, expert, prompt runs, tokens to generate)
and the engine's switches (model, weights) and pushes one `Change` per user change, with the value before and
after. A change is recorded after it happened (the first redo() that QUndoStack.push makes does nothing); undo / redo apply
the old / new value through the same state methods a control uses, with recording off meanwhile, so stepping
through the history never adds to it. Changes of one knob (a slider drag, a held key) that follow each other
within MERGE_S seconds, or while a slider is held down, merge into one step (QUndoCommand.mergeWith). The
player's steps while it plays, and what a new trace moves by itself (its step clamped), are not recorded.

It also opens a dropped `*.k3view` file (File -> Open view… does the same) and keeps the window title naming
the open view.
"""
from __future__ import annotations

import os
import time
from dataclasses import fields

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QUndoCommand, QUndoStack
from PySide6.QtWidgets import QAbstractSlider, QApplication, QDialog, QDialogButtonBox, QUndoView, QVBoxLayout

from app.i18n import tr

MERGE_S = 0.8  # changes of one knob closer than this merge into one undo step
_IDS: dict[str, int] = {}


def _merge_id(key: str) -> int:
    return _IDS.setdefault(key, len(_IDS) + 1)


def _slider_held() -> bool:
    w = QApplication.focusWidget()
    return isinstance(w, QAbstractSlider) and w.isSliderDown() or QApplication.mouseButtons() != Qt.NoButton


def _fmt(value) -> str:
    if value is None:
        return tr("app.controls.computed")
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v:+.2f}" for k, v in sorted(value.items())) or "—"
    return str(value)


class Change(QUndoCommand):
    """One recorded change: `key` ("knob:temperature", "layer", "step", "block", "expert", "prompt", "tokens",
    "model", "weights", "knockouts": the Explain dock's (items, mode)), the value before and after."""

    def __init__(self, history: "History", key: str, old, new):
        super().__init__()
        self.history = history
        self.key = key
        self.old = old
        self.new = new
        self.at = time.monotonic()
        self._done = True  # it happened already: push's redo() must not apply it again
        self.setText(self.describe())

    def describe(self) -> str:
        h = self.history
        if self.key.startswith("knob:"):
            name = self.key[5:]
            label = tr(f"app.controls.{name}") if name in ("alpha", "beta", "temperature", "top_p") \
                else tr(f"edit.knob.{name}")
            return tr("edit.cmd.knob", name=label, old=_fmt(getattr(self.old, name)), new=_fmt(getattr(self.new, name)))
        if self.key == "layer":
            return tr("edit.cmd.layer", old=self.old + 1, new=self.new + 1)
        if self.key == "step":
            return tr("edit.cmd.step", old=self.old + 1, new=self.new + 1)
        if self.key == "block":
            return tr("edit.cmd.block", new=h.block_text(self.new))
        if self.key == "expert":
            return tr("edit.cmd.expert", new=self.new)
        if self.key == "prompt":
            return tr("edit.cmd.prompt", new=_clip(self.new))
        if self.key == "tokens":
            return tr("edit.cmd.tokens", old=self._tokens(self.old), new=self._tokens(self.new))
        if self.key == "model":
            return tr("edit.cmd.model", new=self.new.display_name)
        if self.key == "knockouts":
            return tr("edit.cmd.knockouts", n=len(self.new[0])) if self.new[0] else tr("edit.cmd.knockouts_none")
        return tr("edit.cmd.weights", new=tr(f"edit.weights.{self.new}"))

    @staticmethod
    def _tokens(n: int) -> str:
        return str(n) if n else tr("usability.tokens.sentence")

    def id(self) -> int:
        return _merge_id(self.key) if self.key.startswith("knob:") or self.key in ("layer", "step", "tokens") else -1

    def mergeWith(self, other) -> bool:
        if not isinstance(other, Change) or other.key != self.key:
            return False
        if other.at - self.at > MERGE_S and not _slider_held():
            return False
        self.new, self.at = other.new, other.at
        self.setText(self.describe())
        if self.new == self.old:
            self.setObsolete(True)  # a drag back to where it started: no step at all
        return True

    def redo(self) -> None:
        if self._done:
            self._done = False
            return
        self.history.apply(self.key, self.new)

    def undo(self) -> None:
        self.history.apply(self.key, self.old)


def _clip(text: str, n: int = 40) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


class History(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.stack = QUndoStack(self)
        self.stack.setUndoLimit(500)
        self._applying = False  # undo / redo in progress: the changes it makes are not recorded
        self._quiet = False  # a new trace is being handed out: what it moves by itself is not recorded
        self._expect: dict[str, object] = {}  # an async switch undo / redo asked for (model, weights)
        self.dialog: QDialog | None = None
        self.view_path: str | None = None  # the view file shown (opened or saved)
        st = window.state
        self.snap = {"knobs": st.knobs, "layer": st.layer, "step": st.step, "block": (st.block, st.cell),
                     "expert": st.expert, "prompt": st.prompt, "model": window.config,
                     "weights": getattr(st, "weights", "trained"), "tokens": window.engine.max_new_tokens,
                     "knockouts": ((), "zero")}
        st.knobs_requested.connect(self._on_knobs)
        st.layer_changed.connect(lambda v: self._record("layer", v))
        st.step_changed.connect(self._on_step)
        st.block_selected.connect(lambda b: self._record("block", (b, st.cell)))
        st.cell_selected.connect(lambda b, r, c: self._record("block", (b, (b, r, c))))
        st.expert_selected.connect(lambda e: self._record("expert", e))
        st.prompt_requested.connect(lambda text: self._record("prompt", text))
        st.tokens_changed.connect(lambda n: self._record("tokens", n))
        st.knockouts_changed.connect(self._on_knockouts)
        st.trace_arriving.connect(self._trace_arriving)
        st.trace_settled.connect(self._trace_done)
        st.config_changed.connect(self._on_config)  # the switch: before the window fits the layer to it
        window.engine.config_applied.connect(self._config_done)
        window.engine.weights_applied.connect(lambda name: self._record("weights", name))
        st.language_changed.connect(lambda _l: self.retranslate())
        reg = window.registry
        self.undo_action, self.redo_action = reg.actions["undo"], reg.actions["redo"]
        self.stack.canUndoChanged.connect(self._stack_changed)
        self.stack.canRedoChanged.connect(self._stack_changed)
        self.stack.indexChanged.connect(self._stack_changed)
        window.installEventFilter(self)
        self.retranslate()

    # --- recording --------------------------------------------------------------------------------
    def _gone(self) -> bool:
        """The window (and with it the stack) is destroyed: the state may still emit (the engine's last
        trace, a model switch in flight) to slots that outlive it, which then do nothing."""
        return not shiboken6.isValid(self.stack)

    def _record(self, key: str, new) -> None:
        if self._gone():
            return
        old = self.snap.get(key)
        self.snap[key] = new
        expected = self._expect.pop(key, None)
        if self._applying or self._quiet or old == new or (expected is not None and expected == new):
            return
        if key == "model" and old is not None and getattr(old, "path", None) == getattr(new, "path", None):
            return
        self.stack.push(Change(self, key, old, new))

    def _on_knobs(self, knobs) -> None:
        if self._gone():
            return
        old = self.snap["knobs"]
        if self._applying or self._quiet or old == knobs:
            self.snap["knobs"] = knobs
            return
        changed = [f.name for f in fields(knobs) if getattr(old, f.name) != getattr(knobs, f.name)]
        key = f"knob:{changed[0]}" if len(changed) == 1 else "knob:all"
        self.snap["knobs"] = knobs
        self.stack.push(Change(self, key, old, knobs))

    def _on_knockouts(self, value) -> None:
        """A knock-out set changed in the Explain dock; the mode alone (with nothing knocked out) is no change."""
        items, _mode = value
        old_items, _ = self.snap.get("knockouts") or ((), "zero")
        if not items and not old_items:
            self.snap["knockouts"] = value
            return
        self._record("knockouts", value)

    def _on_config(self, cfg) -> None:
        self._record("model", cfg)
        self._quiet = True  # the layer clamped to the new model's depth is part of the switch

    def _config_done(self, _cfg) -> None:
        self._quiet = False
        if self._gone():
            return
        st = self.window.state
        self.snap.update(layer=st.layer, block=(st.block, st.cell))

    def _on_step(self, step: int) -> None:
        if self._gone():
            return
        if self.window.state.player.playing:
            self.snap["step"] = step  # a played animation is not a change of the user's
            return
        self._record("step", step)

    def _trace_arriving(self, _trace) -> None:
        self._quiet = True

    def _trace_done(self, _trace) -> None:
        """After every other handler of the trace (AppState.set_trace's order: the player, the panels, a view
        being applied, the window): whatever they moved is the new starting point, not a change of the user's."""
        self._quiet = False
        if self._gone():
            return
        st = self.window.state
        self.snap.update(knobs=st.knobs, layer=st.layer, step=st.step, block=(st.block, st.cell),
                         expert=st.expert, prompt=st.prompt)

    # --- applying ---------------------------------------------------------------------------------
    def apply(self, key: str, value) -> None:
        w, st = self.window, self.window.state
        self._applying = True
        try:
            self.snap[key if not key.startswith("knob:") else "knobs"] = value
            if key.startswith("knob:"):
                st.set_knobs(value)
            elif key == "layer":
                st.select_layer(value)
            elif key == "step":
                st.player.seek(value)
            elif key == "block":
                block, cell = value
                if cell is not None:
                    st.select_cell(*cell)
                else:
                    st.block, st.cell = block, None
                    st.block_selected.emit(block or "")
            elif key == "expert":
                st.select_expert(value)
            elif key == "prompt":
                st.request_prompt(value)
            elif key == "tokens":
                w.set_tokens(value)
            elif key == "model":
                self._expect["model"] = value
                w.models.request(value)
            elif key == "weights":
                self._expect["weights"] = value
                w.weights.choose(value)
            elif key == "knockouts":
                w.docks["ExplainDock"].set_knockout_items(value)
        finally:
            self._applying = False

    def undo(self) -> None:
        self.stack.undo()

    def redo(self) -> None:
        self.stack.redo()

    def block_text(self, value) -> str:
        block = value[0] if value else None
        return block or tr("edit.none")

    # --- the history dialog -----------------------------------------------------------------------
    def show_dialog(self) -> QDialog:
        """Edit -> History…: every recorded change; a click on one goes back (or forward) to it."""
        if self.dialog is None:
            dialog = QDialog(self.window)
            dialog.setObjectName("history_dialog")
            view = QUndoView(self.stack, dialog)
            view.setObjectName("history_view")
            buttons = QDialogButtonBox(QDialogButtonBox.Close, dialog)
            buttons.rejected.connect(dialog.reject)
            layout = QVBoxLayout(dialog)
            layout.addWidget(view)
            layout.addWidget(buttons)
            dialog.view, dialog.buttons = view, buttons
            dialog.resize(420, 480)
            self.dialog = dialog
            self.retranslate()
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def _stack_changed(self, *_args) -> None:
        """A push, undo or redo: only the Undo / Redo actions change. Each Change says its own text when it is
        made or merged, so the steps are not described again here: that was O(steps) per push, three times
        (canUndo, canRedo and index all signal), up to 500 steps: a layer change's UI-thread CPU went from
        12.9 ms (empty history) to 17.6 ms (499 steps), growing through a long session."""
        try:
            if not self._gone():
                self._update_actions()
        except RuntimeError:  # the window is being destroyed: the stack clears itself as it goes
            pass

    def retranslate(self) -> None:
        """The language changed (or the dialog was made): every step's text anew, then the actions."""
        if self._gone():
            return
        s = self.stack
        for i in range(s.count()):  # first the steps' own texts, in the language now shown
            cmd = s.command(i)
            if isinstance(cmd, Change):
                cmd.setText(cmd.describe())
        self._update_actions()
        if self.dialog is not None:
            self.dialog.setWindowTitle(tr("edit.history.title"))
            self.dialog.view.setEmptyLabel(tr("edit.history.start"))
            self.dialog.buttons.button(QDialogButtonBox.Close).setText(tr("app.common.close"))

    def _update_actions(self) -> None:
        s = self.stack
        self.undo_action.setEnabled(s.canUndo())
        self.redo_action.setEnabled(s.canRedo())
        self.undo_action.setText(tr("edit.undo_named", what=s.undoText()) if s.canUndo() else tr("app.action.undo"))
        self.redo_action.setText(tr("edit.redo_named", what=s.redoText()) if s.canRedo() else tr("app.action.redo"))

    # --- the open view: title and drops -------------------------------------------------------------
    def set_view(self, path: str | None) -> None:
        self.view_path = os.path.abspath(path) if path else None
        self.update_title()

    def title(self) -> str:
        if self.view_path:
            return f"{os.path.basename(self.view_path)} — K3 Explorer"
        return "K3 Explorer"

    def update_title(self) -> None:
        self.window.setWindowTitle(self.title())

    @staticmethod
    def dropped_view(event) -> str | None:
        from app.files.viewfile import SUFFIX

        mime = event.mimeData()
        if mime is None or not mime.hasUrls():
            return None
        urls = [u for u in mime.urls() if u.isLocalFile()]
        if len(urls) != 1 or not urls[0].toLocalFile().lower().endswith(SUFFIX):
            return None
        return urls[0].toLocalFile()

    def eventFilter(self, obj, event) -> bool:
        if obj is self.window and event.type() in (QEvent.DragEnter, QEvent.DragMove):
            if self.dropped_view(event):
                event.acceptProposedAction()
                return True
        elif obj is self.window and event.type() == QEvent.Drop:
            path = self.dropped_view(event)
            if path:
                event.acceptProposedAction()
                self.window.views.open_path(path)
                return True
        return False
