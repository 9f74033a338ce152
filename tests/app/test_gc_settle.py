"""The garbage collector's settle (scene/gc_main_thread.settle): once the window has started and is
quiet, what start-up made is frozen, so the GUI thread's full collections stay short; never while the user holds
a mouse button (a drag); an engine replaced later is still collected; closing the window thaws everything."""
import gc
import weakref

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.engine import housekeeping
from scene import gc_main_thread
from tests.app.gui_helpers import slider_handle_center, wait_idle
from tests.app.weights_helpers import trained_asset  # noqa: F401 - fixture


def test_start_up_objects_are_frozen_once_quiet_and_thawed_when_the_window_closes(make_window, qtbot):
    settles = gc_main_thread.settles
    win = make_window()
    assert gc.get_freeze_count() > 50_000, "start-up's objects are frozen (without a collection) at the first trace"
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: gc_main_thread.settles > settles, timeout=10 * housekeeping.SETTLE_QUIET_MS)
    assert gc.get_freeze_count() > 50_000
    win.close()
    assert gc.get_freeze_count() == 0, "a closed window's objects must be collectable"


def test_no_settle_while_a_mouse_button_is_held(make_window, qtbot):
    win = make_window()
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: not win.engine.housekeeping.settle_timer.isActive(), timeout=10 * housekeeping.SETTLE_QUIET_MS)
    settles = gc_main_thread.settles
    fired = []
    win.engine.housekeeping.settle_timer.timeout.connect(lambda: fired.append(1))
    win.engine.housekeeping.settle_timer.start()  # as after a (re)load
    slider = win.docks["ControlsDock"].slider("alpha")
    handle = slider_handle_center(slider)
    QTest.mousePress(slider, Qt.LeftButton, Qt.NoModifier, handle)
    try:
        # the quiet timer came due twice while the button was held (each time settle was asked for)
        qtbot.waitUntil(lambda: len(fired) >= 2, timeout=10 * housekeeping.SETTLE_QUIET_MS)
        assert gc_main_thread.settles == settles, "the full collection of settle() ran while a button was held"
    finally:
        QTest.mouseRelease(slider, Qt.LeftButton, Qt.NoModifier, handle)
    qtbot.waitUntil(lambda: gc_main_thread.settles > settles, timeout=10 * housekeeping.SETTLE_QUIET_MS)


def test_an_engine_replaced_after_settle_is_collected(make_window, qtbot, trained_asset):  # noqa: F811
    win = make_window()
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: not win.engine.housekeeping.settle_timer.isActive(), timeout=10 * housekeeping.SETTLE_QUIET_MS)
    settles = gc_main_thread.settles
    old = weakref.ref(win.engine.engine.model)
    win.engine.request_weights("random")
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.weights_name == "random", timeout=60000)
    wait_idle(qtbot, win)

    def collected():
        if old() is None:
            return True
        gc.collect()  # as the collector's next full collection would
        return old() is None
    qtbot.waitUntil(collected, timeout=10 * housekeeping.SETTLE_QUIET_MS)
    qtbot.waitUntil(lambda: gc_main_thread.settles > settles, timeout=10 * housekeeping.SETTLE_QUIET_MS)
