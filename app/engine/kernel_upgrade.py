"""The switch of the engine worker (app/engine/worker.py) from the operators' numpy layer loop to compute.fused_nb's
compiled pass, on the UI thread's side.

The first engine runs the operators on numpy ("numpy"), so the first trace never waits for numba (a compile takes
~25 s of CPU on an install's first start, a load from its disk cache ~0.6 s). Once the first trace is out,
`KernelUpgrade.start` runs a child process (app/engine/kernel_warmup.py's one entry point, at low priority; frozen: the bundle's own executable)
that compiles the kernels into numba's disk cache or finds them there. A child that had to compile (exit 10) is
run once more: only when a second one finds them all cached are they loaded. When a child succeeds, `load` asks
the engine thread to rebuild the engine with the compiled kernels (a cache load) and run them from then on.
Nothing is ever compiled in the app's own threads, never on the UI thread. `kernels` says which run ("numpy",
"warming", "compiled"); a failure anywhere keeps the operators for the rest of the session.
"""
from __future__ import annotations

import logging
from typing import Callable

from PySide6.QtCore import QObject, QProcess, Signal

from app.engine import kernel_warmup

log = logging.getLogger(__name__)
WARMUP_COMPILED = kernel_warmup.EXIT_COMPILED  # the child compiled (not loaded) some kernels: run once more to check
_warmed = False  # a kernel warm-up child succeeded in this process: numba's disk cache holds the kernels


class KernelUpgrade(QObject):
    """Owned by the EngineController: the warm-up child, its recheck, and which kernels run."""

    changed = Signal(str)  # "warming" | "compiled" | "numpy"
    load = Signal()  # to the engine thread: rebuild the engine with the compiled kernels (now in numba's cache)

    def __init__(self, wanted: bool, model: Callable[[], object], usable: Callable[[], bool], parent=None):
        """wanted: switch at all (False: the operators throughout); model(): the engine's model (None before
        it loaded); usable(): the engine can run (it loaded, or is loading, without an error)."""
        super().__init__(parent)
        self.kernels = "numpy"  # "numpy" | "warming" (a child fills numba's cache) | "compiled"
        self._wanted = wanted
        self._model = model
        self._usable = usable
        self._stopped = False
        self.child: QProcess | None = None
        self._rechecked = False

    @property
    def settled(self) -> bool:
        """No switch of kernels is to come: the compiled ones run, or the numpy ones will stay."""
        return self.kernels != "warming" and (self.kernels == "compiled" or not self.possible())

    def possible(self) -> bool:
        model = self._model()
        return (self._wanted and not self._stopped and self._usable() and kernel_warmup.wanted()
                and (model is None or getattr(model, "backend", "") == "numpy"))

    def start(self) -> None:
        """After the first trace: a child fills numba's cache (once per process), then the engine thread loads it."""
        if self.kernels != "numpy" or not self.possible():
            return
        self._set("warming")
        if _warmed:
            self.load.emit()
            return
        self._start_child()

    def loaded(self, ok: bool) -> None:
        """The engine thread's answer to `load`: the compiled kernels run now, or the numpy ones stay."""
        self._set("compiled" if ok else "numpy", final=not ok)

    def stop(self) -> None:
        """No switch from now on; a child still running is killed."""
        self._stopped = True
        proc, self.child = self.child, None
        if proc is not None and proc.state() != QProcess.ProcessState.NotRunning:
            proc.finished.disconnect(self._on_child_finished)
            proc.kill()
            proc.waitForFinished(2000)

    def _start_child(self) -> None:
        proc = self.child = QProcess(self)
        program, *args = kernel_warmup.child_command()  # frozen-aware: `python -m ...` or the bundle's executable
        proc.setProgram(program)
        proc.setArguments(args)
        proc.setWorkingDirectory(kernel_warmup.CODE_ROOT)  # `-m app.engine.kernel_warmup` finds this checkout too
        proc.finished.connect(self._on_child_finished)
        proc.errorOccurred.connect(self._on_child_error)
        proc.start()

    def _on_child_finished(self, code: int, _status=None) -> None:
        global _warmed
        proc, self.child = self.child, None
        if proc is None or self._stopped:
            return
        err = bytes(proc.readAllStandardError()).decode("utf-8", "replace").strip().splitlines()
        proc.deleteLater()
        if code == 0:
            _warmed = True
            self.load.emit()
        elif code == WARMUP_COMPILED and not self._rechecked:
            self._rechecked = True  # compiled and cached now: a second child must find them all cached
            self._start_child()
        else:
            log.warning("engine: the compiled kernels could not be prepared (exit %d: %s); the numpy operators run", code,
                        err[-1] if err else "no message")
            self._set("numpy", final=True)

    def _on_child_error(self, error) -> None:
        if error == QProcess.ProcessError.FailedToStart and self.child is not None:
            proc, self.child = self.child, None
            proc.deleteLater()
            log.warning("engine: the kernel warm-up could not start; the numpy operators run")
            self._set("numpy", final=True)

    def _set(self, kernels: str, final: bool = False) -> None:
        if final:
            self._wanted = False  # no second try in this session
        self.kernels = kernels
        self.changed.emit(kernels)
