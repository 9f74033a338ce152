"""The main window's status bar (a part the window owns: `MainWindow.status`): layer and its types, the trace
step, the engine's device and whether it computes, the persistent engine note (CPU in place of CUDA, or no
engine at all), the hovered block's name and engine errors. It reads the window's public names only (.state,
.config, .engine, statusBar()).
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app import i18n, player
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.paint import css
from app.widgets.safe_text import plain_tip
from scene.block_kinds import mixer_key
from scene.steps import text_args


def _clip(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class StatusBar:
    """MainWindow's status bar: its labels, made and added to the window's status bar here."""

    def __init__(self, window):
        self.window = window
        self.hover_message = ""  # the hovered block's line, so that clearing it never clears another message
        self.layer_label = QLabel()
        self.layer_label.setObjectName("status_layer")
        self.step_label = QLabel()
        self.step_label.setObjectName("status_step")
        self.device_label = QLabel()
        self.device_label.setObjectName("status_device")
        self.engine_note = QLabel()  # shown while the engine runs on the CPU in place of CUDA, or not at all
        self.engine_note.setObjectName("status_engine_note")
        self.engine_note.setStyleSheet(f"color: {css('status_note_text')}; background: {css('status_note_fill')};"
                                       " border-radius: 3px; padding: 1px 6px;")
        self.engine_note.hide()
        for label in (self.layer_label, self.step_label, self.device_label, self.engine_note):
            label.setContentsMargins(8, 0, 8, 0)
            label.setTextFormat(Qt.PlainText)  # step titles name the model, the note quotes an error (untrusted)
            window.statusBar().addPermanentWidget(label)

    @guarded
    def on_error(self, message: str) -> None:
        self.window.statusBar().showMessage(tr("app.status.engine_error", message=message), 15000)

    @guarded
    def on_hover(self, block_id: str) -> None:
        """Name the hovered block in the status bar ('L37/kda.state · state S (d_k × d_v)')."""
        bar = self.window.statusBar()
        if not block_id:
            if bar.currentMessage() and bar.currentMessage() == self.hover_message:
                bar.clearMessage()  # only our own hover text, never an error message
            return
        kind = block_id.split("/", 1)[-1]
        name = tr(f"block.{kind}") if f"block.{kind}" in i18n.table() else kind
        self.hover_message = f"{block_id} · {name}"
        bar.showMessage(self.hover_message, 4000)

    def update(self) -> None:
        """The labels again from the window's state, config and engine."""
        w = self.window
        state, config, engine = w.state, w.config, w.engine
        layer = state.layer
        mixer = config.mixer_types[layer]
        ffn = config.ffn_types[layer]
        self.layer_label.setText(tr("app.status.layer", n=layer + 1, total=len(config.mixer_types),
                                    mixer=tr(f"app.type.{mixer_key(mixer, config.mla_output_gate is not None)}"),
                                    ffn=tr(f"app.type.{ffn}")))
        step = state.player.current()
        if step is not None:
            self.step_label.setText(tr("app.status.step", caption=player.step_caption(step, tr, len(state.player.steps)),
                                       title=tr(step.title_key, **text_args(config, tr))))
        elif not engine.load_error:
            self.step_label.setText(tr("app.status.engine_loading"))
        else:
            self.step_label.setText("")
        device = engine.device_text or ("—" if engine.load_error else tr("app.status.device_loading"))
        busy = " · " + tr("app.status.computing") if engine.busy else ""
        self.device_label.setText(tr("app.status.device", device=device) + busy)
        self._update_engine_note()

    def _update_engine_note(self) -> None:
        """The persistent note: the engine runs on the CPU because the device asked for failed, or no engine
        could be made at all (the full reason in the tooltip)."""
        note, engine = self.engine_note, self.window.engine
        if engine.load_error:
            reason = engine.load_error
            note.setText(tr("app.status.engine_failed", message=_clip(reason)))
        elif engine.fallback is not None:
            device, reason = engine.fallback
            note.setText(tr("app.status.device_fallback", device="CUDA" if device in ("cuda", "auto") else device))
            reason = tr("app.status.device_fallback_tip", device=device, message=reason)
        else:
            note.hide()
            return
        note.setToolTip(plain_tip(reason))
        note.show()

