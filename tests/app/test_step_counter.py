"""An honest step counter and layer: "Step 18 of 33 · stage 12 of 17 · decode token 2" (trace
step, pipeline stage, decode round), the same in the status bar, in both languages; playing never changes the
chosen layer, and a step whose values come from another layer says so."""
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app import i18n

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def _facts(win) -> str:
    return win.docks["TracePlayerDock"].facts.text()


def test_counter_names_the_trace_step_the_pipeline_stage_and_the_decode_round(main_window, qtbot):
    win = main_window
    dock, player = win.docks["TracePlayerDock"], win.state.player
    n = len(player.steps)
    try:
        player.seek(0)
        assert dock.counter.text() == f"Step 1 of {n} · stage 1 of 17 · prefill"
        assert win.status.step_label.text().startswith(f"Step 1 of {n} · stage 1 of 17 · prefill · ")
        first_decode = next(s.index for s in player.steps if s.kind == "decode")
        player.seek(first_decode)
        k = first_decode + 1
        assert dock.counter.text() == f"Step {k} of {n} · stage 16 of 17 · decode token 2"
        player.seek(first_decode + 2)  # the decode round's LM head
        assert dock.counter.text() == f"Step {k + 2} of {n} · stage 12 of 17 · decode token 2"
        assert f"Step {k + 2} of {n} · stage 12 of 17 · decode token 2 · " in win.status.step_label.text()
        win.registry.actions["lang_ko"].trigger()
        assert dock.counter.text() == f"{n}단계 중 {k + 2}단계 · 파이프라인 17단계 중 12 · 디코드 토큰 2"
        assert win.status.step_label.text().startswith(f"{n}단계 중 {k + 2}단계 · 파이프라인 17단계 중 12 · 디코드 토큰 2 · ")
    finally:
        i18n.set_language("en")
        player.seek(0)


def test_playing_through_every_step_never_changes_the_layer(main_window, qtbot):
    win = main_window
    player = win.state.player
    moved = []
    win.state.layer_changed.connect(moved.append)
    try:
        for chosen in (36, 35):  # 1-based 37 is KDA, 36 is MLA
            win.state.select_layer(chosen)
            moved.clear()
            player.seek(0)
            win.scene.gl.setFocus()
            notes = {}
            for _ in range(len(player.steps) - 1):
                QTest.keyClick(win.scene.gl, Qt.Key_Right)  # what playing does, one step at a time
                step = player.current()
                notes[step.kind] = "(the one you chose, still shown)" in _facts(win)
            assert win.state.step == len(player.steps) - 1
            assert moved == [] and win.state.layer == chosen and win.scene.layer0 == chosen
            noted = {kind for kind, said in notes.items() if said}
            if chosen == 36:  # a KDA + MoE layer: only the MLA cache step's values are another layer's
                assert noted == {"mla_cache"}
            else:  # an MLA layer: the KDA state step says where its values come from
                assert noted == {"kda_state"}
                player.seek(next(s.index for s in player.steps if s.kind == "kda_state"))
                assert "Layer 36 (the one you chose, still shown) has no KDA: these values are from layer 35" \
                    in _facts(win)
    finally:
        win.state.layer_changed.disconnect(moved.append)
        win.state.select_layer(36)
        player.seek(0)


def test_the_timer_plays_and_leaves_the_layer(main_window, qtbot):
    win = main_window
    player = win.state.player
    win.state.select_layer(35)
    try:
        player.set_speed(4.0)
        player.play()
        qtbot.waitUntil(lambda: win.state.step >= 8, timeout=15000)  # past kda_state and mla_cache
        player.pause()
        assert win.state.layer == 35
    finally:
        player.pause()
        player.set_speed(1.0)
        win.state.select_layer(36)
        player.seek(0)


def test_reopening_restores_the_step_with_its_camera(make_window, qtbot):
    win = make_window("restore.ini")
    moe = next(s.index for s in win.state.player.steps if s.kind == "moe")
    win.state.player.seek(moe)
    qtbot.waitUntil(lambda: win.scene.camera.path is None, timeout=5000)  # the camera framed the MoE step
    camera = win.scene.camera_state()
    win.close()

    again = make_window("restore.ini")
    assert again.state.step == moe and again.state.player.current().kind == "moe"
    n = len(again.state.player.steps)
    assert again.docks["TracePlayerDock"].counter.text() == f"Step {moe + 1} of {n} · stage 10 of 17 · prefill"
    assert again.scene.step_kind == "moe"
    QApplication.processEvents()  # what the start posted has run
    assert again.scene.camera.path is None  # no camera animation follows the restored step
    got = again.scene.camera_state()
    assert all(abs(float(got[k]) - float(camera[k])) < 1e-6 for k in ("distance", "azimuth", "elevation"))
