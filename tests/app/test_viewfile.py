"""View files (*.k3view): round trip, and untrusted input refused with one line naming the field."""
import json
import math

import pytest

from app.files import viewfile
from app.files.viewfile import View, ViewError
from compute.trace import Knobs


def _doc(**changes):
    doc = View().to_dict()
    doc.update(changes)
    return doc


def _load(tmp_path, doc, name="v.k3view"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return viewfile.load(path)


def test_round_trip_keeps_every_field(tmp_path):
    view = View(model="kimi-k3", weights="random", prompt="The robot 컵", tokens=7,
                knobs=Knobs(alpha=0.25, beta=None, temperature=0.5, top_p=0.9, expert_bias={17: 2.5, 3: -1.0},
                            sample_seed=42),
                layer=12, step=20, camera={"distance": 80.5, "azimuth": -30.0, "elevation": 22.0, "fov": 38.0,
                                           "center": [1.0, -2.0, 30.0]},
                block="L12/kda.state", cell=(1, 3), expert=17, language="ko", size=(1600, 900))
    path = viewfile.save(view, tmp_path / "a.k3view")
    again = viewfile.load(path)
    assert again == view
    assert json.loads(open(path, encoding="utf-8").read())["version"] == "1.4"
    assert again.to_json() == view.to_json()


def test_unknown_keys_are_ignored_with_a_note(tmp_path):
    doc = _doc(version="1.5", future_feature={"x": 1})
    doc["knobs"]["new_knob"] = 3
    view = _load(tmp_path, doc)
    assert view.layer == 37
    assert any("future_feature" in n for n in view.notes) and any("knobs.new_knob" in n for n in view.notes)
    many = _doc(**{f"k{i}": i for i in range(500)})
    assert len(_load(tmp_path, many).notes) <= viewfile.MAX_NOTES + 1


def test_newer_major_version_is_refused_clearly(tmp_path):
    with pytest.raises(ViewError) as err:
        _load(tmp_path, _doc(version="2.0"))
    assert err.value.kind == "version" and "newer K3 Explorer" in str(err.value) and "2.0" in str(err.value)


@pytest.mark.parametrize("doc, field", [
    (_doc(layer=94), "layer"), (_doc(layer=0), "layer"), (_doc(layer="37"), "layer"), (_doc(layer=True), "layer"),
    (_doc(step=10 ** 6), "step"), (_doc(tokens=65), "tokens"), (_doc(model="../../etc/passwd"), "model"),
    (_doc(weights="pickle"), "weights"), (_doc(language="fr"), "language"), (_doc(prompt=""), "prompt"),
    (_doc(prompt="\udc80abc"), "prompt"), (_doc(prompt="가" * 300), "prompt"), (_doc(size=[0, 10]), "size"),
    (_doc(size=[9000, 10]), "size"), (_doc(camera={"distance": 1}), "camera.azimuth"),
    (_doc(camera="front"), "camera"), (_doc(selection={"block": "<script>"}), "selection.block"),
    (_doc(selection={"cell": [1]}), "selection.cell"), (_doc(knobs={"temperature": -1}), "knobs.temperature"),
    (_doc(knobs={"top_p": 0}), "knobs.top_p"), (_doc(knobs={"alpha": 2}), "knobs.alpha"),
    (_doc(knobs={"expert_bias": {"x": 1}}), "knobs.expert_bias"),
    (_doc(knobs={"expert_bias": {"3": 1e300}}), "knobs.expert_bias.3"), (_doc(knobs=[1]), "knobs"),
    (_doc(version=1), "version"),
])
def test_bad_fields_name_the_field(tmp_path, doc, field):
    with pytest.raises(ViewError) as err:
        _load(tmp_path, doc)
    assert err.value.kind == "field" and err.value.field == field
    assert "\n" not in str(err.value) and str(tmp_path) in str(err.value)


@pytest.mark.parametrize("text", [
    "", "not json", "[1, 2]", '{"format": "something else"}', '{"format": "k3-explorer-view", "x": ' + "[" * 5000
    + "]" * 5000 + "}", '{"format": "k3-explorer-view", "layer": NaN}', '{"format": "k3-explorer-view", "layer": '
    + "9" * 400 + "}", '{"format": "k3-explorer-view", "a": [[[[[[[[[[1]]]]]]]]]]}',
    '{"__class__": "os.system", "format": "k3-explorer-view", "version": "1.0", "!!python/object": 1}',
])
def test_not_a_view_is_refused(tmp_path, text):
    with pytest.raises(ViewError) as err:
        _load(tmp_path, text)
    assert "\n" not in str(err.value)


def test_size_limit_unreadable_and_binary(tmp_path):
    big = tmp_path / "big.k3view"
    big.write_bytes(b" " * (viewfile.MAX_BYTES + 1))
    with pytest.raises(ViewError, match="larger than"):
        viewfile.load(big)
    with pytest.raises(ViewError) as err:
        viewfile.load(tmp_path / "missing.k3view")
    assert err.value.kind == "read"
    (tmp_path / "bin.k3view").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ViewError, match="UTF-8"):
        viewfile.load(tmp_path / "bin.k3view")


