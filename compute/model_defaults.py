"""The defaults that name a place in the loaded model: the layer a view opens on (and the step, head and
expert that go with it). One function, `model_defaults(config)`, for the view file (app/files/viewfile.py), the
command line (app/cli.py), the notebook API (app/api.py) and the window (app/window/model_menu.py), so that no K3
number is a default for another model.

The layer comes from the config itself: a bundled config names it in its "k3_explorer" object
({"default_layer": 37} for Kimi K3: the first layer of AttnRes block 4, a KDA layer after an MLA one); a config
without it (a user's config.json) or with a value outside the model opens on its middle layer, (n + 1) // 2.

`layer_for(config, wanted)`: the user's layer when the model has it, else the model's default — what switching
models does (K3 at layer 37 -> Kimi Linear (27 layers) -> its default; back to K3 -> 37 again, because the window
remembers the layer the user picked, not the one a smaller model forced).

The routed expert shown first comes from the config too ({"default_expert": 17} for Kimi K3, the seed example of
docs/spec/features.md E2); a config without one, or with one the model does not have (a user's 8-expert model
copied from K3's file), starts on expert 0. `expert_for(config, wanted)` keeps the user's expert where the model
has it, else that default: the Experts dock never shows another model's number.
"""
from __future__ import annotations

from dataclasses import dataclass

KEY = "k3_explorer"  # the config's object of K3 Explorer's own settings for that model
PREFILL_STEP = 6  # 1-based trace player step of the prefill (scene.steps.PREFILL_KINDS; a test keeps them equal)


@dataclass(frozen=True)
class ModelDefaults:
    layer: int  # 1-based
    step: int  # 1-based trace player step
    head: int  # 0-based attention head of the default layer's mixer
    expert: int | None  # 0-based routed expert shown first (None: the layer has no experts)


def default_layer(config) -> int:
    """The 1-based layer a view of this model opens on (see the module docstring)."""
    n = int(config.num_hidden_layers)
    own = getattr(config, "raw", {}).get(KEY)
    value = own.get("default_layer") if isinstance(own, dict) else None
    if type(value) is int and 1 <= value <= n:
        return value
    return max(1, (n + 1) // 2)


def default_expert(config) -> int:
    """The 0-based routed expert a view of this model shows first (see the module docstring); 0 for a model
    without routed experts (nothing to show, but a spin box still needs a value)."""
    n = int(config.n_routed_experts)
    own = getattr(config, "raw", {}).get(KEY)
    value = own.get("default_expert") if isinstance(own, dict) else None
    if type(value) is int and 0 <= value < n:
        return value
    return 0


def expert_for(config, wanted: int | None) -> int:
    """`wanted` (0-based) when this model has that routed expert, else the model's default expert."""
    if type(wanted) is int and 0 <= wanted < int(config.n_routed_experts):
        return wanted
    return default_expert(config)


def model_defaults(config) -> ModelDefaults:
    """Every default that names a layer, step, head or expert, for this compute.config.ModelConfig."""
    layer = default_layer(config)
    has_experts = config.ffn_types[layer - 1] == "moe" and int(config.n_routed_experts) > 0
    return ModelDefaults(layer=layer, step=PREFILL_STEP, head=0, expert=default_expert(config) if has_experts else None)


def layer_for(config, wanted: int | None) -> int:
    """`wanted` (1-based) when this model has that layer, else the model's default layer."""
    n = int(config.num_hidden_layers)
    if type(wanted) is int and 1 <= wanted <= n:
        return wanted
    return default_layer(config)


def keep_layer(model: str, layer: int, changes: dict) -> dict:
    """`changes` to a view of bundled `model` at `layer`: when they name another model and no layer, the layer for
    that model by `layer_for` (this one where it has it, else its default) is added."""
    new = changes.get("model", model)
    if new != model and changes.get("layer") is None:
        return {**changes, "layer": layer_for(config_named(new), layer)}
    return changes


def config_named(name: str):
    """The bundled config of that name (compute.config.available_configs), K3's object for K3."""
    from compute.config import DEFAULT_CONFIG, ModelConfig, available_configs, default_config

    path = available_configs()[name]
    return default_config() if path == DEFAULT_CONFIG else ModelConfig.from_json(path)


__all__ = ["ModelDefaults", "model_defaults", "default_layer", "layer_for", "default_expert", "expert_for", "keep_layer", "config_named", "PREFILL_STEP",
           "KEY"]
