"""A closed and deleted main window leaves memory: nothing of it stays reachable. A window closed hides its docks,
and the docks' deferred "tab raised / covered" callbacks (app/docks/deferred.py) once held the whole window for
good (each closed window kept ~120 MB: a suite worker grew to 8 GB)."""
import gc
import time
import weakref

import pytest
from PySide6.QtCore import QCoreApplication, QEvent

from conftest import explanation_settled


@pytest.mark.parametrize("explain", [True, False])
def test_a_closed_window_is_freed(qapp, tmp_path, explain):
    from app.window.main_window import MainWindow

    win = MainWindow(settings_path=str(tmp_path / "s.ini"), language="en", explain=explain)
    win.show()
    deadline = time.monotonic() + 90
    while (win.state.trace is None or not win.late_docks_built or not explanation_settled(win)) \
            and time.monotonic() < deadline:
        qapp.processEvents()
        time.sleep(0.01)
    assert win.state.trace is not None and win.late_docks_built
    docks = [d for d in dict.values(win.docks) if hasattr(d, "toggleViewAction")]
    assert docks
    refs = [weakref.ref(win), weakref.ref(win.state), *(weakref.ref(d) for d in docks)]
    trace = weakref.ref(win.state.trace)
    win.close()
    win.deleteLater()
    del win, docks
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    for _ in range(5):
        qapp.processEvents()
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"{len(alive)} of the window's objects stay alive: {[type(o).__name__ for o in alive][:8]}"
    assert trace() is None, "the window's trace stays alive"
