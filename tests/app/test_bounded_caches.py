"""What a long auto-play makes per layer change and per new trace must not pile up (the soak's
'RSS growth < 10 MiB/hour, gc objects flat'): after many PgDn/PgUp presses and slider moves in the real window,
the layouts, traces, scene items, child QObjects and signal connections are as many as after the warm-up."""
import gc

from PySide6.QtCore import QObject, Qt, SIGNAL
from PySide6.QtTest import QTest


def _alive(kind) -> int:
    gc.unfreeze()  # objects the window froze for the collector (scene/gc_main_thread.settle) are counted too
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


def _snapshot(win) -> dict:
    from compute.trace import Trace
    from scene.layout import Layout

    st = win.state
    return {
        "layouts": _alive(Layout),
        "traces": _alive(Trace),
        "scene items": len(win.scene.gl.items),
        "child QObjects": len(win.findChildren(QObject)),
        "trace_changed slots": st.receivers(SIGNAL("trace_changed(PyObject)")),
        "layer_changed slots": st.receivers(SIGNAL("layer_changed(int)")),
        "step_changed slots": st.receivers(SIGNAL("step_changed(int)")),
    }


def _watch_disposal(win) -> list:
    """The lists of traces the window sends its engine thread to free (the thread empties each as it frees)."""
    sent: list = []
    win.engine.housekeeping.dispose_requested.connect(lambda dead, _trim: sent.append(dead))
    return sent


def _settled_snapshot(win, qtbot, sent: list) -> dict:
    """The snapshot once the worker has freed the traces no longer shown: they wait for a quiet second in the
    worker's graveyard, then are freed in the engine thread, which empties the list it was sent (`sent`, from
    _watch_disposal) — on a loaded machine that takes longer than any fixed wait (a CI run counted one trace
    more before the loop than after it)."""
    engine = win.engine
    qtbot.waitUntil(lambda: not engine.housekeeping.graveyard and not engine.housekeeping.dispose_timer.isActive()
                    and not any(sent), timeout=20000)
    return _snapshot(win)


def _new_trace(win, qtbot, percent: int) -> None:
    slider = win.docks["ControlsDock"].slider("alpha")
    before = win.state.trace
    slider.setValue(slider.minimum() + (slider.maximum() - slider.minimum()) * percent // 100)
    qtbot.waitUntil(lambda: win.state.trace is not before and not win.engine.busy, timeout=60000)


def _layer_keys(win, qtbot, n: int, key=Qt.Key.Key_PageDown) -> None:
    for _ in range(n):
        layer = win.state.layer
        QTest.keyClick(win.scene.gl, key)
        qtbot.waitUntil(lambda layer=layer: win.state.layer != layer, timeout=5000)


def test_layer_changes_and_new_traces_leave_nothing_behind(make_window, qtbot):
    win = make_window()
    sent = _watch_disposal(win)
    win.scene.gl.setFocus()
    _layer_keys(win, qtbot, 6)  # warm up: the first layouts, colour buffers, label images, camera animation
    _new_trace(win, qtbot, 30)
    before = _settled_snapshot(win, qtbot, sent)
    layers = []
    win.state.layer_changed.connect(layers.append)
    for k, percent in enumerate((70, 35, 85, 50)):
        _layer_keys(win, qtbot, 10, Qt.Key.Key_PageUp if k % 2 == 0 else Qt.Key.Key_PageDown)
        _new_trace(win, qtbot, percent)
    win.state.layer_changed.disconnect(layers.append)
    after = _settled_snapshot(win, qtbot, sent)
    assert len(layers) == 40, f"{len(layers)} of 40 PgDn/PgUp presses changed the layer"
    # counts are the whole process's (other tests' fixtures hold traces and layouts too): what matters is no growth
    grew = {k: (before[k], after[k]) for k in before if after[k] > before[k]}
    assert not grew, f"grew over 40 layer changes and 4 new traces (before, after): {grew}"


def test_stepping_makes_no_new_play_icon(make_window, qtbot):
    """Every step refreshed the play button with a new QIcon from the style; each one's pixmaps went into Qt's
    pixmap cache under a new key (~2 KiB of C++ heap per step: the soak's steady malloc growth at 4x auto-play).
    The icon changes only when play/pause flips."""
    win = make_window()
    dock = win.docks["TracePlayerDock"]
    button = dock.play_button
    keys = set()
    for i in range(1, 12):
        QTest.mouseClick(dock.forward_button, Qt.MouseButton.LeftButton)  # the next step, as a person steps
        qtbot.waitUntil(lambda i=i: win.state.player.index == i, timeout=5000)
        keys.add(button.icon().cacheKey())
    assert win.state.player.index == 11, "the forward button stepped through the trace"
    assert len(keys) == 1, f"{len(keys)} play icons made over 11 steps"
    dock.toggle_play()
    qtbot.waitUntil(lambda: button.icon().cacheKey() not in keys, timeout=5000)  # playing: the pause icon
    dock.toggle_play()
    qtbot.waitUntil(lambda: button.icon().cacheKey() in keys, timeout=5000)  # paused again: the same play icon
