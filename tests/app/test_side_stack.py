"""Issue 41.3: both models' stacks side by side in the 3D view, in a real window with real events.

Ctrl+Alt+B (View -> Side by side (compare)) shows a second GL pane for the Compare dock's other model; its header
names that model and its weights; its trace runs the window's prompt and its lens column and causal route are
that model's own explanation at the window's explained position — recomputed here with a fresh ToyK3 and
compute.explain, not read from app/window/side_stack.py — and the lens column is lit on its rendered frame (pixels).
The page's check box mirrors the action; turning it off hides the pane and the first view keeps working; a view
file with the flag brings it back; the setting is remembered; a model switch K3 -> Kimi Linear -> K3 keeps
working with the pane open. Screenshots at 1920x1080 and 1280x720, English and Korean, go to
$TMPDIR/k3_side_stack for a person to look at."""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from app import i18n
from compute import weights as wio
from scene import camera as camlib
from scene.lens_column import STRIP_X
from tests.app.gui_helpers import image_array, pump, wait_idle

SHOTS = os.path.join(tempfile.gettempdir(), "k3_side_stack")
OTHER = "kimi-linear-48b"  # the compared model: 27 layers, quick


def press_toggle(qtbot, win) -> None:
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow)
    qtbot.keyClick(win, Qt.Key_B, Qt.ControlModifier | Qt.AltModifier)


def pick(win, a: str, b: str) -> None:
    dock = win.docks["CompareDock"]
    dock.pick_a.setCurrentIndex(dock.pick_a.findData(a))
    dock.pick_b.setCurrentIndex(dock.pick_b.findData(b))


def settled(win, model: str) -> bool:
    side = win.side
    scene = side.pane.scene
    return (not side.busy() and side.result is not None and side.trace is not None
            and side.config.name == model and scene is not None and scene.explanation is not None
            and not scene.explanation.computing and side.trace.text == win.state.trace.text)


def wait_side(qtbot, win, model: str = OTHER, timeout: int = 300_000) -> None:
    qtbot.waitUntil(lambda: settled(win, model), timeout=timeout)


def own(model: str, win):
    """The compared model's own trace and explanation, made here (a fresh engine, compute.explain)."""
    from compute.engine import ToyK3
    from compute.explain import Explanation
    from compute.model_defaults import config_named
    from compute.trace import Knobs

    main = win.state.trace
    m = ToyK3(config_named(model), device="cpu", weights=main.weights_name)
    trace = m.run(main.text, len(main.tokens) - main.prompt_len, main.knobs)
    k = main.knobs
    ex = Explanation(m, list(trace.tokens), trace.prompt_len - 1,
                     knobs=Knobs(alpha=k.alpha, beta=k.beta, temperature=0.0))
    return m, trace, ex


def strip_brightness(scene, layer: int) -> np.ndarray:
    """The mean colour of the lens strip's box of `layer` (0: the embedding) on the view's rendered frame."""
    w, h = scene.gl.width(), scene.gl.height()
    img = image_array(scene.render_image(w, h, transparent=False))[..., :3].astype(int)
    b = scene.layout.by_id["embedding" if layer == 0 else f"L{layer}/stack.layer"]
    (x, y), = camlib.project(np.asarray((STRIP_X, b.lo[1] + 0.2 - 0.17, b.center[2]), float)[None], scene.cam, w, h)[0]
    x, y = int(round(x)), int(round(y))
    return img[y - 1:y + 2, x - 1:x + 2].reshape(-1, 3).mean(0)


