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


_LAC = "linear_attn_config"


@pytest.mark.parametrize("edit,field,word", [
    (lambda d: d[_LAC].update(head_dim=-128), f"{_LAC}.head_dim", ""),
    (lambda d: d.update(num_experts_per_tok=1000), "num_experts_per_tok", "top-k"),
    (lambda d: d[_LAC]["kda_layers"].remove(50), f"{_LAC}.kda_layers", "50"),
    (lambda d: d[_LAC]["full_attn_layers"].append(1), f"{_LAC}.full_attn_layers", "more than once"),
    (lambda d: d[_LAC]["full_attn_layers"].append(94), f"{_LAC}.full_attn_layers", ""),
    (lambda d: d[_LAC].update(kda_layers="1,2,3"), f"{_LAC}.kda_layers", ""),
    (lambda d: d.update(n_group=5), "n_group", ""),  # 896 not divisible by 5
    (lambda d: d.update(topk_group=2), "topk_group", ""),  # > n_group 1
    # a vocabulary of 320 IDs used to hang ToyK3 (the tokenizer searched for a free ID for ever)
    (lambda d: d.update(vocab_size=320), "vocab_size", "tokenizer"),
    (lambda d: d[_LAC].update(gate_lower_bound=3.0), f"{_LAC}.gate_lower_bound", "too large"),
    (lambda d: d.update(active_params_billion=5000), "active_params_billion", ""),
], ids=["negative_nested", "top_k_greater_than_experts", "layer_missing_from_lists", "layer_listed_twice",
        "layer_out_of_range", "layer_list_wrong_type", "group_not_dividing_experts", "topk_group_above_groups",
        "vocab_too_small_for_the_toy", "gate_lower_bound_grows_the_state", "active_params_above_total"])
def test_a_bad_edit_of_the_k3_config_names_its_field(tmp_path, edit, field, word):
    d = _k3()
    edit(d)
    assert word in _expect(tmp_path, d, field)


# --- hardening: every bad document is a ConfigError; what is accepted runs --------------------------------


def test_deep_nesting(tmp_path):
    d = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "nested" in _expect(tmp_path, d, "<json>")


def test_brackets_inside_strings_are_not_nesting():
    d = _k3()
    d["_comment"] = "[" * 1000
    assert ModelConfig.from_dict(json.loads(json.dumps(d))).num_hidden_layers == 93
    from compute.config import parse_json
    assert parse_json(json.dumps(d))["_comment"] == "[" * 1000


def test_huge_integer_literal(tmp_path):
    text = DEFAULT_CONFIG.read_text(encoding="utf-8").replace('"hidden_size": 7168', '"hidden_size": ' + "9" * 4300)
    assert "digits" in _expect(tmp_path, text, "<json>")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_literals(tmp_path, literal):
    text = DEFAULT_CONFIG.read_text(encoding="utf-8").replace('"situ_glu_beta2": 25.0', f'"situ_glu_beta2": {literal}')
    assert literal in text
    _expect(tmp_path, text, "<json>")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_values_from_code(value):
    d = _k3()
    d["situ_glu_beta2"] = value
    with pytest.raises(ConfigError, match="finite") as ei:
        ModelConfig.from_dict(d)
    assert ei.value.field == "situ_glu_beta2"


def test_huge_int_in_a_float_field_from_code():
    d = _k3()
    d["total_params_billion"] = 10 ** 400  # float() of it would raise OverflowError
    with pytest.raises(ConfigError, match="too large"):
        ModelConfig.from_dict(d)


def test_file_too_large(tmp_path):
    d = _k3()
    d["_comment"] = "x" * (2 << 20)
    assert "bytes" in _expect(tmp_path, d, "<file>")


