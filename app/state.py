"""AppState: the one place the app's shared state lives; docks read it and listen to its signals.

Data flows one way: user input -> AppState.request_* -> engine worker (coalesced) -> trace_changed ->
scene + docks. Clicks flow back as block ids / expert ids / layer numbers, never as GL objects.

Every dock is constructed as `SomeDock(state: AppState, parent=None)` (a QDockWidget with an objectName),
connects to the signals it needs, and implements `retranslate()` (called on language_changed). A dock reads
what it needs from the state — the model config (`config`), the language (`language`), the selected block
and cell (`block`, `cell`), the trace player (`player`, a PlayerController) — never from its parent window.
A dock that wants another panel shown asks with `show_dock(object_name, tab)`; the window that holds the
panels answers it (`set_dock_opener`).

The main window owns the engine worker and connects `knobs_requested` / `prompt_requested` to it; the worker
answers with `set_trace(trace)` (or `set_error(message)`).
"""
from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QObject, Signal

from app import i18n
from compute.trace import Knobs, Trace


def _default_expert(cfg) -> int:
    """The routed expert a view of `cfg` (None: the default model, K3) shows first: compute.model_defaults."""
    from compute.config import default_config
    from compute.model_defaults import default_expert

    return default_expert(default_config() if cfg is None else cfg)


