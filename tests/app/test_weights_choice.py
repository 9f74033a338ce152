"""Model -> Trained weights / Random weights, --weights, and every place that says which weights ran
: tested through the real window, the real menu and the command line."""
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest

from app import cli, i18n, weights_choice
from app.i18n import tr
from app.files.settings import Settings
from tests.app.gui_helpers import image_array, wait_idle
from tests.app.weights_helpers import trained_asset  # noqa: F401 - fixture

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

ROOT = Path(__file__).resolve().parents[2]


def choose_in_menu(qtbot, win, name: str) -> None:
    """Open the Model menu with the mouse and click 'Trained weights' / 'Random weights'."""
    bar = win.menuBar()
    menu = win.models.menu
    QTest.mouseClick(bar, Qt.LeftButton, Qt.NoModifier, bar.actionGeometry(menu.menuAction()).center())
    qtbot.waitUntil(menu.isVisible, timeout=5000)
    action = win.registry.actions[f"weights_{name}"]
    QTest.mouseClick(menu, Qt.LeftButton, Qt.NoModifier, menu.actionGeometry(action).center())
    qtbot.waitUntil(lambda: not menu.isVisible(), timeout=5000)


def caption(win) -> str:
    return win.docks["TracePlayerDock"].weights_caption.text()


def test_the_menu_switches_the_weights_and_every_caption_follows(make_window, qtbot, trained_asset, tmp_path):
    win = make_window("w.ini")
    assert win.state.trace.weights_name == "trained"
    assert win.registry.actions["weights_trained"].isChecked()
    assert caption(win) == tr("weights.answer.trained") and "not Kimi K3" in caption(win)
    assert win.weights.label.text() == tr("weights.status", weights=tr("weights.short.trained"))
    from scene.labels import header_title

    assert "trained weights" in header_title(win.scene.overlay_input())

    first = win.state.trace
    choose_in_menu(qtbot, win, "random")
    qtbot.waitUntil(lambda: win.state.trace is not first and win.state.trace.weights_name == "random",
                    timeout=120000)
    wait_idle(qtbot, win)
    assert win.state.trace.text == first.text  # the prompt on screen ran again
    assert win.registry.actions["weights_random"].isChecked()
    assert caption(win) == tr("weights.answer.random") and "noise" in caption(win)
    assert "random" in win.weights.label.text()
    assert "random weights" in header_title(win.scene.overlay_input())
    # the numbers differ: other weights, another answer distribution
    assert (first.passes[0].final["lm_head"] != win.state.trace.passes[0].final["lm_head"]).any()

    i18n.set_language("ko")
    assert caption(win) == tr("weights.answer.random", lang="ko") and "Kimi K3" in caption(win)
    assert "무작위" in win.weights.label.text()
    i18n.set_language("en")

    win.close()  # the choice is remembered
    assert Settings(str(tmp_path / "w.ini")).weights() == "random"
    again = make_window("w.ini")
    assert again.state.trace.weights_name == "random"
    assert again.registry.actions["weights_random"].isChecked()
    choose_in_menu(qtbot, again, "trained")
    qtbot.waitUntil(lambda: again.state.trace.weights_name == "trained", timeout=120000)
    assert caption(again) == tr("weights.answer.trained")


def test_without_the_trained_file_the_captions_say_random(make_window, qtbot, monkeypatch, tmp_path):
    from compute import weights

    monkeypatch.setattr(weights, "default_path", lambda: tmp_path / "missing.npz")
    win = make_window()
    assert win.weights.chosen == "trained"
    assert win.state.trace.weights_name == "random"
    assert caption(win) == tr("weights.answer.random")
    assert win.weights.label.text() == tr("weights.status.fallback.missing")


def test_a_damaged_trained_file_falls_back_to_random_weights_too(make_window, qtbot, monkeypatch, tmp_path):
    """A truncated (or otherwise damaged) weights file is a WeightsError like a missing one: random weights, the
    fallback label, and the app keeps running."""
    from compute import weights

    bad = tmp_path / "damaged.npz"
    bad.write_bytes(weights.default_path().read_bytes()[: 1 << 20])
    monkeypatch.setattr(weights, "default_path", lambda: bad)
    win = make_window()
    assert win.weights.chosen == "trained"
    assert win.state.trace.weights_name == "random"
    assert win.weights.label.text().startswith("Weights: random (weights file damaged.npz")


def test_the_api_falls_back_on_a_damaged_file(monkeypatch, tmp_path):
    import zipfile

    from app import api
    from compute import weights

    bad = tmp_path / "m.npz"
    with zipfile.ZipFile(weights.default_path()) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            if info.filename != "layers.kda.o.npy":  # one array missing
                dst.writestr(info.filename, src.read(info))
    monkeypatch.setattr(weights, "default_path", lambda: bad)
    monkeypatch.setattr(api, "_ENGINES", {})
    assert api.run("Kimi K3", weights="trained").weights_name == "random"


