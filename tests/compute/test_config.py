"""Config loading: K3 facts, the other models of the family, and ConfigError naming field and file."""
import json

import pytest

from compute.config import DEFAULT_CONFIG, ConfigError, ModelConfig, available_configs, load_default


def test_k3_facts():
    c = load_default()
    assert c.num_hidden_layers == 93
    assert c.mixer_types.count("kda") == 69 and c.mixer_types.count("mla") == 24
    assert [i + 1 for i in c.mla_layers] == list(range(4, 93, 4)) + [93]
    assert c.mixer_types[0] == "kda" and c.ffn_types[0] == "dense"
    assert c.ffn_types.count("moe") == 92
    assert (c.n_routed_experts, c.num_experts_per_tok, c.n_shared_experts) == (896, 16, 2)
    assert (c.hidden_size, c.vocab_size, c.moe_latent_size, c.moe_intermediate_size) == (7168, 163840, 3584, 3072)
    assert (c.kda_num_heads, c.kda_head_dim, c.kda_conv_size, c.kda_gate_lower_bound) == (96, 128, 4, -5.0)
    assert (c.q_lora_rank, c.kv_lora_rank, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim) == \
        (1536, 512, 128, 64, 128)
    assert not c.mla_use_rope and c.mla_output_gate == "sigmoid"
    assert c.hidden_act == "situ_glu" and (c.situ_glu_beta1, c.situ_glu_beta2) == (4.0, 25.0)
    assert c.attn_res_block_size == 12 and c.attn_res_stored_blocks == 8
    assert c.n_group == 1 and c.routed_scaling_factor == 1.0
    assert c.max_position_embeddings == 1048576


def test_family():
    cfgs = {n: ModelConfig.from_json(p) for n, p in available_configs().items()}
    kl = cfgs["kimi-linear-48b"]
    assert kl.num_hidden_layers == 27 and [i + 1 for i in kl.mla_layers] == [4, 8, 12, 16, 20, 24, 27]
    assert kl.kda_gate_lower_bound is None and kl.attn_res_block_size is None and kl.moe_latent_size is None
    assert (kl.n_routed_experts, kl.num_experts_per_tok, kl.hidden_size, kl.hidden_act) == (256, 8, 2304, "silu")
    k2 = cfgs["kimi-k2"]
    assert set(k2.mixer_types) == {"mla"} and k2.mla_use_rope and k2.n_routed_experts == 384
    ds = cfgs["deepseek-v3"]
    assert (ds.n_group, ds.topk_group, ds.routed_scaling_factor) == (8, 4, 2.5)
    assert ds.ffn_types[:4] == ("dense", "dense", "dense", "moe")


def _write(tmp_path, data, name="bad.json"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


def _k3():
    return json.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))


def _expect(tmp_path, data, field):
    p = _write(tmp_path, data)
    with pytest.raises(ConfigError) as ei:
        ModelConfig.from_json(p)
    msg = str(ei.value)
    assert str(p) in msg and field in msg, msg
    assert ei.value.field == field
    return msg


def test_invalid_json(tmp_path):
    _expect(tmp_path, '{"num_hidden_layers": 93,', "<json>")


def test_not_an_object(tmp_path):
    _expect(tmp_path, "[1, 2]", "<json>")


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as ei:
        ModelConfig.from_json(tmp_path / "nope.json")
    assert "nope.json" in str(ei.value)


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "vocab_size", "kv_lora_rank",
                                   "moe_intermediate_size"])
def test_missing_field(tmp_path, field):
    d = _k3()
    del d[field]
    assert "missing" in _expect(tmp_path, d, field)


@pytest.mark.parametrize("field,value", [("hidden_size", "7168"), ("num_hidden_layers", 93.5),
                                         ("n_routed_experts", True), ("routed_scaling_factor", "1"),
                                         ("mla_use_nope", "yes"), ("hidden_act", 3)])
def test_wrong_type(tmp_path, field, value):
    d = _k3()
    d[field] = value
    _expect(tmp_path, d, field)


@pytest.mark.parametrize("field", ["hidden_size", "kv_lora_rank", "moe_intermediate_size", "n_shared_experts",
                                   "first_k_dense_replace"])
def test_negative_size(tmp_path, field):
    d = _k3()
    d[field] = -4
    assert "negative" in _expect(tmp_path, d, field)


def test_negative_nested(tmp_path):
    d = _k3()
    d["linear_attn_config"]["head_dim"] = -128
    _expect(tmp_path, d, "linear_attn_config.head_dim")


def test_top_k_greater_than_experts(tmp_path):
    d = _k3()
    d["num_experts_per_tok"] = 1000
    assert "top-k" in _expect(tmp_path, d, "num_experts_per_tok")


def test_layer_missing_from_lists(tmp_path):
    d = _k3()
    d["linear_attn_config"]["kda_layers"].remove(50)
    assert "50" in _expect(tmp_path, d, "linear_attn_config.kda_layers")


def test_layer_listed_twice(tmp_path):
    d = _k3()
    d["linear_attn_config"]["full_attn_layers"].append(1)
    assert "more than once" in _expect(tmp_path, d, "linear_attn_config.full_attn_layers")


def test_layer_out_of_range(tmp_path):
    d = _k3()
    d["linear_attn_config"]["full_attn_layers"].append(94)
    _expect(tmp_path, d, "linear_attn_config.full_attn_layers")


def test_layer_list_wrong_type(tmp_path):
    d = _k3()
    d["linear_attn_config"]["kda_layers"] = "1,2,3"
    _expect(tmp_path, d, "linear_attn_config.kda_layers")


def test_group_errors(tmp_path):
    d = _k3()
    d["n_group"] = 5  # 896 not divisible by 5
    _expect(tmp_path, d, "n_group")
    d = _k3()
    d["topk_group"] = 2  # > n_group 1
    _expect(tmp_path, d, "topk_group")