def test_save_is_atomic_and_names_the_cause(tmp_path):
    from app.files import atomic_io

    path = tmp_path / "keep.k3view"
    viewfile.save(View(layer=5), path)
    (tmp_path / "dir.k3view").mkdir()
    with pytest.raises(atomic_io.WriteError) as err:
        viewfile.save(View(), tmp_path / "dir.k3view")
    assert err.value.kind == "is_dir"
    assert viewfile.load(path).layer == 5
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_limits_match_the_engine():
    from app import player
    from compute import engine

    assert viewfile.MAX_PROMPT_TOKENS == engine.MAX_PROMPT_TOKENS
    assert viewfile.MAX_NEW_TOKENS == engine.MAX_NEW_TOKENS
    assert viewfile.MAX_STEP == len(player.PREFILL_KINDS) + len(player.DECODE_KINDS) * (engine.MAX_NEW_TOKENS - 1)
    assert math.isfinite(viewfile.MAX_EXPERT_BIAS)


def test_viewfile_is_qt_free():
    import subprocess
    import sys

    code = "import sys, app.files.viewfile; sys.exit(any(m.startswith(('PySide6', 'torch', 'scene')) for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# ------------------------------------------------------------------------------------------ in the window


def _menu_action(menu, text):
    from app.window.actions import plain

    for action in menu.actions():
        if plain(action.text()) == text:
            return action
    raise AssertionError(f"no menu item {text!r} in {[a.text() for a in menu.actions()]}")


def _open_from_recent(qtbot, win, path):
    """File -> Recent views -> the file's name, through the real menus."""
    import os

    menu = win.views.menu
    menu.aboutToShow.emit()
    action = _menu_action(menu, os.path.basename(path))
    action.trigger()


def _same_camera(a, b):
    flat = lambda c: [c["distance"], c["azimuth"], c["elevation"], c["fov"], *c["center"]]  # noqa: E731
    return flat(a) == pytest.approx(flat(b))


def test_save_view_then_open_it_restores_the_view(main_window, qtbot, tmp_path, monkeypatch):
    from tests.app.gui_helpers import wait_idle

    win = main_window
    player = win.docks["TracePlayerDock"]
    path = str(tmp_path / "talk")
    monkeypatch.setattr("app.window.view_menu.QFileDialog.getSaveFileName", lambda *a, **k: (path, ""))
    player.seek(9)
    win.state.select_layer(40)
    win.state.select_block("L41/kda.state")
    win.state.select_cell("L41/kda.state", 1, 2)
    win.scene.set_camera_preset("side", animate=False)
    win.state.request_knobs(temperature=0.5)
    qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 0.5, timeout=90000)
    wait_idle(qtbot, win)
    camera = win.scene.camera_state()
    win.registry.actions["save_view"].trigger()  # File -> Save view… (the dialog answers `path`)
    saved = viewfile.load(path + ".k3view")
    assert (saved.layer, saved.step, saved.block, saved.knobs.temperature) == (41, 10, "L41/kda.state", 0.5)
    assert saved.cell == (1, 2)
    assert _same_camera(saved.camera, camera) and saved.size == win.scene_pixel_size()
    assert "talk.k3view" in win.statusBar().currentMessage()

    player.seek(2)
    win.state.select_layer(3)
    win.state.select_block("L4/kda.q_proj")
    win.scene.set_camera_preset("top", animate=False)
    win.state.request_knobs(temperature=1.0)
    qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 1.0, timeout=90000)
    wait_idle(qtbot, win)
    _open_from_recent(qtbot, win, path + ".k3view")
    qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 0.5 and win.state.step == 9, timeout=90000)
    assert win.state.layer == 40 and win.scene.selected == "L41/kda.state"
    assert win.state.cell == ("L41/kda.state", 1, 2)
    assert _same_camera(win.scene.camera_state(), camera)
    assert win.docks["ControlsDock"].slider("temperature") is not None
    assert win.settings.recent_views()[0].endswith("talk.k3view")