def test_the_about_box_says_which_weights_ran(make_window, qtbot, trained_asset):
    win = make_window()
    dialog = win.show_about()
    text = dialog.body.text()
    assert tr("weights.short.trained") in text and "never Kimi K3" in text
    dialog.close()


def test_gui_weights_option(make_window, qtbot, trained_asset):
    win = make_window(weights="random")
    assert win.state.trace.weights_name == "random"
    assert win.registry.actions["weights_random"].isChecked()


def test_export_with_random_weights(tmp_path, trained_asset, capsys):
    out = tmp_path / "r.png"
    assert cli.main(["--weights", "random", "--size", "320x180", "--out", str(out)]) == 0
    img = image_array(QImage(str(out)))
    assert img.shape == (180, 320, 4) and img[..., :3].std() > 5


def test_a_view_file_applies_its_weights_to_the_export(tmp_path, trained_asset, monkeypatch):
    """--weights given wins over the view's; the view's weights otherwise (the engine is built with them)."""
    from app.files import viewfile
    from app.files.viewfile import View
    from compute import engine

    built = []
    real = engine.ToyK3

    def spy(*a, **k):
        built.append(k.get("weights"))
        return real(*a, **k)

    monkeypatch.setattr(engine, "ToyK3", spy)
    path = tmp_path / "v.k3view"
    viewfile.save(View(weights="random"), path)
    assert cli.main(["--view", str(path), "--size", "160x90", "--out", str(tmp_path / "a.png")]) == 0
    assert cli.main(["--view", str(path), "--weights", "trained", "--size", "160x90",
                     "--out", str(tmp_path / "b.png")]) == 0
    assert built == ["random", "trained"]


@pytest.mark.parametrize("command", [["export", "--out", "x.png"], []])
def test_bogus_weights_exit_2_with_one_line(command, tmp_path):
    r = subprocess.run([sys.executable, "-m", "app", *command, "--weights", "bogus"], cwd=tmp_path,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=120)
    lines = [line for line in r.stderr.decode().splitlines() if line.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "--weights" in lines[0] and "'trained', 'random'" in lines[0]


def test_the_caption_helpers():
    class T:
        weights_name = "trained"

    assert weights_choice.weights_of(None) is None
    assert weights_choice.answer_caption(None, tr) == ""
    assert weights_choice.status_text(T(), tr, "trained") == tr("weights.status", weights=tr("weights.short.trained"))
    T.weights_name = "random"
    assert weights_choice.status_text(T(), tr, "trained") == tr("weights.status.fallback")
    with pytest.raises(ValueError):
        weights_choice.check("bogus")


def test_the_status_says_why_trained_weights_did_not_run(tmp_path):
    """A user's model (a config.json) says 'no trained toy for this model' (not 'missing or unusable'),
    a missing file 'not installed', a damaged one 'damaged' — read from real engines' traces."""
    from compute.config import ModelConfig, available_configs
    from compute.engine import ToyK3

    import json

    raw = json.loads(available_configs()["kimi-k2"].read_text(encoding="utf-8"))  # a user's model: no toy ships
    raw.update(num_hidden_layers=5, name="my-model")
    (tmp_path / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    k2 = ToyK3(ModelConfig.from_json(tmp_path / "config.json"), device="cpu", weights="trained")
    tr_k2 = k2.run("로봇이 컵을", max_new_tokens=1)
    assert (tr_k2.weights_name, tr_k2.weights_fallback) == ("random", "other_model")
    assert weights_choice.status_text(tr_k2, tr, "trained") == tr("weights.status.fallback.other_model")
    assert "no trained toy for this model" in weights_choice.status_text(tr_k2, tr, "trained")

    k3 = ToyK3(device="cpu", weights="trained")
    t = k3.run("로봇이 컵을", max_new_tokens=1)
    assert (t.weights_name, t.weights_fallback) == ("trained", "")
    assert weights_choice.status_text(t, tr, "trained") == tr("weights.status", weights=tr("weights.short.trained"))
    again = k3.resample(t, type(t.knobs)(temperature=0.7))
    assert again.weights_fallback == ""
    assert k2.resample(tr_k2, type(tr_k2.knobs)(temperature=0.7)).weights_fallback == "other_model"


@pytest.mark.parametrize("damage, reason", [("missing", "missing"), ("damaged", "damaged")])
def test_a_missing_or_damaged_file_has_its_own_status(tmp_path, monkeypatch, damage, reason):
    from compute import weights as wio
    from compute.engine import ToyK3

    path = tmp_path / "toy.npz"
    if damage == "damaged":
        path.write_bytes(b"PK\x03\x04 not really a zip")
    monkeypatch.setattr(wio, "default_path", lambda: path)
    m = ToyK3(device="cpu", weights="trained")
    t = m.run("로봇이 컵을", max_new_tokens=1)
    assert (t.weights_name, t.weights_fallback) == ("random", reason)
    assert weights_choice.status_text(t, tr, "trained") == tr(f"weights.status.fallback.{reason}")
