"""Keys go to the focused control: with a slider focused, arrows / Home / End / PgUp move the
slider, not the trace player or the layer; with the 3D view focused the same keys drive the player."""
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from gui_helpers import wait_idle

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def test_a_focused_slider_gets_the_keys_and_the_3d_view_gives_them_to_the_player(main_window, qtbot):
    win = main_window
    player = win.state.player
    slider = win.docks["ControlsDock"].slider("alpha")
    slider.setFocus(Qt.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is slider, timeout=3000)
    player.seek(3)
    step, layer = win.state.step, win.state.layer
    start = slider.value()

    QTest.keyClick(slider, Qt.Key_Right)
    assert slider.value() == start + slider.singleStep()
    QTest.keyClick(slider, Qt.Key_Home)
    assert slider.value() == slider.minimum()
    QTest.keyClick(slider, Qt.Key_PageUp)
    assert slider.value() == slider.minimum() + slider.pageStep()
    QTest.keyClick(slider, Qt.Key_End)
    assert slider.value() == slider.maximum()
    QTest.keyClick(slider, Qt.Key_Left)
    assert slider.value() == slider.maximum() - slider.singleStep()
    assert (win.state.step, win.state.layer, player.playing) == (step, layer, False)  # the player never moved

    wait_idle(qtbot, win)
    win.scene.gl.setFocus(Qt.MouseFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is win.scene.gl, timeout=3000)
    QTest.keyClick(win.scene.gl, Qt.Key_Right)
    assert win.state.step == step + 1
    QTest.keyClick(win.scene.gl, Qt.Key_End)
    assert win.state.step == len(player.steps) - 1
    QTest.keyClick(win.scene.gl, Qt.Key_Home)
    assert win.state.step == 0
    QTest.keyClick(win.scene.gl, Qt.Key_PageUp)
    assert win.state.layer == layer + 1
    assert slider.value() == slider.maximum() - slider.singleStep()  # the slider kept its value


def test_space_on_a_focused_button_presses_the_button_not_play(main_window, qtbot):
    win = main_window
    run = win.docks["TracePlayerDock"].run_button
    run.setFocus(Qt.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is run, timeout=3000)
    with qtbot.waitSignal(win.state.prompt_requested, timeout=2000):
        QTest.keyClick(run, Qt.Key_Space)
    assert not win.state.player.playing
    wait_idle(qtbot, win)


def test_menu_items_work_whatever_has_the_focus(main_window, qtbot):
    win = main_window
    slider = win.docks["ControlsDock"].slider("beta")
    slider.setFocus(Qt.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is slider, timeout=3000)
    win.registry.actions["step_forward"].trigger()  # Player -> Step forward, chosen with the mouse
    assert win.state.step == 1
    win.registry.actions["step_first"].trigger()
    assert win.state.step == 0


def test_the_key_guard_sees_only_the_focus_widgets_events(make_window, qtbot, monkeypatch):
    """The guard used to filter every event of the application in Python (paints, timers, the engine's
    and render thread's queued signals), taking the GIL for each; it now watches the focus widget alone.
    A window of its own: the spy guard must be installed as the window is built."""
    from app.window import actions

    class Spy(actions._BareKeysToFocusedControl):
        def __init__(self, *args):
            self.seen = []  # names only: no wrappers of widgets kept alive
            super().__init__(*args)

        def eventFilter(self, obj, event):  # noqa: N802
            self.seen.append(obj.objectName() or type(obj).__name__)
            return super().eventFilter(obj, event)

    monkeypatch.setattr(actions, "_BareKeysToFocusedControl", Spy)
    win = make_window(wait_trace=False)
    guard = win.registry._key_guard
    slider = win.docks["ControlsDock"].slider("alpha")
    slider.setObjectName("alpha_slider_under_test")
    slider.setFocus(Qt.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is slider, timeout=3000)
    guard.seen.clear()
    win.statusBar().repaint()
    win.docks["TracePlayerDock"].repaint()
    with qtbot.waitSignal(win.scene.gl.frameSwapped, timeout=10000):  # and a frame from the render thread
        win.scene.gl.update()  # (its queued signals) has been delivered meanwhile
    assert set(guard.seen) <= {"alpha_slider_under_test"}, set(guard.seen)
    QTest.keyClick(slider, Qt.Key_Home)  # and it still gives the slider its keys
    assert slider.value() == slider.minimum() and guard.seen


def test_a_floated_docks_focused_slider_gets_the_keys_not_the_player(main_window, qtbot):
    """A floated dock is a window of its own (the slider's window() is the dock), yet the main window's bare-key
    shortcuts still fire in it: the guard must follow the focus into it, as it does inside the main window."""
    win = main_window
    player = win.state.player
    dock = win.docks["ControlsDock"]
    dock.setFloating(True)
    dock.show()
    dock.raise_()
    qtbot.waitExposed(dock)
    with qtbot.waitActive(dock):
        dock.activateWindow()
    slider = dock.slider("temperature")
    assert slider.window() is dock  # the case under test: the slider is in another top-level window
    slider.setFocus(Qt.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is slider, timeout=3000)
    player.seek(6)
    step, layer = win.state.step, win.state.layer
    start = slider.value()

    QTest.keyClick(slider, Qt.Key_Right)
    assert slider.value() == start + slider.singleStep()
    QTest.keyClick(slider, Qt.Key_Home)
    assert slider.value() == slider.minimum()
    QTest.keyClick(slider, Qt.Key_End)
    assert slider.value() == slider.maximum()
    QTest.keyClick(slider, Qt.Key_Left)
    assert slider.value() == slider.maximum() - slider.singleStep()
    assert (win.state.step, win.state.layer, player.playing) == (step, layer, False)  # the player never moved

    win.scene.gl.setFocus(Qt.MouseFocusReason)  # back in the main window the keys drive the player again
    with qtbot.waitActive(win):
        win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is win.scene.gl, timeout=3000)
    QTest.keyClick(win.scene.gl, Qt.Key_Right)
    assert win.state.step == step + 1
    wait_idle(qtbot, win)