def test_a_bad_or_newer_view_changes_nothing(make_window, qtbot, tmp_path):
    win = make_window(explain=False)
    before = (win.state.layer, win.state.step, win.state.knobs, win.scene.camera_state(), win.state.trace,
              win.config.name)
    newer = tmp_path / "newer.k3view"
    newer.write_text(json.dumps(_doc(version="3.1", layer=5)), encoding="utf-8")
    bad = tmp_path / "bad.k3view"
    bad.write_text(json.dumps(_doc(layer=5, knobs={"temperature": "os.system('x')"})), encoding="utf-8")
    unknown = tmp_path / "unknown.k3view"
    unknown.write_text(json.dumps(_doc(model="my-model", layer=5)), encoding="utf-8")
    shown = []
    for path in (newer, bad, unknown):
        assert win.views.open_path(str(path)) is False
        box = win.views.message_box
        assert box.isVisible()  # window-modal, not blocking
        shown.append(box.text())
        box.close()
    assert "newer K3 Explorer" in shown[0] and "3.1" in shown[0]
    assert "knobs.temperature" in shown[1]
    assert "model" in shown[2] and "kimi-k3" in shown[2]
    assert all("\n" not in text for text in shown)
    assert (win.state.layer, win.state.step, win.state.knobs, win.scene.camera_state(), win.state.trace,
            win.config.name) == before
    assert win.views.pending is None and win.views.recent == []


def test_a_view_of_another_bundled_model_switches_the_model(make_window, qtbot, tmp_path):
    win = make_window(explain=False)
    path = tmp_path / "k2.k3view"
    viewfile.save(View(model="kimi-k2", prompt="The robot", tokens=2, layer=30, step=3), path)
    assert win.views.open_path(str(path))
    qtbot.waitUntil(lambda: win.config.name == "kimi-k2" and win.views.pending is None, timeout=120000)
    trace = win.state.trace
    assert trace.config_name == "kimi-k2" and trace.text == "The robot"
    assert win.state.layer == 29 and win.state.step == 2


def test_open_and_save_view_are_in_the_file_menu_with_free_shortcuts(main_window):
    from app.window.actions import duplicate_shortcuts

    win = main_window
    titles = [a.text() for a in win.registry.menus["file"].actions()]
    assert titles[:3] == ["Open view…", "Save view…", "Recent views"]
    assert win.registry.actions["open_view"].shortcut().toString() == "Ctrl+O"
    assert duplicate_shortcuts() == {}
    from app import i18n

    i18n.set_language("ko")
    assert win.views.menu.title() == "최근 보기"
    i18n.set_language("en")


def test_command_line_refuses_a_bad_view_file_before_any_window(tmp_path, capsys):
    from app.__main__ import main

    bad = tmp_path / "bad.k3view"
    bad.write_text(json.dumps(_doc(version="9.0")), encoding="utf-8")
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "newer K3 Explorer" in err[0]


def test_cli_renders_the_saved_view_like_the_window_export(make_window, qtbot, tmp_path):
    """The acceptance test of view files: File -> Save view in the window, `k3-explorer export --view` renders
    the same picture as File -> Export image at that size."""
    from app import cli
    from app.export.image import ExportChoice, perform
    from PySide6.QtGui import QImage
    from tests.app.gui_helpers import changed_fraction, image_array, wait_idle

    win = make_window()
    win.docks["TracePlayerDock"].seek(7)
    win.state.select_layer(36)
    win.state.select_block("L37/kda.state")
    win.state.select_expert(17)
    win.scene.set_camera_preset("front", animate=False)
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: win.scene.camera.path is None, timeout=5000)  # no camera move under way
    view_path = str(tmp_path / "same.k3view")
    assert win.views.save_to(view_path)
    gui_png = str(tmp_path / "gui.png")
    gui = image_array(perform(ExportChoice("view", 640, 360, False, "file", gui_png), win.scene, win))
    win.close()

    cli_png = str(tmp_path / "cli.png")
    assert cli.main(["--view", view_path, "--size", "640x360", "--out", cli_png]) == 0
    out = image_array(QImage(cli_png))
    assert out.shape == gui.shape == (360, 640, 4)
    assert (out[..., :3].std() > 5)  # a real picture, not a blank frame
    fraction = changed_fraction(gui, out)
    print(f"GUI export vs export --view: {fraction:.5f} of the pixels differ")
    assert fraction < 0.01, fraction


