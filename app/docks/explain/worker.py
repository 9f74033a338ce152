"""The Explain dock's worker: one pool thread, owned by the application, computes an explanation
(app/explain_service.py) and hands the result or a one-line failure back to the UI thread."""
from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QObject, QRunnable, QThreadPool, Signal

from app.explain_service import ExplainRequest, explain_result
from scene import thread_priority

_POOL: QThreadPool | None = None


def _pool() -> QThreadPool:
    """One worker thread for the explanations, owned by the application (it waits for a running job on exit)."""
    global _POOL
    if _POOL is None:
        _POOL = QThreadPool(QCoreApplication.instance())
        _POOL.setMaxThreadCount(1)
    return _POOL


class _Relay(QObject):
    """Carries a job's result from the pool thread to the UI thread (a queued signal)."""

    done = Signal(object)  # ExplainResult
    failed = Signal(int, str)  # serial, one-line reason


class _Job(QRunnable):
    def __init__(self, req: ExplainRequest, relay: _Relay):
        super().__init__()
        self.req, self.relay = req, relay

    def run(self) -> None:
        # as the engine and render threads: the UI thread first when the cores are busy (the re-run threads
        # that compute.explain starts from here inherit the nice value)
        thread_priority.lower_this_thread()
        try:
            res = explain_result(self.req)
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
