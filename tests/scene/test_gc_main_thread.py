"""Garbage holding Qt objects is collected in the GUI thread only, whatever thread allocates (a collection in the
engine thread destroyed an earlier window's QActions there and deadlocked against the GUI thread's deletions)."""
import gc
import threading
import time

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


def _collections_made(fn) -> list[int]:
    """The generations of the collections fn made (gc.callbacks)."""
    made = []

    def seen(phase, info):
        if phase == "stop":
            made.append(info["generation"])
    gc.callbacks.append(seen)
    try:
        fn()
    finally:
        gc.callbacks.remove(seen)
    return made


def _oldest_generation_due() -> list:
    """Counts that make every generation due: the youngest over its threshold, each older one past its count.
    Keep what it returns until the check: freeing tracked objects counts down again."""
    gc.collect()
    for _ in range(gc.get_threshold()[2] + 1):
        gc.collect(1)  # each young collection counts one towards the oldest generation
    junk = [[] for _ in range(gc.get_threshold()[0] + 50)]  # noqa: F841 - tracked allocations count
    for _ in range(gc.get_threshold()[1] + 1):
        gc.collect(0)
    junk.extend([] for _ in range(gc.get_threshold()[0] + 50))
    return junk


def test_one_collection_per_check_and_no_full_one_before_settle(qtbot):
    collect_on_main_thread()
    from scene import gc_main_thread

    collector = gc_main_thread._collector
    gc.unfreeze()
    collector.last_full = time.monotonic()
    junk = _oldest_generation_due()  # noqa: F841
    made = _collections_made(collector.check)
    assert made == [1], f"before settle() a full collection waits (at most one a minute): {made}"


def test_after_settle_full_collections_skip_the_frozen_objects(qtbot):
    collect_on_main_thread()
    from scene import gc_main_thread

    collector = gc_main_thread._collector
    try:
        gc_main_thread.settle()
        frozen = gc.get_freeze_count()
        assert frozen > 10_000, "the objects alive at settle() (modules, Qt's wrappers) are frozen"
        junk = _oldest_generation_due()  # noqa: F841
        made = _collections_made(collector.check)
        assert made == [2], f"once settled, a due full collection is made: {made}"
        young = len(gc.get_objects())
        assert young < frozen / 2, "a full collection after settle() visits far fewer objects than were frozen"
        # garbage made after settle() is still found: a cycle holding a QObject, freed in this (the GUI) thread
        freed_in = []
        _Cycle(lambda *_: freed_in.append(threading.get_ident()))
        kept = [[] for _ in range(5 * gc.get_threshold()[0])]  # noqa: F841 - the youngest generation comes due
        qtbot.waitUntil(lambda: freed_in == [threading.main_thread().ident], timeout=5000)
    finally:
        gc_main_thread.thaw()
    assert gc.get_freeze_count() == 0
