"""The real main window under Xvfb, driven with real mouse and keyboard events."""
import numpy as np
import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtTest import QTest
from PySide6.QtGui import QInputMethodEvent
from PySide6.QtWidgets import QApplication, QDockWidget, QLineEdit

from app import i18n
from app.window.actions import ACTIONS, ActionSpec, duplicate_shortcuts
from app.docks.registry import DOCKS
from app.files.settings import Settings
from gui_helpers import changed_fraction, drag_slider, image_array, wait_idle


def test_window_title_docks_window_menu_and_status_bar(main_window, qtbot):
    win = main_window
    assert win.windowTitle() == "K3 Explorer"
    docks = win.findChildren(QDockWidget)
    assert len(docks) >= len(DOCKS)
    names = [d.objectName() for d in docks]
    assert all(names) and len(set(names)) == len(names)
    toggles = {a.text() for a in win.registry.menus["window"].actions()}
    assert {d.windowTitle() for d in docks} <= toggles
    assert win.status.layer_label.text() == "Layer 37 / 93 · KDA + MoE"  # 1-based layer 37 is KDA with MoE
    import torch

    expected = "Engine: CUDA · " if torch.cuda.is_available() else "Engine: CPU"
    assert win.status.device_label.text().startswith(expected)
    assert win.status.step_label.text().startswith(f"Step 1 of {len(win.state.player.steps)} · stage 1 of 17 · prefill · ")


def test_window_menu_toggles_a_dock(main_window, qtbot):
    win = main_window
    dock = win.docks["ControlsDock"]
    assert dock.isVisible()
    win.findChild(type(dock.toggleViewAction()), "toggle_ControlsDock").trigger()
    assert not dock.isVisible()
    dock.toggleViewAction().trigger()
    assert dock.isVisible()


def test_space_plays_and_the_step_advances(main_window, qtbot):
    win = main_window
    player = win.docks["TracePlayerDock"]
    win.scene.gl.setFocus()
    assert player.index == 0 and not player.playing
    QTest.keyClick(win.scene.gl, Qt.Key_Space)
    assert player.playing
    qtbot.waitUntil(lambda: win.state.step >= 2, timeout=8000)
    QTest.keyClick(win.scene.gl, Qt.Key_Space)
    assert not player.playing
    step = win.state.step
    QTest.keyClick(win.scene.gl, Qt.Key_Right)
    assert win.state.step == step + 1
    QTest.keyClick(win.scene.gl, Qt.Key_Left)
    assert win.state.step == step
    QTest.keyClick(win.scene.gl, Qt.Key_End)
    assert win.state.step == len(player.steps) - 1
    last_round = len(win.state.trace.passes)  # the last decode round samples the last generated token
    n = len(player.steps)
    assert player.counter.text() == f"Step {n} of {n} · stage 15 of 17 · decode token {last_round}"  # ends with "stream"
    assert win.scene.step_kind == "stream"  # the scene follows the step
    QTest.keyClick(win.scene.gl, Qt.Key_Home)
    assert win.state.step == 0


def test_player_keys_are_ignored_while_typing_a_prompt(main_window, qtbot):
    win = main_window
    player = win.docks["TracePlayerDock"]
    edit = player.findChild(QLineEdit, "prompt_edit")
    qtbot.mouseClick(edit, Qt.LeftButton)
    edit.end(False)
    before = edit.text()
    QTest.keyClick(edit, Qt.Key_Space)
    QTest.keyClick(edit, Qt.Key_Home)
    assert not player.playing and win.state.step == 0
    assert edit.text() == before + " "  # the space went into the text


def test_typing_a_korean_prompt_and_run_changes_the_trace(main_window, qtbot):
    win = main_window
    player = win.docks["TracePlayerDock"]
    edit = player.prompt
    edit.clear()
    qtbot.mouseClick(edit, Qt.LeftButton)
    for syllable in "컵을 집다":  # Korean arrives from the input method as committed text
        event = QInputMethodEvent()
        event.setCommitString(syllable)
        QApplication.sendEvent(edit, event)
    assert edit.text() == "컵을 집다"
    qtbot.mouseClick(player.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: win.state.trace.text == "컵을 집다", timeout=60000)
    assert "UTF-8 (13 bytes)" in player.bytes_label.text()  # 4 syllables x 3 + 1 space


def test_empty_prompt_shows_an_inline_message(main_window, qtbot):
    win = main_window
    player = win.docks["TracePlayerDock"]
    trace = win.state.trace
    player.prompt.clear()
    qtbot.mouseClick(player.run_button, Qt.LeftButton)
    assert player.message.isVisible() and "empty" in player.message.text()
    assert win.state.trace is trace


