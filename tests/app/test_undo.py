"""Edit -> Undo / Redo / History (app/window/history.py) on a real window, with real key and mouse events: a knob
changed through its slider comes back with Ctrl+Z and again with Ctrl+Shift+Z, a layer change likewise, a
slider drag is one undo step, undoing adds nothing to the history, and a dropped *.k3view opens that view
and names it in the title."""
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from tests.app.gui_helpers import drag_slider, wait_idle

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def _undo(qtbot, win):
    qtbot.keyClick(win, Qt.Key_Z, Qt.ControlModifier)


def _redo(qtbot, win):
    qtbot.keyClick(win, Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)


def _focus_scene(qtbot, win):
    win.scene.gl.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is win.scene.gl or not win.scene.gl.isVisible(), timeout=3000)


def test_the_edit_menu_holds_undo_redo_and_history(main_window):
    win = main_window
    menu = win.registry.menus["edit"]
    names = [a.objectName() for a in menu.actions() if not a.isSeparator()]
    assert names[:3] == ["action_undo", "action_redo", "action_history"]
    assert win.registry.actions["undo"].shortcut().toString() == "Ctrl+Z"
    assert win.registry.actions["redo"].shortcut().toString() == "Ctrl+Shift+Z"


def test_a_temperature_change_undoes_and_redoes_with_the_keys(main_window, qtbot):
    win = main_window
    stack = win.history.stack
    stack.clear()
    slider = win.docks["ControlsDock"].slider("temperature")
    before = win.state.knobs.temperature
    slider.setFocus()
    qtbot.keyClick(slider, Qt.Key_PageUp)  # the slider's own key: +0.2
    after = win.state.knobs.temperature
    assert after != before
    assert stack.count() == 1 and "Temperature" in stack.text(0)
    _focus_scene(qtbot, win)
    _undo(qtbot, win)
    assert win.state.knobs.temperature == before
    assert abs(win.docks["ControlsDock"].rows["temperature"].spec.from_slider(slider.value()) - before) < 1e-9
    assert stack.count() == 1 and stack.index() == 0  # undoing adds nothing
    assert win.registry.actions["redo"].isEnabled() and not win.registry.actions["undo"].isEnabled()
    _redo(qtbot, win)
    assert win.state.knobs.temperature == after
    _undo(qtbot, win)
    assert win.state.knobs.temperature == before
    wait_idle(qtbot, win)
    stack.clear()


def test_a_layer_change_undoes(main_window, qtbot):
    win = main_window
    stack = win.history.stack
    stack.clear()
    _focus_scene(qtbot, win)
    layer = win.state.layer
    qtbot.keyClick(win, Qt.Key_PageUp if layer == 0 else Qt.Key_PageDown)
    moved = win.state.layer
    assert moved != layer and stack.count() == 1 and "Layer" in stack.text(0)
    _undo(qtbot, win)
    assert win.state.layer == layer
    _redo(qtbot, win)
    assert win.state.layer == moved
    _undo(qtbot, win)
    assert win.state.layer == layer
    stack.clear()


