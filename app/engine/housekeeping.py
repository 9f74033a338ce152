"""The engine worker's housekeeping (app/engine/worker.py), scheduled on the UI thread around the runs so that none of it
competes with a frame, a drag or the next run:

- Traces the UI no longer shows wait in a graveyard and are sent to the engine thread to be freed there (freeing
  one is ~3 ms of C code holding the GIL) once the app is quiet, or at once when 8 have piled up in a long drag;
  the memory is given back to the system (malloc_trim, app/engine/heap.py) only when quiet: it takes ~20 ms and holds
  malloc's locks, so every other thread's allocations wait for it.
- The garbage collector: start-up's objects (and numba's, after the switch of kernels) are frozen out of the
  young generations at once and settled (scene/gc_main_thread.settle) once the engine has been idle for
  SETTLE_QUIET_MS and no mouse button is held; an engine replaced later (another model, other weights) thaws
  them so that the old one can be collected; stopping thaws everything.
- The process-wide switch interval, and collections of Qt objects on the main thread only, set when the engine
  thread starts.
- The frame gate (`FrameGate`): the window may hold the next run until the frame of the trace just published is
  on screen (at most HOLD_MAX_MS). On a machine with few cores the engine, the render thread and its rasteriser
  threads otherwise compete for them during a drag, and the UI thread waited for a CPU longer than it ran;
  taking turns, each trace reaches the screen sooner and the UI thread keeps answering.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication

from app.engine import heap
from scene import gc_main_thread
from scene.gc_main_thread import collect_on_main_thread

log = logging.getLogger(__name__)
HOLD_MAX_MS = 100  # the longest the next run waits for the frame of the last trace (see FrameGate)
SETTLE_QUIET_MS = 1500  # the engine idle this long after a (re)load: freeze start-up's objects for the collector
SWITCH_INTERVAL_S = 0.0002  # bench/app.py: max UI stall 23-31 ms at 1 ms, 13-17 ms at 0.2 ms
GRAVEYARD_MAX = 8  # traces freed at once (without a trim) when this many wait, as in a long drag
DISPOSE_QUIET_MS = 1000  # the graveyard is freed, and the memory trimmed, this long after the last trace


def dispose(traces: list, trim: bool = True) -> None:
    """In the engine thread: the last references of traces the UI no longer shows go away, so freeing their
    ~10^4 arrays each never stalls the UI thread. One at a time, giving the GIL back in between. trim: give the
    freed memory back to the system (only when the app is quiet)."""
    while traces:
        traces.pop()
        time.sleep(0)
    if trim:
        heap.trim()  # malloc keeps the freed chunks otherwise: RSS crept up over an hour (app/engine/heap.py)


class Housekeeping(QObject):
    """Owned by the EngineController (UI thread); `dispose_requested` is connected to the engine thread."""

    dispose_requested = Signal(object, bool)  # traces to free in the engine thread, then trim?

    def __init__(self, quiet: Callable[[], bool], engine_running: Callable[[], bool], parent=None):
        """quiet(): no run in flight or pending and no switch of kernels to come; engine_running(): its thread
        runs (traces can be sent there)."""
        super().__init__(parent)
        self._quiet = quiet
        self._engine_running = engine_running
        self._stopped = False
        self.graveyard: list = []  # traces no longer shown, to be freed in the worker thread
        self.trim_owed = False  # traces were freed without a trim (in a drag): the quiet timer trims
        self.dispose_timer = QTimer(self)
        self.dispose_timer.setSingleShot(True)
        self.dispose_timer.setInterval(DISPOSE_QUIET_MS)
        self.dispose_timer.timeout.connect(self.bury)
        # once the engine is loaded and quiet, the garbage collector freezes what start-up made (short collections
        # from then on, scene/gc_main_thread.py); again after the engine is replaced
        self.settle_timer = QTimer(self)
        self.settle_timer.setSingleShot(True)
        self.settle_timer.setInterval(SETTLE_QUIET_MS)
        self.settle_timer.timeout.connect(self._settle_heap)

    def engine_starting(self) -> None:
        """Before the engine thread starts: the engine, the render thread and the UI share the GIL; a short
        switch interval keeps each of the UI thread's waits for it (one per signal handler) well under a
        millisecond; and no garbage collection (of Qt objects) in the engine thread."""
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
        collect_on_main_thread()

    def stop(self) -> None:
        self._stopped = True
        self.settle_timer.stop()
        gc_main_thread.thaw()  # what was frozen at start-up (this window's objects too) can be collected again

    # --- the garbage collector ---------------------------------------------------------------
    def freeze_then_settle(self) -> None:
        """A (re)load made many long-lived objects: out of the young generations at once, settled when quiet."""
        gc_main_thread.freeze()
        self.settle_timer.start()

    def thaw_then_settle(self) -> None:
        """The engine was replaced: the old one (frozen at start-up) may be collected; settle again when quiet."""
        gc_main_thread.thaw()
        self.settle_timer.start()

    def postpone_settle(self) -> None:
        """A request came: a settle to come waits until after the last change (not while a slider is dragged)."""
        if self.settle_timer.isActive():
            self.settle_timer.start()

    def _settle_heap(self) -> None:
        """The quiet moment after a (re)load: freeze the long-lived objects (scene/gc_main_thread.settle)."""
        if self._stopped:
            return
        if not self._quiet() or QGuiApplication.mouseButtons() != Qt.MouseButton.NoButton:
            self.settle_timer.start()  # not quiet yet (a run, a drag, a switch of kernels to come)
            return
        ms = gc_main_thread.settle()
        log.info("heap: long-lived objects frozen for the garbage collector (%.0f ms)", ms)

    # --- traces no longer shown --------------------------------------------------------------
    def retire(self, old) -> None:
        """`old` left the screen: freed in the worker thread once the UI has dropped it, when the app is quiet
        (or a few have piled up in a long drag), so that freeing competes neither with a frame nor with the next
        run."""
        self.graveyard.append(old)
        if len(self.graveyard) >= GRAVEYARD_MAX:
            self.bury(trim=False)  # a drag: freed now, memory given back once the app is quiet
        self.dispose_timer.start()

    def bury(self, trim: bool = True) -> None:
        """Send the traces no longer shown to the worker to be freed; trim once the app is quiet (the timer)."""
        if self.graveyard and self._engine_running():
            dead, self.graveyard = self.graveyard, []
            self.dispose_requested.emit(dead, trim)
        elif trim and self.trim_owed and self._engine_running():
            self.dispose_requested.emit([], True)
        self.trim_owed = not trim


class FrameGate(QObject):
    """Holds the engine's next run until the frame of the trace just published is on screen, or HOLD_MAX_MS."""

    def __init__(self, on_release: Callable[[], None], parent=None):
        super().__init__(parent)
        self.held = False
        self._on_release = on_release
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(HOLD_MAX_MS)
        self._timer.timeout.connect(self.release)

    def hold(self) -> None:
        self.held = True
        self._timer.start()

    def release(self) -> None:
        if self.held:
            self.held = False
            self._timer.stop()
            self._on_release()