def test_engine_error_keeps_the_last_good_trace(main_window, qtbot):
    win = main_window
    trace = win.state.trace
    player = win.docks["TracePlayerDock"]
    player.prompt.setText("가" * 300)  # more toy tokens than the engine takes (256)
    qtbot.mouseClick(player.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: player.message.isVisible(), timeout=60000)
    assert "Engine error" in player.message.text()
    assert "256" in win.statusBar().currentMessage()
    assert win.state.trace is trace


def test_dragging_alpha_changes_the_trace_and_the_scene_pixels(main_window, qtbot, tmp_path):
    win = main_window
    wait_idle(qtbot, win)
    controls = win.docks["ControlsDock"]
    slider = controls.slider("alpha")
    before_trace = win.state.trace
    win.scene.set_camera_preset("front", animate=False)  # the exploded KDA layer 37 in view
    qtbot.waitUntil(lambda: win.scene.trace is before_trace, timeout=5000)
    shot = win.scene.gl.grabFramebuffer()  # rendered again from the scene's current state (exact)
    shot.save(str(tmp_path / "before.png"))
    before = image_array(shot)
    assert controls.rows["alpha"].value.text() == "computed"
    drag_slider(slider, -slider.width() // 3)
    assert win.state.knobs.alpha is not None and win.state.knobs.alpha < 0.45
    qtbot.waitUntil(lambda: win.state.trace.knobs.alpha == win.state.knobs.alpha, timeout=60000)
    wait_idle(qtbot, win)
    a0 = before_trace.passes[0].layers[36].tensors["kda.alpha"]
    a1 = win.state.trace.passes[0].layers[36].tensors["kda.alpha"]
    assert np.allclose(a1, win.state.knobs.alpha) and not np.allclose(a0, a1)
    assert controls.rows["alpha"].value.text() == f"{win.state.knobs.alpha:.2f}"
    qtbot.waitUntil(lambda: win.scene.trace is win.state.trace, timeout=5000)  # the scene has the new trace
    shot = win.scene.gl.grabFramebuffer()
    shot.save(str(tmp_path / "after.png"))
    after = image_array(shot)
    assert changed_fraction(before, after) > 0.002


def test_close_and_reopen_restores_docks_sliders_layer_language_camera(make_window, qtbot):
    win = make_window("persist.ini")
    controls = win.docks["ControlsDock"]
    controls.slider("temperature").setValue(controls.rows["temperature"].spec.to_slider(0.5))
    controls.slider("beta").setValue(controls.rows["beta"].spec.to_slider(0.3))
    win.state.select_layer(49)
    win.docks["ControlsDock"].toggleViewAction().trigger()  # hide the controls
    player = win.docks["TracePlayerDock"]
    win.removeDockWidget(player)
    win.addDockWidget(Qt.BottomDockWidgetArea, player)  # move the player under the scene
    player.show()
    win.docks["SiliconDock"].toggleViewAction().trigger()  # a dock built after the first frame
    assert not win.docks["SiliconDock"].isVisible()
    win.scene.set_camera_preset("top", animate=False)
    camera = win.scene.camera_state()
    experts_area = win.dockWidgetArea(win.docks["ExpertGridDock"])  # where the default layout put it
    win.registry.actions["lang_ko"].trigger()
    win.close()

    again = make_window("persist.ini", language=None, wait_trace=False)
    assert i18n.language() == "ko"
    assert again.state.knobs.temperature == 0.5 and again.state.knobs.beta == 0.3
    assert again.state.knobs.alpha is None  # still "computed"
    rows = again.docks["ControlsDock"].rows
    assert rows["temperature"].value.text() == "0.50" and rows["beta"].value.text() == "0.30"
    assert rows["alpha"].value.text() == i18n.tr("app.controls.computed", lang="ko")
    assert not again.docks["ControlsDock"].isVisible()
    assert again.docks["TracePlayerDock"].isVisible()
    assert again.dockWidgetArea(again.docks["TracePlayerDock"]) == Qt.BottomDockWidgetArea
    qtbot.waitUntil(lambda: "SiliconDock" in again.docks, timeout=30000)
    assert not again.docks["SiliconDock"].isVisible()
    assert again.dockWidgetArea(again.docks["ExpertGridDock"]) == experts_area
    assert again.state.layer == 49 and again.scene.layer0 == 49
    restored = again.scene.camera_state()
    for key, value in camera.items():
        assert np.allclose(restored[key], value), key
    qtbot.waitUntil(lambda: again.state.trace is not None, timeout=90000)
    assert again.state.trace.knobs.temperature == 0.5


def test_saved_position_off_every_screen_is_ignored(make_window, qtbot, tmp_path):
    win = make_window("offscreen.ini", wait_trace=False)
    win.move(20000, 20000)
    win.settings.save_window(win)
    win.settings.sync()
    win.close()
    again = make_window("offscreen.ini", wait_trace=False)
    screen = QApplication.primaryScreen().availableGeometry()
    assert screen.intersects(again.frameGeometry())


def test_settings_from_another_version_are_ignored(make_window, tmp_path):
    s = Settings(str(tmp_path / "old.ini"))
    s.q.setValue("version", 999)
    s.q.setValue("layer", 5)
    s.q.setValue("knobs/temperature", 1.7)
    s.sync()
    win = make_window("old.ini", wait_trace=False)
    assert win.state.layer == 36 and win.state.knobs.temperature == 1.0


def test_reset_layout_brings_docks_back(main_window, qtbot):
    win = main_window
    player = win.docks["TracePlayerDock"]
    left = win.dockWidgetArea(player)
    win.removeDockWidget(player)
    win.addDockWidget(Qt.RightDockWidgetArea, player)
    win.docks["ControlsDock"].close()
    win.registry.actions["reset_layout"].trigger()
    assert win.dockWidgetArea(player) == left
    closed = [name for name, d in win.docks.items() if d.isHidden() or not d.toggleViewAction().isChecked()]
    assert closed == []  # every panel is open again (a covered tab counts as open, a closed one does not)
    assert win.docks["ControlsDock"].isVisible()


def test_no_duplicate_shortcuts_anywhere(main_window, qtbot):
    assert duplicate_shortcuts() == {}
    # the check itself catches a clash
    clash = (ActionSpec("a", "file", "Ctrl+S"), ActionSpec("b", "view", "ctrl+s"))
    assert duplicate_shortcuts(clash) == {"Ctrl+S": ["a", "b"]}
    win = main_window
    seen = {}
    from PySide6.QtGui import QAction, QKeySequence

    for action in win.findChildren(QAction):
        for seq in action.shortcuts():
            key = seq.toString(QKeySequence.PortableText)
            assert key not in seen, f"{key} bound to {seen.get(key)} and {action.objectName()}"
            seen[key] = action.objectName() or action.text()


def test_shortcuts_dialog_is_generated_from_the_registry(main_window, qtbot):
    win = main_window
    QTest.keyClick(win.scene.gl, Qt.Key_F1)
    qtbot.waitUntil(lambda: win.findChild(QDialogType(), "shortcuts_dialog") is not None, timeout=3000)
    dialog = win.findChild(QDialogType(), "shortcuts_dialog")
    assert dialog is not None and dialog.isVisible()
    table = dialog.table
    with_keys = [s for s in ACTIONS if s.shortcut]
    from app.window.actions import key_rows

    assert table.rowCount() == len(with_keys) + len(key_rows())  # + the prompt's keys and Esc
    keys = {table.item(r, 2).text() for r in range(table.rowCount())}
    assert {"Space", "Ctrl+S", "Home", "End", "Left", "Right"} <= keys
    dialog.close()


def QDialogType():
    from PySide6.QtWidgets import QDialog

    return QDialog


def test_switching_to_korean_changes_menu_texts_without_restart(main_window, qtbot):
    win = main_window
    titles_en = [m.title() for m in win.registry.menus.values()]
    assert titles_en[0] == "&File"
    win.registry.menus["language"].actions()[1].trigger()  # 한국어
    assert i18n.language() == "ko"
    titles_ko = [m.title() for m in win.registry.menus.values()]
    assert titles_ko[0] == "파일(&F)"
    assert all(a != b for a, b in zip(titles_en, titles_ko))
    assert win.docks["TracePlayerDock"].windowTitle() == "트레이스 재생기"
    assert win.docks["TracePlayerDock"].run_button.text() == "실행"
    assert win.status.layer_label.text().startswith("37 / 93층")
    win.registry.actions["lang_en"].trigger()
    assert [m.title() for m in win.registry.menus.values()] == titles_en


def test_layer_keys_and_status_follow_the_layer(main_window, qtbot):
    win = main_window
    win.scene.gl.setFocus()
    QTest.keyClick(win.scene.gl, Qt.Key_PageDown)
    assert win.state.layer == 35 and win.scene.layer0 == 35
    assert win.status.layer_label.text() == "Layer 36 / 93 · Gated MLA + MoE"


def test_reset_returns_alpha_to_computed(main_window, qtbot):
    win = main_window
    controls = win.docks["ControlsDock"]
    row = controls.rows["alpha"]
    row.slider.setValue(row.spec.to_slider(0.4))
    qtbot.waitUntil(lambda: win.state.trace.knobs.alpha == 0.4, timeout=60000)
    qtbot.mouseClick(row.reset, Qt.LeftButton)
    assert win.state.knobs.alpha is None and row.value.text() == "computed" and not row.reset.isEnabled()
    qtbot.waitUntil(lambda: win.state.trace.knobs.alpha is None, timeout=60000)
    wait_idle(qtbot, win)


def test_temperature_zero_samples_greedily(main_window, qtbot):
    win = main_window
    row = win.docks["ControlsDock"].rows["temperature"]
    drag_slider(row.slider, -row.slider.width())  # all the way left: T = 0
    assert win.state.knobs.temperature == 0.0 and row.value.text() == "0.00"
    qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 0.0, timeout=60000)
    wait_idle(qtbot, win)
    trace = win.state.trace
    for p in trace.passes:  # greedy: each pass takes the largest logit at its last position
        assert int(p.final["sampled"]) == int(np.argmax(p.final["lm_head"][-1]))
    qtbot.mouseClick(row.reset, Qt.LeftButton)
    qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 1.0, timeout=60000)
    wait_idle(qtbot, win)


