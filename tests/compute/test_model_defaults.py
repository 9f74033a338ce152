"""compute.model_defaults: the layer a view of a model opens on comes from that model's config (its "k3_explorer"
object, else the middle layer), and switching models keeps a layer only where the new model has it."""
import json

import pytest

from compute.config import ModelConfig, available_configs
from compute.model_defaults import PREFILL_STEP, default_expert, default_layer, expert_for, layer_for, model_defaults


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
    own = raw["k3_explorer"].get("default_expert", 0)
    assert 0 <= own < cfg.n_routed_experts
    assert d.expert == (own if cfg.ffn_types[want - 1] == "moe" else None)


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


def test_the_default_expert_is_k3s_17_only_for_k3():
    """docs/spec/features.md E2: K3's example expert is 17; the other bundled models start on their expert 0."""
    experts = {n: default_expert(bundled(n)) for n in available_configs()}
    assert experts == {"kimi-k3": 17, "kimi-linear-48b": 0, "kimi-k2": 0, "deepseek-v3": 0}


@pytest.mark.parametrize("own", [17, 8, -1, "3", True, None])
def test_an_expert_the_model_lacks_is_never_its_default(tmp_path, own):
    """A user's 8-expert model copied from K3's file (default_expert 17) starts on expert 0, not on 17 (clamped
    to 7 by a spin box) or on any other number it does not have."""
    k3 = {"default_layer": 37} if own is None else {"default_layer": 3, "default_expert": own}
    cfg = _odd(tmp_path, n_routed_experts=8, num_experts_per_tok=2, k3_explorer=k3)
    assert cfg.n_routed_experts == 8
    assert default_expert(cfg) == 0
    assert default_expert(_odd(tmp_path, n_routed_experts=8, num_experts_per_tok=2,
                               k3_explorer={"default_expert": 7})) == 7


def test_expert_for_keeps_an_expert_the_model_has_else_its_default():
    k3, linear = bundled("kimi-k3"), bundled("kimi-linear-48b")
    assert expert_for(linear, 300) == 0  # Kimi Linear has 256 routed experts
    assert expert_for(linear, 255) == 255 and expert_for(linear, 256) == 0
    assert expert_for(k3, 895) == 895 and expert_for(k3, 896) == 17 and expert_for(k3, None) == 17
    assert expert_for(k3, -1) == 17 and expert_for(k3, True) == 17
