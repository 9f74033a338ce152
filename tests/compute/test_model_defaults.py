"""compute.model_defaults: the layer a view of a model opens on comes from that model's config (its "k3_explorer"
object, else the middle layer), and switching models keeps a layer only where the new model has it."""
import json

import pytest

from compute.config import ModelConfig, available_configs
from compute.model_defaults import PREFILL_STEP, default_layer, layer_for, model_defaults


def bundled(name: str) -> ModelConfig:
    return ModelConfig.from_json(available_configs()[name])


@pytest.mark.parametrize("name", sorted(available_configs()))
def test_a_bundled_model_opens_on_the_layer_its_config_names(name):
    raw = json.loads(available_configs()[name].read_text(encoding="utf-8"))
    cfg = bundled(name)
    want = raw["k3_explorer"]["default_layer"]
    assert 1 <= want <= cfg.num_hidden_layers
    d = model_defaults(cfg)
    assert d.layer == default_layer(cfg) == want
    assert d.step == PREFILL_STEP and d.head == 0
    assert d.expert == (0 if cfg.ffn_types[want - 1] == "moe" else None)


def test_the_defaults_differ_where_the_models_differ():
    """K3's 37 is not every model's: Kimi Linear has 27 layers, K2 and DeepSeek-V3 open in their middle."""
    layers = {n: default_layer(bundled(n)) for n in available_configs()}
    assert layers == {"kimi-k3": 37, "kimi-linear-48b": 14, "kimi-k2": 31, "deepseek-v3": 31}
    assert bundled("kimi-k3").mixer_types[36] == "kda" and bundled("kimi-linear-48b").mixer_types[13] == "kda"


def _odd(tmp_path, **changes) -> ModelConfig:
    raw = json.loads(available_configs()["kimi-linear-48b"].read_text(encoding="utf-8"))
    raw.update(num_hidden_layers=5, name="odd-user-model")
    raw["linear_attn_config"] = dict(raw["linear_attn_config"], kda_layers=[1, 2, 4], full_attn_layers=[3, 5])
    raw.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return ModelConfig.from_json(path)


@pytest.mark.parametrize("own", [None, 37, 0, "3", True, [2]])
def test_a_users_config_without_a_usable_default_opens_on_its_middle_layer(tmp_path, own):
    changes = {} if own is None else {"k3_explorer": {"default_layer": own}}
    cfg = _odd(tmp_path, **changes)
    assert cfg.num_hidden_layers == 5
    assert default_layer(cfg) == 3


def test_a_users_config_may_name_its_default(tmp_path):
    assert default_layer(_odd(tmp_path, k3_explorer={"default_layer": 5})) == 5


def test_layer_for_keeps_a_layer_the_model_has_else_its_default():
    k3, linear, k2 = bundled("kimi-k3"), bundled("kimi-linear-48b"), bundled("kimi-k2")
    assert layer_for(linear, 37) == 14  # Kimi Linear has 27 layers: its own default
    assert layer_for(k3, 37) == 37 and layer_for(k2, 37) == 37  # K2 has layer 37: the user's layer stays
    assert layer_for(linear, 27) == 27 and layer_for(linear, 28) == 14
    assert layer_for(k3, None) == 37 and layer_for(k3, 0) == 37 and layer_for(k3, True) == 37
