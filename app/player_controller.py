"""PlayerController: the trace player's one owner of steps, seek and the play timer.

AppState makes one (`state.player`); the trace player dock's buttons, the menu / keyboard actions and the
main window's status bar all use it, so the step list is built in one place (on trace_changed) and seeking
means one thing. Seeking selects the step, its pass and its token in AppState; it never changes the chosen
layer (a step about a layer type the chosen layer lacks says so in its facts, see app/docks/trace_player.py).
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.slot_guard import guarded
from scene.steps import Step, build_steps, step_at

BASE_INTERVAL_MS = 1400
SPEEDS = (0.5, 1.0, 2.0, 4.0)


class PlayerController(QObject):
    steps_changed = Signal()  # a trace with a different step list arrived
    playing_changed = Signal(bool)

    def __init__(self, state):
        super().__init__(state)
        self.state = state
        self.steps: list[Step] = []
        self.speed = 1.0
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._tick)
        state.trace_player.connect(self._on_trace)

    # --- reading --------------------------------------------------------------------------------
    @property
    def index(self) -> int:
        return max(0, min(self.state.step, len(self.steps) - 1)) if self.steps else 0

    def current(self) -> Step | None:
        return step_at(self.steps, self.state.step)

    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    # --- control --------------------------------------------------------------------------------
    def seek(self, index: int) -> None:
        """Go to step `index` (clamped): its pass and token become the selected ones. The layer stays."""
        step = step_at(self.steps, index)
        if step is None:
            return
        st = self.state
        st.select_pass(step.pass_index)
        st.select_token(step.token)
        st.select_step(step.index)

    def step_by(self, delta: int) -> None:
        self.seek(self.index + delta)

    def first(self) -> None:
        self.seek(0)

    def last(self) -> None:
        self.seek(len(self.steps) - 1)

    def play(self) -> None:
        if not self.steps:
            return
        if self.index >= len(self.steps) - 1:
            self.seek(0)
        self.timer.start(self.interval())
        self.playing_changed.emit(True)

    def pause(self) -> None:
        was = self.timer.isActive()
        self.timer.stop()
        if was:
            self.playing_changed.emit(False)

    def toggle_play(self) -> None:
        if self.timer.isActive():
            self.pause()
        else:
            self.play()

    def set_speed(self, speed: float) -> None:
        self.speed = float(speed) if speed else 1.0
        if self.timer.isActive():
            self.timer.start(self.interval())

    def interval(self) -> int:
        return int(BASE_INTERVAL_MS / self.speed)

    # --- internals ------------------------------------------------------------------------------
    @guarded
    def _tick(self) -> None:
        if self.index >= len(self.steps) - 1:
            self.pause()
        else:
            self.step_by(1)

    @guarded
    def _on_trace(self, trace) -> None:
        steps = build_steps(trace)
        if steps != self.steps:
            self.steps = steps
            self.steps_changed.emit()