@pytest.mark.parametrize("field,value,word", [
    ("num_hidden_layers", 10 ** 9, "too large"), ("n_routed_experts", 10 ** 6, "too large"),
    ("vocab_size", 320, "too small"), ("vocab_size", 10 ** 12, "too large"),
    ("situ_glu_beta1", 0.0, "too small"), ("rms_norm_eps", 0.0, "too small"),
    ("routed_scaling_factor", 1e300, "too large"), ("max_position_embeddings", 10 ** 15, "too large"),
    ("total_params_billion", 10 ** 15, "too large"),
])
def test_out_of_range(tmp_path, field, value, word):
    d = _k3()
    d[field] = value
    msg = _expect(tmp_path, d, field)
    assert word in msg and len(msg.replace(str(tmp_path), "")) < 160, msg  # one line, apart from the file's path


def test_alias_fields_are_bounded(tmp_path):
    d = json.loads(available_configs()["kimi-linear-48b"].read_text(encoding="utf-8"))
    d["num_experts"] = 10 ** 7
    assert "too large" in _expect(tmp_path, d, "num_experts")


def test_rope_theta_is_checked(tmp_path):
    d = json.loads(available_configs()["deepseek-v3"].read_text(encoding="utf-8"))
    d["rope_theta"] = "ten thousand"
    _expect(tmp_path, d, "rope_theta")
    d["rope_theta"] = 0.0
    assert "too small" in _expect(tmp_path, d, "rope_theta")
    d["rope_theta"] = None  # null: the engine's default
    assert "rope_theta" not in ModelConfig.from_dict(d).raw


def test_long_values_are_cut_in_messages(tmp_path):
    d = _k3()
    d["hidden_size"] = list(range(10_000))
    assert len(_expect(tmp_path, d, "hidden_size")) < 250


def test_name_must_be_a_short_string(tmp_path):
    d = _k3()
    d["name"] = {"a": 1}
    _expect(tmp_path, d, "name")
    d["name"] = "k" * 1000
    assert "too long" in _expect(tmp_path, d, "name")


def test_family_inside_limits():
    """The bounds hold the real family with room to spare."""
    from compute.config import LIMITS
    for p in available_configs().values():
        c = ModelConfig.from_json(p)
        for f in ("num_hidden_layers", "vocab_size", "n_routed_experts", "hidden_size", "max_position_embeddings"):
            lo, hi = LIMITS[f]
            assert lo <= getattr(c, f) <= hi


def test_vocab_minimum_fits_the_toy_tokenizer():
    """A vocabulary at the minimum holds the 256 byte IDs, the toy pieces and room for hashed ones: the
    tokenizer (which searches for a free ID) ends."""
    from compute.config import MIN_VOCAB
    from compute.language.tokenizer import TOY_PIECES, ToyTokenizer
    assert MIN_VOCAB >= 2 * (256 + len(TOY_PIECES))
    tok = ToyTokenizer(vocab_size=MIN_VOCAB)
    ids = [i for _, i in tok.encode("robots read 모델은 다음 토큰을 🙂 zzz qqq")]
    assert all(0 <= i < MIN_VOCAB for i in ids)


def test_one_expert_per_group_is_a_legal_grouping():
    """n_group = n_routed_experts: each group holds one expert (a group scores that expert's biased score).
    The config accepts it and the toy runs it; routing keeps the topk_group best experts, so with
    top-k <= topk_group it equals plain top-k."""
    import numpy as np
    import torch

    from compute.engine import ToyK3
    from compute.ops.moe import route
    from compute.trace import Knobs

    d = json.loads(available_configs()["deepseek-v3"].read_text(encoding="utf-8"))
    d["n_group"], d["topk_group"] = 256, 8
    cfg = ModelConfig.from_dict(d)
    tr = ToyK3(cfg, device="cpu").run("the model", max_new_tokens=2, knobs=Knobs(temperature=0.0))
    assert np.isfinite(tr.passes[-1].final["lm_head"]).all()
    logits = torch.randn(5, 256, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    bias = torch.randn(256, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.1
    for b in (bias, None):
        w_g, idx_g = route(logits, b, 8, 2.5, n_group=256, topk_group=8)
        w_1, idx_1 = route(logits, b, 8, 2.5)
        assert torch.equal(idx_g.sort(-1)[0], idx_1.sort(-1)[0])
