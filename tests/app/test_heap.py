"""app.engine.heap.trim gives the free heap memory that freed traces leave behind back to the system (glibc)."""
import ctypes
import ctypes.util
import sys

import numpy as np
import pytest

from app.engine import heap


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _free_heap_bytes() -> int:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    return int(libc.mallinfo2().fordblks)  # bytes in free chunks malloc keeps


def _rss_bytes() -> int:
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_trim_returns_what_freed_traces_leave_in_the_heap():
    # a trace-like burst: many small arrays (below the mmap threshold, so they live in malloc's heap)
    arrays = [np.full(700, i, np.float64) for i in range(20000)]
    keep = arrays[-1]  # the newest allocation pins the heap top, as a live trace does
    del arrays
    assert _free_heap_bytes() > 50e6  # the freed arrays sit in the heap as free chunks
    before = _rss_bytes()
    heap.trim()
    after = _rss_bytes()
    assert before - after > 40e6, (before, after)  # their pages went back to the system
    assert keep[0] == 19999


def test_the_engine_worker_trims_after_freeing_traces(monkeypatch):
    from app.engine import worker

    calls = []
    monkeypatch.setattr(heap, "trim", lambda: calls.append(1) or True)
    traces = [object(), object()]
    worker._EngineObject.dispose(None, traces)  # uses nothing of the object
    assert traces == [] and calls == [1]


def test_a_drag_frees_old_traces_at_once_but_trims_only_when_quiet(qtbot, monkeypatch):
    """Malloc_trim takes ~20 ms and holds malloc's locks (the UI thread's allocations wait), so the
    traces freed in a drag (8 at a time) are not trimmed; the quiet timer trims once afterwards."""
    import time

    from app.engine import worker
    from app.state import AppState

    trims, published, sent = [], [], []
    monkeypatch.setattr(heap, "trim", lambda: trims.append(time.monotonic()) or True)
    state = AppState()
    ctl = worker.EngineController(state, max_new_tokens=1, device="cpu", compiled=False)
    ctl.trace_published.connect(lambda *_: published.append(time.monotonic()))
    ctl.housekeeping.dispose_requested.connect(lambda _dead, trim: sent.append(trim))  # what the worker is asked: free, and trim?
    ctl.start()
    try:
        qtbot.waitUntil(lambda: state.trace is not None, timeout=90000)
        # the drag never pauses for the quiet interval (1 s), however slow a run is on a loaded machine
        ctl.housekeeping.dispose_timer.setInterval(600000)
        for i in range(12):  # one at a time, as a slow drag: 12 traces replaced
            state.request_knobs(alpha=0.2 + 0.05 * i)
            qtbot.waitUntil(lambda i=i: state.trace.knobs.alpha == 0.2 + 0.05 * i, timeout=60000)
        assert sent == [False]  # the first 8 old traces were freed during the drag, without a trim
        assert ctl.housekeeping.trim_owed and len(ctl.housekeeping.graveyard) == 4
        ctl.housekeeping.dispose_timer.setInterval(1000)
        ctl.housekeeping.dispose_timer.start()  # the drag ends: the quiet interval after its last trace
        last = published[-1]
        qtbot.waitUntil(lambda: len(trims) == 1, timeout=10000)
        assert trims[0] > last and sent == [False, True]
        assert ctl.housekeeping.graveyard == [] and not ctl.housekeeping.trim_owed
    finally:
        ctl.stop()