def test_a_slider_drag_is_one_undo_step(main_window, qtbot):
    win = main_window
    stack = win.history.stack
    stack.clear()
    slider = win.docks["ControlsDock"].slider("top_p")
    before = win.state.knobs.top_p
    seen = []
    win.state.knobs_requested.connect(lambda k: seen.append(k.top_p))
    drag_slider(slider, -max(40, slider.width() // 3), steps=10, pause_ms=120)  # 1.2 s of dragging
    assert len(set(seen)) > 3, seen  # the drag changed the knob many times
    assert win.state.knobs.top_p < before
    assert stack.count() == 1, [stack.text(i) for i in range(stack.count())]
    _focus_scene(qtbot, win)
    _undo(qtbot, win)
    assert win.state.knobs.top_p == before
    wait_idle(qtbot, win)
    stack.clear()


def test_the_history_dialog_steps_back(main_window, qtbot):
    win = main_window
    stack = win.history.stack
    stack.clear()
    layer = win.state.layer
    n = len(win.config.mixer_types)
    targets = [(layer + d) % n for d in (3, 6)]
    for t in targets:
        win.state.select_layer(t)
        stack.command(stack.count() - 1).at -= 10  # far apart in time: two steps, not one merged
    assert stack.count() == 2
    dialog = win.history.show_dialog()
    qtbot.waitExposed(dialog)
    view = dialog.view
    assert view.model().rowCount() == 3  # the start of the session and the two changes
    rect = view.visualRect(view.model().index(0, 0))
    qtbot.mouseClick(view.viewport(), Qt.LeftButton, pos=rect.center())
    assert stack.index() == 0 and win.state.layer == layer
    dialog.close()
    stack.clear()


def test_a_dropped_k3view_opens_and_names_the_title(main_window, qtbot, tmp_path):
    win = main_window
    path = tmp_path / "talk.k3view"
    assert win.views.save_to(str(path))
    win.history.set_view(None)
    assert "talk" not in win.windowTitle()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    pos = win.scene.mapTo(win, win.scene.rect().center())
    enter = QDragEnterEvent(pos, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(win, enter)
    assert enter.isAccepted()
    drop = QDropEvent(pos.toPointF() if hasattr(pos, "toPointF") else pos, Qt.CopyAction, mime, Qt.LeftButton,
                      Qt.NoModifier)
    QApplication.sendEvent(win, drop)
    assert drop.isAccepted()
    assert win.views.recent[0] == str(path)
    assert win.windowTitle() == "talk.k3view — K3 Explorer"
    wait_idle(qtbot, win)
    win.history.set_view(None)
    assert win.windowTitle() == "K3 Explorer"


def test_a_dropped_other_file_is_not_taken_as_a_view(main_window):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile("/tmp/picture.png")])
    enter = QDragEnterEvent(QPoint(50, 50), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(main_window, enter)
    assert not enter.isAccepted()


def test_step_selection_and_prompt_undo(main_window, qtbot):
    win = main_window
    st, stack = win.state, win.history.stack
    wait_idle(qtbot, win)
    stack.clear()
    _focus_scene(qtbot, win)
    step = st.step
    qtbot.keyClick(win.scene.gl, Qt.Key_Right)
    assert st.step == step + 1 and stack.count() == 1 and "Step" in stack.text(0)
    _undo(qtbot, win)
    assert st.step == step
    stack.clear()
    block_before = st.block
    win.scene.block_clicked.emit("lm_head")  # what a click on the LM head sends
    assert st.block == "lm_head" and win.scene.selected == "lm_head"
    _undo(qtbot, win)
    assert st.block == block_before and win.scene.selected == (block_before or None)
    _redo(qtbot, win)
    assert st.block == "lm_head"
    stack.clear()
    prompt = st.prompt
    box = win.docks["TracePlayerDock"].prompt
    box.setFocus()
    box.setText("상자를 테이블 위에")
    qtbot.keyClick(box, Qt.Key_Return)
    assert st.prompt == "상자를 테이블 위에"
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: st.trace.text == "상자를 테이블 위에", timeout=60000)
    assert [stack.text(i) for i in range(stack.count())] == ["Run prompt “상자를 테이블 위에”"]
    _focus_scene(qtbot, win)
    _undo(qtbot, win)
    assert st.prompt == prompt
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: st.trace.text == prompt, timeout=60000)
    assert box.text() == prompt and stack.count() == 1 and stack.index() == 0  # the re-run added no entry
    stack.clear()


def test_playing_is_not_recorded_and_the_history_speaks_korean(main_window, qtbot):
    win = main_window
    st, stack = win.state, win.history.stack
    stack.clear()
    st.player.seek(0)
    st.player.play()
    qtbot.waitUntil(lambda: st.step >= 2, timeout=20000)
    st.player.pause()
    assert stack.count() == 0
    st.player.seek(0)
    assert stack.count() == 1
    win.state.set_language("ko")
    try:
        assert stack.text(0).startswith("단계")
        assert win.registry.menus["edit"].title() == "편집(&E)"
        assert win.registry.actions["undo"].text().startswith("실행 취소: 단계")
    finally:
        win.state.set_language("en")
    assert win.registry.actions["undo"].text().startswith("Undo Step")
    stack.clear()