def test_a_view_with_other_weights_rebuilds_the_engine_with_them(make_window, qtbot, tmp_path):
    win = make_window(explain=False)
    running = win.state.trace.weights_name
    other = "random" if running == "trained" else "trained"
    path = tmp_path / "w.k3view"
    viewfile.save(View(weights=other, prompt=win.state.trace.text, layer=37, step=6), path)
    assert win.views.open_path(str(path))
    qtbot.waitUntil(lambda: win.views.pending is None, timeout=120000)
    trace = win.state.trace
    if other == "random" or win.engine.engine.model.weights_note == "":
        assert trace.weights_name == other
    else:  # the trained asset does not fit (or is missing): the engine says so and the status bar too
        assert trace.weights_name == "random" and "weights" in win.statusBar().currentMessage()
    assert win.state.step == 5


def test_a_model_opened_from_a_file_cannot_be_saved_as_a_view(make_window, qtbot, tmp_path):
    from compute.config import available_configs

    win = make_window(explain=False)
    path = tmp_path / "config.json"
    path.write_text(available_configs()["kimi-k2"].read_text())
    assert win.models.open_path(str(path))
    qtbot.waitUntil(lambda: win.config.name == "kimi-k2", timeout=120000)
    out = tmp_path / "k2.k3view"
    assert win.views.save_to(str(out)) is False
    assert not out.exists() and "cannot be saved" in win.views.message_box.text()
    win.views.message_box.close()
    win.models.model_actions["kimi-k2"].trigger()  # the bundled one: saved, and it opens again
    qtbot.waitUntil(lambda: win.views.bundled_model() and win.state.trace.config_name == "kimi-k2", timeout=120000)
    assert win.views.save_to(str(out)) and viewfile.load(out).model == "kimi-k2"


def test_a_view_with_another_token_count_runs_that_many(make_window, qtbot, tmp_path):
    win = make_window(explain=False)
    trace = win.state.trace
    n = len(trace.tokens) - trace.prompt_len
    path = tmp_path / "long.k3view"
    viewfile.save(View(prompt=trace.text, knobs=trace.knobs, weights=trace.weights_name, tokens=n + 3, layer=37,
                       step=6 + 6 * (n + 1)), path)
    assert win.views.open_path(str(path))
    qtbot.waitUntil(lambda: win.views.pending is None, timeout=120000)
    shown = win.state.trace
    assert len(shown.tokens) - shown.prompt_len == n + 3 and win.state.step == 5 + 6 * (n + 1)


def test_recent_views_are_remembered_across_sessions(make_window, qtbot, tmp_path):
    win = make_window(name="recent.ini", wait_trace=False, explain=False)
    path = tmp_path / "remembered.k3view"
    viewfile.save(View(layer=3), path)
    win.views.remember(str(path))
    win.close()
    again = make_window(name="recent.ini", wait_trace=False, explain=False)
    again.views.menu.aboutToShow.emit()
    names = [a.text() for a in again.views.menu.actions()]
    assert names == ["remembered.k3view"] and again.views.menu.actions()[0].toolTip() == str(path)
    path.unlink()  # a recent file that has gone: one message, and it leaves the list
    assert again.views.open_path(str(path)) is False
    again.views.message_box.close()
    again.views.menu.aboutToShow.emit()
    assert [a.text() for a in again.views.menu.actions()] == ["(none yet)"]
    assert not again.views.menu.actions()[0].isEnabled()


# --- knock-outs: an optional, validated "knockouts" key (version 1.1) ---------------------------

def _view_doc(**extra):
    from app.files import viewfile as vf
    d = vf.View().to_dict()
    d.update(extra)
    return d


