"""Every model runs from its defaults (issue 41.1): api.run, api.render, api.explain and `k3-explorer export`
(a PNG, and --animate of a few frames) with default arguments, for every bundled config and for a user's odd
config.json — no K3 default (layer 37) where the model has other layers. The window's switch K3 -> Kimi Linear
-> K3 comes back to the layer the user had."""
import json

import numpy as np
import pytest

from app import api, cli, i18n
from app.files import viewfile
from app.files.viewfile import View
from compute.config import ModelConfig, available_configs

PROMPT = "아이가 상자를 집었다. 그리고"
NAMES = sorted(available_configs())


def own_layer(name: str) -> int:
    """The default layer the config file itself names (read here from the JSON, not through the code under test)."""
    raw = json.loads(available_configs()[name].read_text(encoding="utf-8"))
    return raw["k3_explorer"]["default_layer"]


def odd_config(tmp_path) -> str:
    """A user's config.json: 5 layers (KDA, KDA, MLA, KDA, MLA), 12 experts top-3, no default layer of its own."""
    raw = json.loads(available_configs()["kimi-linear-48b"].read_text(encoding="utf-8"))
    raw.pop("k3_explorer")
    raw.update(name="odd-user-model", display_name="Odd user model", num_hidden_layers=5, num_experts=12,
               num_experts_per_tok=3)
    raw["linear_attn_config"] = dict(raw["linear_attn_config"], kda_layers=[1, 2, 4], full_attn_layers=[3, 5])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    cfg = ModelConfig.from_json(path)
    assert (cfg.num_hidden_layers, cfg.n_routed_experts) == (5, 12)
    return str(path)


@pytest.mark.parametrize("name", NAMES)
def test_the_api_runs_every_bundled_model_from_its_defaults(qapp, name):
    trace = api.run(PROMPT, model=name)
    assert trace.config_name == name
    n = ModelConfig.from_json(available_configs()[name]).num_hidden_layers
    assert len(trace.passes[0].layers) == n
    assert api.resolve_view(None, model=name).layer == own_layer(name) == View(model=name).layer
    ex = api.explain(PROMPT, model=name)
    assert len(ex.lens) == n + 1 and ex.word
    image = api.render(model=name, size=(320, 180))
    assert image.shape == (180, 320, 4) and int(np.ptp(image[..., :3])) > 0


def test_another_model_keeps_a_views_layer_only_where_it_has_it(tmp_path):
    at = View(layer=37)
    assert at.with_changes(model="kimi-linear-48b").layer == own_layer("kimi-linear-48b")  # 27 layers
    assert at.with_changes(model="kimi-k2").layer == 37  # K2 has a layer 37
    assert api.resolve_view(at, model="kimi-linear-48b").layer == own_layer("kimi-linear-48b")
    assert api.resolve_view(View(layer=20), model="kimi-linear-48b").layer == 20
    assert api.resolve_view(None, model="kimi-k2").layer == own_layer("kimi-k2")  # the model's own, not 37
    assert api.resolve_view(None, model="kimi-linear-48b", layer=27).layer == 27
    with pytest.raises(ValueError, match="layer"):  # a layer the caller gives is checked, never moved
        api.resolve_view(None, model="kimi-linear-48b", layer=37)
    # a view file without a layer opens on its model's default
    doc = View(model="kimi-k2").to_dict()
    del doc["layer"]
    assert View.from_dict(doc).layer == own_layer("kimi-k2")


def _export(args: list[str]) -> int:
    try:
        return cli.main(args)
    finally:
        i18n.set_language("en")


def _png_ok(path) -> None:
    from PySide6.QtGui import QImage

    image = QImage(str(path))
    assert not image.isNull() and (image.width(), image.height()) == (320, 180)


@pytest.mark.parametrize("name", NAMES + ["odd"])
def test_export_runs_every_model_from_its_defaults(qapp, tmp_path, capsys, name):
    config = odd_config(tmp_path) if name == "odd" else name
    png, gif = tmp_path / "x.png", tmp_path / "x.gif"
    assert _export(["--config", config, "--size", "320x180", "--out", str(png)]) == 0, capsys.readouterr().err
    _png_ok(png)
    assert _export(["--config", config, "--size", "320x180", "--animate", "--orbit", "--fps", "1",
                    "--no-captions", "--out", str(gif)]) == 0, capsys.readouterr().err
    assert gif.stat().st_size > 1000
    err = capsys.readouterr().err
    assert "outside" not in err and "37" not in err


def test_the_api_explains_a_users_odd_model(qapp, tmp_path):
    from compute.engine import ToyK3

    engine = ToyK3(config=ModelConfig.from_json(odd_config(tmp_path)), weights="trained")  # none ships: random, said so
    assert engine.weights_name == "random" and "no trained toy" in engine.weights_note
    ex = api.explain(PROMPT, model=engine, weights="random")
    assert len(ex.lens) == 6 and ex.word


def test_the_cli_keeps_a_views_layer_where_the_model_has_it(qapp, tmp_path, capsys):
    """A view saved at K3's layer 40, exported with --config kimi-linear-48b (27 layers): that model's default
    layer, no error; with --config kimi-k2 (61 layers): layer 40 stays."""
    from compute.model_defaults import layer_for

    path = tmp_path / "v.k3view"
    viewfile.save(View(layer=40, size=(320, 180)), path)
    argv = ["--view", str(path), "--out", str(tmp_path / "y.png")]
    args = cli.build_parser().parse_args(argv)
    saved = cli._apply_view(args, argv)
    assert args.layer is None
    cli._default_places(args, ModelConfig.from_json(available_configs()["kimi-linear-48b"]), saved)
    assert args.layer == own_layer("kimi-linear-48b") and args.step == 6
    args.layer = None
    cli._default_places(args, ModelConfig.from_json(available_configs()["kimi-k2"]), saved)
    assert args.layer == 40 == layer_for(ModelConfig.from_json(available_configs()["kimi-k2"]), 40)
    assert _export(["--view", str(path), "--config", "kimi-linear-48b", "--out", str(tmp_path / "y.png")]) == 0


def test_a_switch_to_a_smaller_model_and_back_restores_the_users_layer(main_window, qtbot):
    from tests.app.test_open_model import wait_model

    win = main_window
    if win.config.name != "kimi-k3":
        win.models.model_actions["kimi-k3"].trigger()
        wait_model(qtbot, win, "kimi-k3")
    win.state.select_layer(own_layer("kimi-k3") - 1)  # the user is at 37
    assert win.scene.layer0 == own_layer("kimi-k3") - 1
    win.models.model_actions["kimi-linear-48b"].trigger()
    wait_model(qtbot, win, "kimi-linear-48b")
    assert win.state.layer == own_layer("kimi-linear-48b") - 1  # 37 is not there: that model's default
    assert win.scene.layer0 == win.state.layer
    win.models.model_actions["kimi-k3"].trigger()
    wait_model(qtbot, win, "kimi-k3")
    assert win.state.layer == 36  # the user's 37 again, not the 14 the smaller model forced
    win.state.select_layer(9)  # the user picks layer 10 on K3: kept on Kimi Linear (it has it)
    win.models.model_actions["kimi-linear-48b"].trigger()
    wait_model(qtbot, win, "kimi-linear-48b")
    assert win.state.layer == 9
    win.models.model_actions["kimi-k3"].trigger()
    wait_model(qtbot, win, "kimi-k3")
    assert win.state.layer == 9