def test_a_model_switch_undoes_to_the_model_before(main_window, qtbot):
    from compute.config import ModelConfig, available_configs

    win = main_window
    stack = win.history.stack
    wait_idle(qtbot, win)
    stack.clear()
    first = win.config
    other = ModelConfig.from_json(available_configs()["kimi-k2"])

    def wait_model(name):
        qtbot.waitUntil(lambda: win.config.name == name and win.state.trace is not None
                        and win.state.trace.config_name == name and not win.engine.busy, timeout=120000)

    win.models.model_actions["kimi-k2"].trigger()  # what a click on the Model menu item does
    wait_model(other.name)
    assert [stack.text(i) for i in range(stack.count())] == [f"Switch model to {other.display_name}"]
    _focus_scene(qtbot, win)
    _undo(qtbot, win)
    wait_model(first.name)
    assert win.config.path == first.path and stack.count() == 1 and stack.index() == 0
    _redo(qtbot, win)
    wait_model(other.name)
    assert stack.count() == 1 and stack.index() == 1
    _undo(qtbot, win)
    wait_model(first.name)
    wait_idle(qtbot, win)
    stack.clear()


def test_tokens_to_generate_undo(main_window, qtbot):
    win = main_window
    stack = win.history.stack
    wait_idle(qtbot, win)
    stack.clear()
    spin = win.docks["ControlsDock"].tokens.spin
    before = win.engine.max_new_tokens
    spin.setFocus()
    qtbot.keyClick(spin, Qt.Key_Up)
    assert win.engine.max_new_tokens == before + 1
    assert [stack.text(i) for i in range(stack.count())] == [f"Tokens {before} → {before + 1}"]
    _focus_scene(qtbot, win)
    _undo(qtbot, win)
    assert win.engine.max_new_tokens == before and spin.value() == before and stack.index() == 0
    _redo(qtbot, win)
    assert win.engine.max_new_tokens == before + 1 and spin.value() == before + 1
    _undo(qtbot, win)
    wait_idle(qtbot, win)
    stack.clear()


def test_state_signals_while_the_window_is_torn_down_do_nothing(make_window, qtbot):
    """The soak saw 'Internal C++ object (QUndoStack) already deleted' from the history's slots when the window
    closed: Qt destroys the window's children one by one, and the state (a later child) still emitted to the
    history after its undo stack was gone. With the stack destroyed first, as then, the state's signals reach
    the history's slots and nothing is raised."""
    import shiboken6

    win = make_window("gone.ini")
    st, history = win.state, win.history
    trace, cfg, knobs = st.trace, win.config, st.knobs
    shiboken6.delete(history.stack)
    assert not shiboken6.isValid(history.stack)
    st.config_changed.emit(cfg)
    for phase in (st.trace_arriving, st.trace_player, st.trace_changed, st.trace_view, st.trace_window,
                  st.trace_settled):
        phase.emit(trace)
    st.knobs_requested.emit(knobs)
    st.layer_changed.emit(3)
    st.step_changed.emit(2)
    history.retranslate()
    QApplication.processEvents()


def test_a_change_describes_only_its_own_step_however_long_the_history(main_window, qtbot, monkeypatch):
    """A push once described every step in the stack again (three times: canUndo, canRedo and index all signal),
    so after an hour's use (up to 500 steps) each layer change cost the UI thread ~25 ms more. Each step says its
    own text when made or merged; only a language switch describes them all anew."""
    from app.window import history as history_mod

    win = main_window
    st, stack = win.state, win.history.stack
    stack.clear()
    n_layers = len(win.config.mixer_types)
    for i in range(60):  # alternating expert choices: 60 steps that do not merge
        st.select_expert(3 if i % 2 else 5)
    assert stack.count() == 60
    calls = []
    real = history_mod.Change.describe
    monkeypatch.setattr(history_mod.Change, "describe", lambda self: calls.append(self.key) or real(self))
    _focus_scene(qtbot, win)
    layer = st.layer
    qtbot.keyClick(win, Qt.Key_PageUp if layer == 0 else Qt.Key_PageDown)  # the layer key, as a person presses it
    assert st.layer != layer and stack.count() == 61
    assert calls == ["layer"], calls  # the new step alone, not the 60 before it
    assert win.registry.actions["undo"].text() == f"Undo Layer {layer + 1} → {st.layer + 1}"
    calls.clear()
    win.state.set_language("ko")
    try:
        assert len(calls) == 61  # a language switch: every step in the language shown
        assert stack.text(0) == "Expert 5 선택" and stack.text(60) == f"레이어 {layer + 1} → {st.layer + 1}"
        assert win.registry.actions["undo"].text() == f"실행 취소: 레이어 {layer + 1} → {st.layer + 1}"
    finally:
        win.state.set_language("en")
    assert stack.text(0) == "Select expert 5" and stack.text(1) == "Select expert 3"
    assert 0 <= st.layer < n_layers
    stack.clear()