def test_knockouts_round_trip_and_older_files_load_without_them(tmp_path):
    from app.files import viewfile as vf
    ko = {"mode": "mean", "tokens": [0, 2], "blocks": [[37, "mixer"]], "experts": [[None, 5]]}
    v = vf.View.from_dict(_view_doc(knockouts=ko))
    assert v.knockouts == ko
    path = vf.save(v, str(tmp_path / "k.k3view"))
    assert vf.load(path).knockouts == ko
    old = _view_doc(version="1.0")
    assert vf.View.from_dict(old).knockouts is None
    assert "knockouts" not in vf.View().to_dict()


@pytest.mark.parametrize("ko, field", [
    ("zero", "knockouts"),
    ({"mode": "half"}, "knockouts.mode"),
    ({"tokens": "0"}, "knockouts.tokens"),
    ({"tokens": list(range(10 ** 6))}, "knockouts.tokens"),
    ({"tokens": [1.5]}, "knockouts.tokens[0]"),
    ({"tokens": [300]}, "knockouts.tokens[0]"),
    ({"blocks": [[94, "mixer"]]}, "knockouts.blocks[0][0]"),
    ({"blocks": [[3, "attn"]]}, "knockouts.blocks[0][1]"),
    ({"blocks": [3]}, "knockouts.blocks[0]"),
    ({"experts": [[None, 10 ** 6]]}, "knockouts.experts[0][1]"),
    ({"experts": [[None, True]]}, "knockouts.experts[0][1]"),
    ({"rm": 1}, "knockouts"),
])
def test_a_hostile_knockouts_field_is_refused_naming_the_field(ko, field):
    from app.files import viewfile as vf
    with pytest.raises(vf.ViewError) as err:
        vf.View.from_dict(_view_doc(knockouts=ko))
    assert field in str(err.value)


# --- the 3D explanation: an optional, validated "explain3d" key (version 1.2) ---------------------------

def test_explain3d_round_trips_and_is_checked(tmp_path):
    from app.files import viewfile as vf
    e = {"lens": True, "arcs": False, "route": True, "route_threshold": 55, "position": 3}
    v = vf.View.from_dict(_view_doc(explain3d=e))
    assert v.explain3d == e
    assert vf.load(vf.save(v, str(tmp_path / "e.k3view"))).explain3d == e
    assert vf.View.from_dict(_view_doc(version="1.1")).explain3d is None and "explain3d" not in vf.View().to_dict()
    assert vf.View.from_dict(_view_doc(explain3d={"lens": True})).explain3d == {
        "lens": True, "arcs": False, "route": False, "route_threshold": 30, "position": None}
    for bad, name in (("on", "explain3d"), ({"lens": 1}, "explain3d.lens"), ({"glow": True}, "explain3d"),
                      ({"route_threshold": 101}, "explain3d.route_threshold"), ({"position": -1}, "explain3d.position")):
        with pytest.raises(vf.ViewError) as exc:
            vf.View.from_dict(_view_doc(explain3d=bad))
        assert exc.value.field == name and "\n" not in str(exc.value)


def test_the_window_saves_and_opens_its_3d_explanation(make_window, qtbot, tmp_path):
    from app.files import viewfile as vf

    win = make_window()
    dock = win.docks["ExplainDock"]
    dock.show3d.set_values(False, True, 45, True)
    path = str(tmp_path / "x.k3view")
    assert win.views.save_to(path)
    saved = vf.load(path).explain3d
    assert saved == {"lens": False, "arcs": True, "route": True, "route_threshold": 45,
                     "position": win.state.trace.prompt_len - 1}
    dock.show3d.set_values(True, False, 30, False)
    assert win.views.open_path(path)
    qtbot.waitUntil(lambda: win.views.pending is None, timeout=60000)
    assert dock.show3d.values() == (False, True, 45, True)


def test_knockouts_with_attnres_sources():
    from app.files import viewfile as vf
    ko = {"mode": "zero", "tokens": [], "blocks": [], "experts": [], "sources": [0, 7]}
    assert vf.View.from_dict(_view_doc(knockouts=ko)).knockouts == ko
    assert "sources" not in vf.View.from_dict(_view_doc(knockouts={"tokens": [1]})).knockouts
    with pytest.raises(vf.ViewError) as exc:
        vf.View.from_dict(_view_doc(knockouts={"sources": [8]}))  # K3 stores 8 candidates: 0..7
    assert exc.value.field == "knockouts.sources[0]"
