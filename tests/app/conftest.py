"""Fixtures for GUI tests of the real main window (pytest-qt under Xvfb).

`make_window(name="s.ini", language="en")` opens a real MainWindow with its own settings file under the
test's tmp_path (the user's settings are never touched), waits until it is exposed and (by default) until the
engine worker has published the first trace. Windows are closed at teardown (settings saved, worker stopped).

A module whose tests never look at the explanation marks itself `pytestmark = pytest.mark.window(explain=False)`:
its windows (made or shared) start without the Explain dock's engine and explanations (MainWindow(explain=False));
`make_window(explain=...)` decides for one window.
"""
import pytest


def window_explains(request) -> bool:
    """Whether the windows of this test (or module) compute explanations: the `window` mark's explain, else True."""
    mark = request.node.get_closest_marker("window")
    return bool(mark.kwargs.get("explain", True)) if mark is not None else True


@pytest.fixture
def make_window(qtbot, tmp_path, request):
    from app import i18n
    from app.window.main_window import MainWindow

    windows = []
    explains = window_explains(request)

    def make(name: str = "settings.ini", language: str | None = "en", wait_trace: bool = True, **kwargs):
        kwargs.setdefault("explain", explains)
        win = MainWindow(settings_path=str(tmp_path / name), language=language, **kwargs)
        qtbot.addWidget(win)
        win.show()
        qtbot.waitExposed(win)
        with qtbot.waitActive(win):  # keyboard shortcuts (WindowShortcut context) need the active window
            win.activateWindow()
        if wait_trace:  # and the docks built after the first trace (MainWindow._after_first_show)
            qtbot.waitUntil(lambda: win.state.trace is not None and win.late_docks_built, timeout=90000)
            qtbot.waitUntil(lambda: explanation_settled(win), timeout=90000)
        windows.append(win)
        return win

    yield make
    import shiboken6

    for win in windows:
        if shiboken6.isValid(win) and win.isVisible():  # a test may have destroyed its window itself
            win.close()
    i18n.set_language("en")



def explanation_settled(win) -> bool:
    """The Explain dock's lens column / route is drawn in the 3D view (or both are off): it arrives from a pool
    thread shortly after the first trace and adds a header line, so tests that measure the overlay wait for it."""
    dock = win.docks.get("ExplainDock") if win.late_docks_built else None
    if dock is None or not dock.auto or not dock.show3d.any_on():
        return True
    return not dock.busy and win.scene.explanation is not None


@pytest.fixture(scope="module")
def shared_window(qapp, tmp_path_factory, request):
    """One real main window (with its first trace) shared by the tests of a module, to keep the suite fast.
    Tests using it must leave it as they found it (step 0, English, default knobs)."""
    import time

    from PySide6.QtCore import QCoreApplication, QEvent

    from app import i18n
    from app.window.main_window import MainWindow

    path = tmp_path_factory.mktemp("shared") / "settings.ini"
    win = MainWindow(settings_path=str(path), language="en", explain=window_explains(request))
    win.show()
    win.activateWindow()
    deadline = time.monotonic() + 90
    while (win.state.trace is None or not win.late_docks_built or not win.isActiveWindow()
           or not explanation_settled(win)) and time.monotonic() < deadline:
        qapp.processEvents()
        time.sleep(0.01)
    assert win.state.trace is not None, "the engine produced no trace"
    yield win
    win.close()
    win.deleteLater()  # as pytest-qt does for the windows a test adds: its memory goes with the module
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    i18n.set_language("en")


@pytest.fixture
def main_window(shared_window, qtbot):
    """The module's shared window, made the active window again (another test's window may have taken it)."""
    if not shared_window.isActiveWindow():
        with qtbot.waitActive(shared_window):
            shared_window.raise_()
            shared_window.activateWindow()
    before, cfg = _shared_state(shared_window), shared_window.state.config
    yield shared_window
    _restore(shared_window, qtbot, before, cfg)
    after = _shared_state(shared_window)
    assert after == before, f"the shared window could not be put back as the test found it: {before} -> {after}"


def _restore(win, qtbot, before: dict, cfg) -> None:
    """Put back what a test of the shared window changed (the model, prompt, knobs, language, step), so that the
    next test meets the window the fixture promised; the fixture then asserts it is so."""
    from app import i18n
    from tests.app.gui_helpers import wait_idle

    st = win.state
    wait_idle(qtbot, win)
    if i18n.language() != before["language"]:
        st.set_language(before["language"])
    if _shared_state(win)["model"] != before["model"] and cfg is not None:
        win.models.request(cfg)
        qtbot.waitUntil(lambda: st.config is not None and st.config.name == cfg.name, timeout=90000)
        wait_idle(qtbot, win)
    if st.prompt != before["prompt"]:
        st.request_prompt(before["prompt"])
        wait_idle(qtbot, win)
    if st.knobs != before["knobs"]:
        st.set_knobs(before["knobs"])
        wait_idle(qtbot, win)
    if st.step != before["step"]:
        st.player.seek(before["step"])
    if st.layer != before["layer"]:
        st.select_layer(before["layer"])
    if win.presenting and not before["presenting"]:
        win.leave_presentation()
    if _layout(win) != before["layout"]:  # a dock closed, floated or moved: Window -> Reset layout
        win.reset_layout()


def _shared_state(win) -> dict:
    """What a test of the shared window must leave as it found it: the step, the layer, the language, the knobs,
    the model, the weights, the prompt and the layout (presentation mode; each dock open, floating, in its area)."""
    from app import i18n

    st = win.state
    cfg = getattr(st, "config", None)
    return {"step": st.step, "layer": st.layer, "language": i18n.language(), "knobs": st.knobs,
            "prompt": st.prompt, "weights": st.weights,
            "model": getattr(cfg, "name", None) if cfg is not None else None,
            "presenting": win.presenting, "layout": _layout(win)}


def _layout(win) -> tuple:
    """Each built dock: its name, open (its Window menu toggle), floating, and the dock area it is in."""
    return tuple((name, dock.toggleViewAction().isChecked(), dock.isFloating(), int(win.dockWidgetArea(dock).value))
                 for name, dock in sorted(dict.items(win.docks)) if hasattr(dock, "toggleViewAction"))


@pytest.fixture(autouse=True)
def _no_guarded_exception(request):
    """Strict: an exception the app's slot guard caught (app/slot_guard.py: logged, one status line, the app
    goes on) fails the test — for the user it is a status line, for the suite a bug. Exceptions that reach
    Qt's event loop unguarded fail it through pytest-qt's own capture (sys.excepthook; qt_no_exception_capture
    is not set). A test that provokes one on purpose takes the `slot_errors` fixture and empties it."""
    from app import slot_guard

    caught: list = []
    request.node._slot_errors = caught

    def seen(exc, where):
        caught.append((where, exc))

    slot_guard.observe(seen)
    yield caught
    slot_guard.unobserve(seen)
    if caught:
        import traceback

        text = "\n".join(f"in {where}:\n" + "".join(traceback.format_exception(type(e), e, e.__traceback__))
                         for where, e in caught)
        pytest.fail(f"{len(caught)} exception(s) caught by the slot guard:\n{text}", pytrace=False)


@pytest.fixture
def slot_errors(request, _no_guarded_exception):
    """The slot-guard reports of this test, for tests that provoke them: clear the list before it ends."""
    return _no_guarded_exception
