"""One helper for the app's background jobs (issue 42.3): the explanation, the experts' usage map and the Compare
dock's same-prompt runs all start a job here instead of three idioms (a QThreadPool relay, a bare daemon thread, a
per-page pool).

    jobs = BackgroundJobs("usage-map", parent=widget)      # one lane: its jobs run one at a time, in order
    jobs.done.connect(on_done)          # (token, result)            on the UI thread (queued)
    jobs.failed.connect(on_failed)      # (token, "Type: one line")  on the UI thread
    jobs.progress.connect(on_progress)  # (token, done, total)       on the UI thread
    job = jobs.start(token, fn)         # fn(job) runs on the lane's thread; job.progress(d, t), job.cancelled()

Thread rule: `fn` never touches a widget; it reports through `job` and returns its result. A lane is a
QThreadPool of one thread owned by the application, so a job never runs on the UI thread and the application
waits for a running job when it quits; every job of a lane is cancelled (job.cancelled() turns True) when the
application is about to quit or the lane's parent goes, so a long job that checks it ends within one step. A lane's
thread runs at the background nice value (scene.thread_priority), below the UI thread. A
result that arrives after its receiver has gone is dropped quietly: the lane's thread never emits on the receiver
itself (the UI thread may delete it at any moment, and an emit racing that deletion crashed the process), but on a
relay of its own job, which the application owns and which goes only after the job's last emit. Engines come from app.engine.explain_service's cache
(engine_for, under ENGINE_LOCK) — the lane does not lock anything itself.
"""
from __future__ import annotations

import logging
import threading

from PySide6.QtCore import QCoreApplication, QObject, QRunnable, QThreadPool, Signal

from scene import thread_priority

log = logging.getLogger(__name__)
_LANES: dict[str, QThreadPool] = {}
_LANES_LOCK = threading.Lock()


def lane(name: str) -> QThreadPool:
    """The application's pool of one thread named `name` (created on first use, kept for the session)."""
    with _LANES_LOCK:
        pool = _LANES.get(name)
        if pool is None:
            pool = _LANES[name] = QThreadPool(QCoreApplication.instance())
            pool.setMaxThreadCount(1)
            pool.setObjectName(f"k3-{name}")
        return pool


def one_line(exc: BaseException) -> str:
    """`Type: first line of the message` — how a failed job is reported to the UI."""
    lines = [s for s in str(exc).splitlines() if s.strip()]
    return f"{type(exc).__name__}: {lines[0].strip() if lines else ''}"


class _Relay(QObject):
    """One job's signals, emitted on the lane's thread and forwarded (queued) to its BackgroundJobs. It lives on
    the UI thread, a child of the application, so no deletion on the UI thread can race an emit: Qt cuts the
    forwarding connections under its own locks when the receiver goes. deleteLater() after the job's last emit."""

    done = Signal(object, object)
    failed = Signal(object, str)
    progress = Signal(object, int, int)


class Job:
    """What a running job sees: its token, progress(done, total) and cancelled()."""

    def __init__(self, relay: _Relay, token):
        self.token = token
        self.stop = False
        self._relay = relay

    def cancelled(self) -> bool:
        return self.stop

    def progress(self, done: int, total: int) -> None:
        self._relay.progress.emit(self.token, int(done), int(total))


class _Runnable(QRunnable):
    def __init__(self, owner: "BackgroundJobs", job: Job, fn, relay: _Relay):
        super().__init__()
        self.name, self.forget, self.job, self.fn, self.relay = owner.name, owner._forget, job, fn, relay

    def run(self) -> None:
        job, relay = self.job, self.relay
        thread_priority.lower_this_thread()  # the UI thread gets a contended core first (scene.thread_priority)
        try:
            if job.stop:
                return
            try:
                result = self.fn(job)
            except Exception as exc:  # noqa: BLE001 - reported to the UI as one line, the app keeps running
                log.warning("background job %s failed: %s", self.name, one_line(exc))
                relay.failed.emit(job.token, one_line(exc))
                return
            if not job.stop:
                relay.done.emit(job.token, result)
        finally:
            try:
                self.forget(job)  # plain Python state of the receiver's wrapper
            except RuntimeError:  # the receiver went meanwhile
                pass
            relay.deleteLater()  # on the UI thread, after the queued emits above were posted


class BackgroundJobs(QObject):
    """A lane's jobs for one receiver: start them, follow them, cancel them (see the module docstring)."""

    done = Signal(object, object)  # token, result
    failed = Signal(object, str)  # token, one-line reason
    progress = Signal(object, int, int)  # token, done, total

    def __init__(self, name: str, parent: QObject | None = None):
        super().__init__(parent)
        self.name = name
        self._pool = lane(name)
        self._running: list[Job] = []
        self._lock = threading.Lock()
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.cancel_all)
        if parent is not None:
            jobs = self._running  # the list itself: the lambda must not keep `self` (a Qt object) alive
            parent.destroyed.connect(lambda *_: [setattr(j, "stop", True) for j in list(jobs)])

    def start(self, token, fn) -> Job:
        """Queue fn(job) on the lane; returns the job (set job.stop or call cancel_all to cancel it)."""
        relay = _Relay(QCoreApplication.instance())  # owned by the application, not by the receiver
        for name in ("done", "failed", "progress"):
            getattr(relay, name).connect(getattr(self, name))  # signal to signal, queued across the threads
        job = Job(relay, token)
        with self._lock:
            self._running.append(job)
        self._pool.start(_Runnable(self, job, fn, relay))
        return job

    def busy(self) -> bool:
        """Whether a job of this receiver is queued or running."""
        with self._lock:
            return bool(self._running)

    def cancel_all(self) -> None:
        with self._lock:
            for job in self._running:
                job.stop = True

    def _forget(self, job: Job) -> None:
        with self._lock:
            if job in self._running:
                self._running.remove(job)