class AppState(QObject):
    trace_arriving = Signal(object)  # Trace, just before trace_changed: for the 3D view alone, so that its frame
    # (drawn in the render thread) starts before the panels' handlers run
    trace_player = Signal(object)  # Trace: the player's step list, before any panel reads it
    trace_changed = Signal(object)  # Trace (the new current trace): the panels, in any order among themselves
    trace_view = Signal(object)  # Trace: a view file being applied finishes (its step, layer, camera)
    trace_window = Signal(object)  # Trace: the main window's restored step, camera focus and status line
    trace_settled = Signal(object)  # Trace: last; the undo history takes what the handlers above moved as the new
    # starting point (not a change of the user's)
    engine_error = Signal(str)  # a run failed; the last good trace stays
    layer_changed = Signal(int)  # selected layer, 0-based
    pass_changed = Signal(int)  # selected forward pass: 0 = prefill, i = decode step i
    token_changed = Signal(int)  # selected absolute token position
    step_changed = Signal(int)  # trace player step index
    block_selected = Signal(str)  # block id ("L37/kda.state", "lm_head", ...)
    cell_selected = Signal(str, int, int)  # block id, drawn grid row, column (a cell clicked in the scene)
    config_changed = Signal(object)  # ModelConfig of the shown model
    expert_selected = Signal(int)  # routed expert id 0..E-1
    language_changed = Signal(str)  # "en" | "ko"
    knobs_requested = Signal(object)  # Knobs: the worker should recompute (latest wins)
    prompt_requested = Signal(str)  # a new prompt to run
    tokens_changed = Signal(int)  # tokens to generate (0: until the end of the sentence), set by the window
    knockouts_changed = Signal(object)  # (items tuple, mode): the Explain dock's knock-out experiment changed
    explanation_shown = Signal(object)  # scene.explain_overlay.ExplainOverlay | None: the lens column / route to draw

    def __init__(self, parent=None):
        super().__init__(parent)
        self.trace: Trace | None = None
        self.knobs = Knobs()
        self.prompt = "로봇이 컵을 집었다"
        self.layer = 0  # 0-based; the window opens on the model's default layer (compute.model_defaults)
        self.pass_index = 0
        self.token = 0
        self.step = 0
        self.block: str | None = None
        self.cell: tuple[str, int, int] | None = None
        self.expert = _default_expert(None)  # the default model's (compute.model_defaults); set_config follows a switch
        self.device = "cpu"
        self.weights = "trained"  # the weights chosen (app/weights_choice.py); the trace says which ran
        self.config = None
        self._dock_opener = None
        i18n.on_change(self._on_language)  # held weakly by i18n: a dropped state is forgotten by itself
        from app.player_controller import PlayerController

        self.player = PlayerController(self)

    # --- language / config ---------------------------------------------------------------------
    @property
    def language(self) -> str:
        return i18n.language()

    def set_language(self, lang: str) -> None:
        i18n.set_language(lang)  # language_changed follows through the i18n listener

    def _on_language(self, lang: str) -> None:
        self.language_changed.emit(lang)

    def detach_language(self) -> None:
        """A later language switch must not reach this state (its window is closing)."""
        i18n.off_change(self._on_language)

    def set_config(self, cfg) -> None:
        if self.config is None and cfg is not None:  # the first model: its default layer (the window then applies
            from compute.model_defaults import default_layer  # the remembered one, a switch app/window/model_menu's rule)

            self.layer = default_layer(cfg) - 1
        if cfg is not None:  # the first model: its default expert; a switch: the user's where this model has it
            from compute.model_defaults import expert_for

            self.expert = expert_for(cfg, None if self.config is None else self.expert)
        self.config = cfg
        self.config_changed.emit(cfg)

    def set_dock_opener(self, opener) -> None:
        """opener(object_name, tab) -> bool: shows that panel (on that tab); False when there is none."""
        self._dock_opener = opener

    def show_dock(self, name: str, tab: str = "") -> bool:
        """Show the panel `name` on tab `tab`; False when no window holds such a panel."""
        return bool(self._dock_opener(name, tab)) if self._dock_opener is not None else False

    # --- engine side ---------------------------------------------------------------------------
    def set_trace(self, trace: Trace) -> None:
        self.trace = trace
        self.pass_index = min(self.pass_index, len(trace.passes) - 1)
        self.token = min(self.token, len(trace.tokens) - 1)
        self.device = trace.device
        # The order of what happens when a trace arrives is this list, not the order of `connect` calls
        # (docs/spec/design.md, "When a trace arrives"): the 3D view, the player, the panels, a view being
        # applied, the window, the undo history last.
        for phase in (self.trace_arriving, self.trace_player, self.trace_changed, self.trace_view,
                      self.trace_window, self.trace_settled):
            phase.emit(trace)

    def set_error(self, message: str) -> None:
        self.engine_error.emit(message)

    def request_knobs(self, **changes) -> None:
        """Change some knobs (alpha=..., temperature=..., expert_bias={17: 2.0}, ...) and ask for a new run."""
        self.knobs = replace(self.knobs, **changes)
        self.knobs_requested.emit(self.knobs)

    def set_knobs(self, knobs: Knobs) -> None:
        """All knobs at once (Edit -> Undo puts a whole set back) and a new run."""
        self.knobs = knobs
        self.knobs_requested.emit(self.knobs)

    def request_prompt(self, text: str) -> None:
        self.prompt = text
        self.prompt_requested.emit(text)

    # --- selection -----------------------------------------------------------------------------
    def select_layer(self, layer: int) -> None:
        if layer != self.layer:
            self.layer = layer
            self.layer_changed.emit(layer)

    def select_pass(self, index: int) -> None:
        if index != self.pass_index:
            self.pass_index = index
            self.pass_changed.emit(index)

    def select_token(self, position: int) -> None:
        if position != self.token:
            self.token = position
            self.token_changed.emit(position)

    def select_step(self, step: int) -> None:
        if step != self.step:
            self.step = step
            self.step_changed.emit(step)

    def select_block(self, block_id: str) -> None:
        self.block = block_id
        if self.cell is not None and self.cell[0] != block_id:
            self.cell = None
        self.block_selected.emit(block_id)

    def select_cell(self, block_id: str, row: int, col: int) -> None:
        self.block = block_id
        self.cell = (block_id, int(row), int(col))
        self.cell_selected.emit(block_id, int(row), int(col))

    def select_expert(self, expert: int) -> None:
        self.expert = expert
        self.expert_selected.emit(expert)
