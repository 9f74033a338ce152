"""A bundled model other than K3 (DeepSeek-V3, Kimi K2, Kimi Linear) and a user's config say
"random weights (no trained toy for this model)" — not "the trained file is not installed" — whether or not K3's
trained file is installed or sound; K3 itself still says when its file is missing. Through a real window (the
Model menu) and through weights_choice.status_text on real engines' traces (what the window's label shows)."""
import json

import pytest

from app import i18n, weights_choice
from app.i18n import tr
from compute.config import ModelConfig, available_configs


def _status(cfg) -> tuple[str, str, str, str]:
    from compute.engine import ToyK3

    t = ToyK3(cfg, device="cpu", weights="trained").run("로봇이 컵을", max_new_tokens=1)
    return (t.weights_name, t.weights_fallback, weights_choice.status_text(t, tr, "trained"),
            weights_choice.status_text(t, lambda key, **kw: tr(key, lang="ko", **kw), "trained"))


def _user_config(tmp_path) -> ModelConfig:
    raw = json.loads(available_configs()["kimi-linear-48b"].read_text(encoding="utf-8"))
    raw.update(name="my-model", num_hidden_layers=4)
    raw["linear_attn_config"] = dict(raw["linear_attn_config"], kda_layers=[1, 2, 3], full_attn_layers=[4])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return ModelConfig.from_json(path)


@pytest.mark.parametrize("k3_file", ["installed", "missing", "damaged"])
def test_other_models_say_no_trained_toy_whatever_the_k3_file(tmp_path, monkeypatch, k3_file):
    from compute import weights as wio

    if k3_file != "installed":
        path = tmp_path / "toy.npz"
        if k3_file == "damaged":
            path.write_bytes(b"PK\x03\x04 not really a zip")
        monkeypatch.setattr(wio, "default_path", lambda: path)
    # the bundled models no trained toy ships for (compute.weights.SHIPPED_TOYS), and a user's config
    cfgs = [ModelConfig.from_json(p) for stem, p in available_configs().items() if stem not in wio.SHIPPED_TOYS]
    assert {c.name for c in cfgs} == set(available_configs()) - set(wio.SHIPPED_TOYS)
    for cfg in cfgs + [_user_config(tmp_path)]:
        name, why, text, ko = _status(cfg)
        assert (name, why) == ("random", "other_model"), cfg.name
        assert text == tr("weights.status.fallback.other_model") == "Weights: random (no trained toy for this model)"
        assert ko == tr("weights.status.fallback.other_model", lang="ko") and "학습된 토이가 없음" in ko
    # a user's config.json that borrows K3's name but not its layers is another model, not a damaged file
    raw = json.loads(available_configs()["kimi-k3"].read_text(encoding="utf-8"))
    raw.update(num_hidden_layers=4, n_routed_experts=16)
    raw["linear_attn_config"] = dict(raw["linear_attn_config"], kda_layers=[1, 2, 3], full_attn_layers=[4])
    (tmp_path / "k3-like.json").write_text(json.dumps(raw), encoding="utf-8")
    like = ModelConfig.from_json(tmp_path / "k3-like.json")
    assert like.name == "kimi-k3" and _status(like)[:2] == ("random", "other_model")
    k3 = _status(ModelConfig.from_json(available_configs()["kimi-k3"]))
    expected = {"installed": ("trained", ""), "missing": ("random", "missing"), "damaged": ("random", "damaged")}
    assert k3[:2] == expected[k3_file]


def test_the_window_says_no_trained_toy_for_another_model_without_the_k3_file(make_window, qtbot, monkeypatch,
                                                                             tmp_path):
    from compute import weights as wio

    monkeypatch.setattr(wio, "default_path", lambda: tmp_path / "missing.npz")
    win = make_window()
    assert win.weights.label.text() == tr("weights.status.fallback.missing")  # K3: its file is not installed
    # every bundled model has its toy now: the other model is a user's config.json (Model -> Open config…)
    raw = json.loads(available_configs()["kimi-k2"].read_text(encoding="utf-8"))
    raw.update(num_hidden_layers=5, name="my-model")
    (tmp_path / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    assert win.models.open_path(str(tmp_path / "config.json"))
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.config_name == "my-model"
                    and not win.engine.busy, timeout=120000)
    qtbot.waitUntil(lambda: win.weights.label.text() == tr("weights.status.fallback.other_model"), timeout=10000)
    i18n.set_language("ko")
    qtbot.waitUntil(lambda: win.weights.label.text() == tr("weights.status.fallback.other_model", lang="ko"),
                    timeout=10000)
    i18n.set_language("en")