def route_on(qtbot, win) -> None:
    """The Explain dock's "Causal route" box ticked with the mouse (the lens column is on by default)."""
    from tests.app.test_explain_dock import open_page

    dock = win.docks["ExplainDock"]
    win.show_dock("ExplainDock")
    open_page(dock, "route")
    box = dock.show3d.route
    if not box.isChecked():
        qtbot.waitUntil(box.isVisible, timeout=5000)
        qtbot.mouseClick(box, Qt.LeftButton, pos=QPoint(8, box.height() // 2))
    assert box.isChecked() and dock.show3d.route_kind() == "causal"


def test_shortcut_shows_the_other_models_own_stack(make_window, qtbot):
    win = make_window()
    win.resize(1920, 1080)
    wait_idle(qtbot, win)
    assert not win.side.on and not win.side.pane.isVisible() and win.side.pane.scene is None  # off: nothing made
    pick(win, "kimi-k3", OTHER)
    route_on(qtbot, win)
    press_toggle(qtbot, win)
    assert win.side.on and win.registry.actions["side_by_side"].isChecked()
    assert win.docks["CompareDock"].runs.stacks_box.isChecked()  # the page's box mirrors the action
    wait_side(qtbot, win)
    side, scene = win.side, win.side.pane.scene
    assert scene.gl.isVisible() and win.scene.gl.isVisible()  # two GL panes on screen, side by side
    assert scene.gl.mapToGlobal(scene.gl.rect().topLeft()).x() >= \
        win.scene.gl.mapToGlobal(win.scene.gl.rect().topRight()).x()
    assert scene.layout.dims.n_layers == 27 and win.scene.layout.dims.n_layers == 93
    m, trace, ex = own(OTHER, win)
    trained = wio.shipped_toy(OTHER) is not None
    head = side.pane.header.text()
    assert head.startswith("Kimi Linear 48B") and ("trained toy" in head) == trained == (m.weights_name == "trained")
    assert ("RANDOM WEIGHTS" in head) != trained
    assert win.side.main_header.text().startswith("Kimi K3")
    # its numbers are the model's own explanation of its own trace on the window's prompt
    assert [p for p, _ in side.trace.tokens] == [p for p, _ in trace.tokens]
    ov = scene.explanation
    word = ex.word
    assert ov.word == word and ov.position == trace.prompt_len - 1
    assert np.allclose([e[4] for e in ov.lens], ex.lens_prob(word), atol=1e-6)
    assert [e[3] for e in ov.lens][-1] == 1 and len(ov.lens) == 28
    assert side.result.prob == pytest.approx(float(ex.probs[ex.index_of(word)]), abs=1e-6)
    route = ex.causal_route(0.3)
    assert set(ov.route_set) == {(int(ly), str(pt)) for ly, pt, _e in route}
    assert ov.lanes and len(ov.lanes) == 28  # the causal route's patching lanes, one row per residual
    # the lens column is lit on the second pane's frame: bright at the answer's layer, dark where the lens has it
    # least
    probs = [e[4] for e in ov.lens]
    least = int(np.argmin(probs))
    assert probs[-1] > 0.3 and probs[least] < 0.05
    top, low = strip_brightness(scene, 27), strip_brightness(scene, least)
    assert top.sum() > low.sum() + 150 and top[0] > top[2] + 80, (top, low)
    status = side.pane.status.text()
    assert f"→ {word.strip()}" in status and "own explanation" in status
    # off with the same key: the pane hides, the first view keeps drawing new traces
    press_toggle(qtbot, win)
    assert not side.on and not side.pane.isVisible() and not win.side.main_header.isVisible()
    assert not win.docks["CompareDock"].runs.stacks_box.isChecked()
    shown = win.scene.gl.paint_count
    win.state.select_layer(10)
    qtbot.waitUntil(lambda: win.scene.gl.paint_count > shown and win.scene.layer0 == 10, timeout=20000)
    # the page's box turns it on again (a click), the cached stack comes back at once
    box = win.docks["CompareDock"].runs.stacks_box
    win.show_dock("CompareDock")
    win.docks["CompareDock"].tabs.setCurrentIndex(1)
    qtbot.waitUntil(box.isVisible, timeout=5000)
    qtbot.mouseClick(box, Qt.LeftButton, pos=box.rect().center())
    assert side.on and win.registry.actions["side_by_side"].isChecked() and side.pane.isVisible()
    wait_side(qtbot, win)
    assert scene.layer0 == 10  # the window's layer 11 (0-based 10); Kimi Linear has it


def test_prompt_follows_and_a_model_switch_keeps_working(make_window, qtbot):
    win = make_window(explain=False)  # it never reads the explanation
    wait_idle(qtbot, win)
    pick(win, "kimi-k3", OTHER)
    press_toggle(qtbot, win)
    wait_side(qtbot, win)
    first = win.side.trace.text
    # a new prompt in the window: the second stack follows it
    win.state.request_prompt("고양이가 공을 집었다. 그리고")
    qtbot.waitUntil(lambda: win.state.trace.text == "고양이가 공을 집었다. 그리고", timeout=120_000)
    wait_side(qtbot, win)
    assert win.side.trace.text != first
    # the window switches to Kimi Linear: the pane shows the other pick, K3
    win.models.model_actions[OTHER].trigger()
    qtbot.waitUntil(lambda: win.config.name == OTHER and win.state.trace is not None
                    and win.state.trace.config_name == OTHER, timeout=180_000)
    wait_side(qtbot, win, "kimi-k3")
    assert win.side.pane.header.text().startswith("Kimi K3")
    assert win.side.main_header.text().startswith("Kimi Linear 48B")
    assert win.side.pane.scene.layout.dims.n_layers == 93
    win.models.model_actions["kimi-k3"].trigger()
    qtbot.waitUntil(lambda: win.config.name == "kimi-k3" and win.state.trace.config_name == "kimi-k3",
                    timeout=180_000)
    wait_side(qtbot, win, OTHER)
    assert win.state.layer == 36 and win.side.pane.scene.layout.dims.n_layers == 27
    assert win.side.pane.scene.gl.isVisible() and win.scene.gl.isVisible()


def test_view_file_and_settings_keep_the_flag(make_window, qtbot, tmp_path):
    from app.files.viewfile import load

    win = make_window("a.ini", explain=False)
    wait_idle(qtbot, win)
    pick(win, "kimi-k3", OTHER)
    press_toggle(qtbot, win)
    path = str(tmp_path / "two.k3view")
    assert win.views.save_to(path)
    assert load(path).compare["stacks"] is True
    press_toggle(qtbot, win)
    assert not win.side.on
    win.views.open_path(path)
    qtbot.waitUntil(lambda: win.side.on, timeout=60_000)
    assert win.registry.actions["side_by_side"].isChecked()
    win.close()
    # remembered in the settings: the next start opens with both stacks
    again = make_window("a.ini", explain=False)
    assert again.side.on and again.side.pane.isVisible()
    wait_side(qtbot, again, "deepseek-v3")  # the Compare dock's default picks (K3, DeepSeek-V3): the other one
    assert again.side.pane.header.text().startswith("DeepSeek-V3")


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_screenshots_with_both_stacks(make_window, qtbot, size, language):
    win = make_window(language=language)
    win.resize(*size)
    wait_idle(qtbot, win)
    pick(win, "kimi-k3", OTHER)
    press_toggle(qtbot, win)
    wait_side(qtbot, win)
    pump(800)
    side = win.side
    for label in (side.pane.header, side.pane.status, side.main_header):
        assert label.isVisible() and label.width() > 100
    assert side.pane.scene.gl.width() > 250 and win.scene.gl.width() > 250
    os.makedirs(SHOTS, exist_ok=True)
    win.grab().save(os.path.join(SHOTS, f"side_{size[0]}x{size[1]}_{language}.png"))
    if language == "ko":
        assert "학습된 토이" in side.pane.header.text() or "무작위" in side.pane.header.text()


def test_a_failed_run_is_one_line_and_the_window_keeps_working(make_window, qtbot, monkeypatch):
    import app.window.side_stack as side_stack

    win = make_window(explain=False)  # it never reads the explanation
    wait_idle(qtbot, win)
    pick(win, "kimi-k3", OTHER)

    def refuse(config, weights):
        raise MemoryError(f"cannot build {config.name}\nsecond line")

    monkeypatch.setattr(side_stack, "trace_engine", refuse)
    press_toggle(qtbot, win)
    qtbot.waitUntil(lambda: bool(win.side.error) and not win.side.busy(), timeout=60_000)
    status = win.side.pane.status.text()
    assert status == "Could not run Kimi Linear 48B: MemoryError: cannot build kimi-linear-48b"
    assert win.side.pane.scene is None  # nothing was drawn from a failed run
    # the window's own stack keeps working, and the next request (a new prompt) runs again
    monkeypatch.undo()
    win.state.request_prompt("고양이가 공을 집었다. 그리고")
    qtbot.waitUntil(lambda: win.state.trace.text == "고양이가 공을 집었다. 그리고", timeout=120_000)
    wait_side(qtbot, win)
    assert "Could not" not in win.side.pane.status.text()


def test_link_cameras_turns_the_second_view_with_the_first(make_window, qtbot):
    win = make_window(explain=False)  # it never reads the explanation
    wait_idle(qtbot, win)
    pick(win, "kimi-k3", OTHER)
    press_toggle(qtbot, win)
    wait_side(qtbot, win)
    side = win.side.pane.scene
    before = side.camera_state()
    qtbot.keyClick(win, Qt.Key_2, Qt.ControlModifier)  # View -> Side: only the window's view turns (not linked)
    qtbot.waitUntil(lambda: win.scene.camera.path is None and win.scene.cam.azimuth != before["azimuth"],
                    timeout=20_000)
    pump(300)
    assert side.camera_state() == before
    link = win.side.pane.link
    assert link.text() == "Link cameras" and not link.isChecked()
    qtbot.mouseClick(link, Qt.LeftButton, pos=QPoint(8, link.height() // 2))
    assert link.isChecked()
    qtbot.waitUntil(lambda: (side.cam.azimuth, side.cam.elevation) == (win.scene.cam.azimuth, win.scene.cam.elevation),
                    timeout=20_000)
    assert side.cam.distance == before["distance"]  # its own framing: only the angles follow
    qtbot.keyClick(win, Qt.Key_3, Qt.ControlModifier)  # View -> Top: the linked view follows
    qtbot.waitUntil(lambda: win.scene.camera.path is None, timeout=20_000)
    qtbot.waitUntil(lambda: (side.cam.azimuth, side.cam.elevation) == (win.scene.cam.azimuth, win.scene.cam.elevation),
                    timeout=20_000)


@pytest.mark.parametrize("value", ["yes", 1, None, [True]])
def test_a_bad_stacks_flag_is_one_view_error_naming_it(value):
    import json

    from app.files.viewfile import ViewError, loads

    doc = {"format": "k3-explorer-view", "version": "1.4", "model": "kimi-k3", "prompt": "로봇이 컵을 집었다",
           "compare": {"models": ["kimi-k3", OTHER], "prompt": None, "stacks": value}}
    with pytest.raises(ViewError) as err:
        loads(json.dumps(doc))
    assert "compare.stacks" in str(err.value) and "true or false" in str(err.value)
    doc["compare"].pop("stacks")  # a 1.3 file written before the flag: no side by side
    assert "stacks" not in loads(json.dumps(doc)).compare
    doc["compare"]["stacks"] = True
    assert loads(json.dumps(doc)).compare["stacks"] is True