def test_clicking_a_step_in_the_list_moves_the_scene(main_window, qtbot):
    win = main_window
    player = win.docks["TracePlayerDock"]
    item = player.list.item(9)  # 10 MoE routing
    rect = player.list.visualItemRect(item)
    qtbot.mouseClick(player.list.viewport(), Qt.LeftButton, pos=rect.center())
    assert win.state.step == 9 and win.scene.step_kind == "moe"
    assert player.title.text().startswith("10  MoE routing")
    assert "16 of 896" in player.facts.text()
    qtbot.mouseClick(player.first_button, Qt.LeftButton)
    assert win.state.step == 0


def test_language_defaults_to_the_system_locale(make_window, monkeypatch):
    for var in ("LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "ko_KR.UTF-8")
    win = make_window("fresh-ko.ini", language=None, wait_trace=False)
    assert i18n.language() == "ko" and win.registry.menus["file"].title() == "파일(&F)"
    assert win.registry.actions["lang_ko"].isChecked()


def test_the_3d_view_has_a_new_trace_before_any_panel_handles_it(make_window, qtbot, monkeypatch):
    """The render thread starts the new frame while the panels update (the scene used to get the trace
    after the trace player, controls and inspector had run their handlers). A window of its own: the spy must be
    in place before the window connects the player's handler."""
    from app.docks import trace_player

    seen = []
    real = trace_player.TracePlayerDock._on_trace

    def spy(self, trace):
        scene = self.window().scene
        seen.append((scene.trace is trace, scene.gl.version >= scene.trace_version))
        return real(self, trace)

    monkeypatch.setattr(trace_player.TracePlayerDock, "_on_trace", spy)
    win = make_window()
    wait_idle(qtbot, win)
    seen.clear()
    drag_slider(win.docks["ControlsDock"].slider("alpha"), -40, steps=4)
    wait_idle(qtbot, win)
    assert seen and all(has and requested for has, requested in seen)


def test_in_a_drag_the_next_run_waits_for_the_frame_of_the_last_trace(main_window, qtbot):
    """On few cores the engine, the render thread and its rasteriser competed during a drag (the UI
    thread waited for a CPU longer than it ran); the next run now starts once the last trace's frame is on
    screen, or after housekeeping.HOLD_MAX_MS."""
    import time

    from app.engine import housekeeping

    win = main_window
    wait_idle(qtbot, win)
    ctl, scene = win.engine, win.scene
    published, starts = [], []

    def on_published(*_):
        published.append(time.monotonic())

    ctl.trace_published.connect(on_published)
    real = ctl._dispatch

    def dispatch():
        before = ctl._in_flight
        real()
        if ctl._in_flight is not None and ctl._in_flight is not before and published:
            starts.append((scene.gl.shown_version >= scene.trace_version, time.monotonic() - published[-1]))

    ctl._dispatch = dispatch
    try:
        drag_slider(win.docks["ControlsDock"].slider("alpha"), -120, steps=24, pause_ms=8)
        wait_idle(qtbot, win)
    finally:
        del ctl._dispatch
        ctl.trace_published.disconnect(on_published)  # the window is shared with the next tests
    assert len(starts) >= 2
    assert all(shown or waited >= housekeeping.HOLD_MAX_MS / 1000 - 0.01 for shown, waited in starts), starts
