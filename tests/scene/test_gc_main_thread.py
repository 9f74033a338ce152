"""Garbage holding Qt objects is collected in the GUI thread only, whatever thread allocates (a collection in the
engine thread destroyed an earlier window's QActions there and deadlocked against the GUI thread's deletions)."""
import gc
import threading

from PySide6.QtCore import QObject, Qt

from scene.gc_main_thread import collect_on_main_thread


class _Cycle:
    """Cyclic garbage holding a QObject: only the cyclic collector frees it."""

    def __init__(self, on_destroyed):
        self.me = self
        self.obj = QObject()
        self.obj.destroyed.connect(on_destroyed, Qt.ConnectionType.DirectConnection)


def test_a_worker_threads_allocations_never_collect_qt_garbage(qtbot):
    collect_on_main_thread()
    assert not gc.isenabled()
    gc.collect()
    freed_in = []
    for _ in range(50):
        _Cycle(lambda *_: freed_in.append(threading.get_ident()))

    kept = []

    def allocate():  # crosses the generation-0 threshold many times over (and keeps what it made, as an engine does)
        kept.extend([] for _ in range(100_000))

    worker = threading.Thread(target=allocate)
    worker.start()
    worker.join()
    assert freed_in == [], "garbage was collected in the worker thread"
    qtbot.waitUntil(lambda: len(freed_in) == 50, timeout=5000)  # the GUI thread's timer collects it
    assert set(freed_in) == {threading.main_thread().ident}
