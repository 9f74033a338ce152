"""Python's cyclic garbage collector runs only in the GUI thread once the app has other threads, in short steps.

CPython runs a collection in whichever thread happens to allocate when a generation's threshold is crossed. When
that is the engine or render thread and the garbage holds Qt objects (a closed window's wrappers, its docks'
QActions), their C++ destructors run in that thread: a QObject destructor there takes Qt's connection mutex and
then waits for the GIL, while the GUI thread holds the GIL and waits for that mutex in its own deletions — the
whole app hangs (seen in the test suite: the engine thread loading compiled kernels collected an earlier window).
So the automatic collector is off and a GUI-thread timer collects with the same generation thresholds.

Each collection is one uninterrupted stretch of the UI thread, so three things keep it short (a
collection was the longest UI stall while dragging a slider, 15-75 ms):
- the timer checks every 100 ms (not once a second), so the youngest generation never piles up (a check that
  finds nothing to do costs microseconds); one gc.collect(n) per check, for the oldest generation that is due;
- the oldest generation is collected only once start-up's objects are frozen (then a full collection is
  short), or at most once a minute before that (CPython itself skips most full collections: it waits until
  the survivors since the last one are a quarter of the oldest generation, which Python code cannot see);
- settle(): once start-up is over (modules, the engine, the docks exist), everything alive is collected once and
  frozen (gc.freeze): later full collections visit only what was made since, not the ~190k objects of Qt's,
  numpy's and numba's modules. thaw() puts them back (a window closes, an engine is replaced), so nothing
  frozen outlives its owner. settle() waits for a quiet moment (its full collection is one stretch of 30-100
  ms); until then freeze() (no collection, microseconds) is called at the first trace and when the compiled
  kernels are loaded, so the young generations stay small meanwhile (any cyclic garbage frozen with them is
  found by the settle that follows).
"""
from __future__ import annotations

import gc
import threading
import time

INTERVAL_S = 0.1
UNSETTLED_FULL_EVERY_S = 60.0  # before settle(): the least time between two full collections

_collector = None
settles = 0  # how many times settle() ran (the tests wait for it)


class _Collector:
    """The GUI-thread timer that does what the automatic collector would (see the module docstring)."""

    def __init__(self, interval_s: float):
        from PySide6.QtCore import QTimer

        self.threshold = gc.get_threshold()
        self.last_full = time.monotonic()
        gc.disable()
        self.timer = QTimer()
        self.timer.timeout.connect(self.check)
        self.timer.start(max(1, int(interval_s * 1000)))

    def check(self) -> None:
        counts = gc.get_count()
        generation = -1
        for gen in range(3):
            if counts[gen] > self.threshold[gen]:
                generation = gen
            else:
                break
        if generation == 2 and not gc.get_freeze_count() and \
                time.monotonic() - self.last_full < UNSETTLED_FULL_EVERY_S:
            generation = 1
        if generation >= 0:
            gc.collect(generation)
            if generation == 2:
                self.last_full = time.monotonic()


def collect_on_main_thread(interval_s: float = INTERVAL_S) -> None:
    """Install the GUI-thread collector (idempotent). Call from the GUI thread before starting a worker thread."""
    global _collector
    if _collector is not None:
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("collect_on_main_thread must be called from the GUI (main) thread")
    _collector = _Collector(interval_s)


def installed() -> bool:
    return _collector is not None


def settle() -> float:
    """Collect everything once and freeze what survives (see the module docstring); returns its milliseconds.
    GUI thread only, at a quiet moment: the full collection is one stretch of 30-100 ms."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("settle must be called from the GUI (main) thread")
    global settles
    t0 = time.perf_counter()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    settles += 1
    if _collector is not None:
        _collector.last_full = time.monotonic()
    return (time.perf_counter() - t0) * 1000.0


def freeze() -> None:
    """Freeze everything alive without a collection (O(1)): the young generations are empty afterwards. A stand-in
    until settle() (see the module docstring)."""
    gc.freeze()


def thaw() -> None:
    """Let the collector see the frozen objects again: they are collected in the next full collection once they
    are garbage (call when what settle() froze may die: a window closes, an engine is replaced)."""
    gc.unfreeze()
