"""The operators' one record (compute.dims.OpArgs, issue 42 build 5): what each bundled model's config file says
reaches the operators through OpArgs.of, and the operators take the record instead of loose numbers."""
import inspect
import json
from pathlib import Path

import pytest

from compute.config import ModelConfig
from compute.dims import OpArgs, ToyDims

CONFIGS = Path(__file__).resolve().parents[2] / "assets" / "configs"

# Read from the JSON files by hand (not through the loader): K3 is NoPE with a gated MLA, SiTU-GLU and KDA's
# lower-bound gate; Kimi Linear has the softplus gate; K2 and DeepSeek-V3 rotate (their rope_theta).
EXPECTED = {
    "kimi-k3": dict(rope_theta=None, mla_gated=True, act="situ_glu", kda_lower_bound=-5.0, eps=1e-6),
    "kimi-linear-48b": dict(rope_theta=None, mla_gated=False, act="silu", kda_lower_bound=None, eps=1e-5),
    "kimi-k2": dict(rope_theta=50000.0, mla_gated=False, act="silu", eps=1e-6, top_k=8),
    "deepseek-v3": dict(rope_theta=10000.0, mla_gated=False, act="silu", eps=1e-6, top_k=8, n_group=8, topk_group=4),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_config_reaches_the_operators(name):
    cfg = ModelConfig.from_json(CONFIGS / f"{name}.json")
    args = OpArgs.of(cfg, ToyDims())
    for field, value in EXPECTED[name].items():
        assert getattr(args, field) == value, (name, field)
    raw = json.loads((CONFIGS / f"{name}.json").read_text())
    assert args.routed_scaling_factor == pytest.approx(raw["routed_scaling_factor"])
    d = ToyDims()
    assert (args.kda_heads, args.mla_heads, args.nope, args.rope, args.v, args.kv_lora) == \
        (d.kda_heads, d.mla_heads, d.nope, d.rope, d.v, d.kv_lora)


def test_the_engine_hands_its_record_to_every_operator():
    from compute.engine import ToyK3

    model = ToyK3(ModelConfig.from_json(CONFIGS / "kimi-k2.json"), weights="random", backend="numpy")
    assert model.op_args == OpArgs.of(model.config, model.dims)


@pytest.mark.parametrize("op", ["compute.ops.kda:kda_layer", "compute.ops.mla:mla_layer", "compute.ops.moe:dense_mlp",
                                "compute.ops.moe:latent_moe"])
def test_operators_take_the_record_not_loose_numbers(op):
    import importlib

    module, name = op.split(":")
    params = list(inspect.signature(getattr(importlib.import_module(module), name)).parameters)
    assert params[2] == "args"
    loose = {"heads", "head_dim", "nope", "rope", "v_dim", "kv_lora", "top_k", "eps", "gated", "rope_theta",
             "lower_bound", "act", "beta1", "beta2"}
    assert not loose & set(params), params
