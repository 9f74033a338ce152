"""Work split over event-loop turns: one callable per turn, so that the input and the timers that fall due
meanwhile run between them (issue 44.5: the Explain dock's drawing of a new result, ~25 ms of UI-thread work on
Kimi Linear, held a 117.7-ms heartbeat gap in the Korean soak)."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QObject, QTimer

from app.slot_guard import guarded


class Turns:
    """start(parts) runs the first part now and each next one in a later turn; start again or cancel() drops
    what is left. A 0-ms single-shot QTimer carries the next part: the timers due meanwhile run before it (a
    0-ms QTimer.singleShot(ms, obj, fn) is a posted call, run in the same turn as the part before it)."""

    def __init__(self, owner: QObject):
        self._parts: list[Callable[[], None]] = []
        self._timer = QTimer(owner)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._next)

    @property
    def pending(self) -> bool:
        """Whether parts are left for later turns."""
        return bool(self._parts)

    def start(self, parts: Iterable[Callable[[], None]]) -> None:
        self._parts = list(parts)
        self._next()

    def cancel(self) -> None:
        self._parts = []
        self._timer.stop()

    @guarded
    def _next(self) -> None:
        if not self._parts:
            return
        part = self._parts.pop(0)
        if self._parts:
            self._timer.start()
        part()
