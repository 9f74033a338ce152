"""Python's cyclic garbage collector runs only in the GUI thread once the app has other threads.

CPython runs a collection in whichever thread happens to allocate when a generation's threshold is crossed. When
that is the engine or render thread and the garbage holds Qt objects (a closed window's wrappers, its docks'
QActions), their C++ destructors run in that thread: a QObject destructor there takes Qt's connection mutex and
then waits for the GIL, while the GUI thread holds the GIL and waits for that mutex in its own deletions — the
whole app hangs (seen in the test suite: the engine thread loading compiled kernels collected an earlier window).
pyqtgraph's GarbageCollector disables the automatic collector and collects on a timer of the GUI thread with the
same generation thresholds, so garbage is still collected about as soon, always in the GUI thread.
"""
from __future__ import annotations

import threading

_collector = None


def collect_on_main_thread(interval_s: float = 1.0) -> None:
    """Install the GUI-thread collector (idempotent). Call from the GUI thread before starting a worker thread."""
    global _collector
    if _collector is not None:
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("collect_on_main_thread must be called from the GUI (main) thread")
    from pyqtgraph.util.garbage_collector import GarbageCollector

    _collector = GarbageCollector(interval=interval_s)


def installed() -> bool:
    return _collector is not None
