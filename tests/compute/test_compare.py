"""B1 compare: numbers checked against hand calculations from assets/configs/*.json (written out here)."""
import pytest

from compute.teaching.compare import contexts, crossover, summarize
from compute.config import ModelConfig, available_configs


def _load(name):
    return summarize(ModelConfig.from_json(available_configs()[name]))


# kimi-k3.json: kv_lora_rank 512, qk_rope_head_dim 64, 24 full_attn_layers, 69 kda_layers, num_heads 96,
# head_dim 128; BF16 cache (2 B), fp32 state (4 B)
K3_MLA_PER_TOKEN = (512 + 64) * 24 * 2  # 27,648 B
K3_KDA_STATE = 96 * 128 * 128 * 4 * 69  # 434,110,464 B
# deepseek-v3.json: 61 layers all MLA, kv_lora_rank 512, qk_rope_head_dim 64
DS_MLA_PER_TOKEN = (512 + 64) * 61 * 2  # 70,272 B
# kimi-linear-48b.json: 7 full_attn_layers, 20 kda_layers, 32 heads × 128
KL_MLA_PER_TOKEN = (512 + 64) * 7 * 2  # 8,064 B
KL_KDA_STATE = 32 * 128 * 128 * 4 * 20  # 41,943,040 B


def test_k3_summary():
    s = _load("kimi-k3")
    assert (s.layers, s.kda_layers, s.mla_layers) == (93, 69, 24)
    assert s.pattern == "KKKM" * 23 + "M"
    assert (s.dense_layers, s.moe_layers) == (1, 92)
    assert (s.routed_experts, s.shared_experts, s.top_k) == (896, 2, 16)
    assert s.attn_res and s.attn_res_block_size == 12
    assert (s.total_params_billion, s.active_params_billion) == (2800, 104)
    assert s.mla_bytes_per_token == K3_MLA_PER_TOKEN == 27_648
    assert s.kda_state_bytes == K3_KDA_STATE == 434_110_464


def test_deepseek_summary():
    s = _load("deepseek-v3")
    assert (s.layers, s.kda_layers, s.mla_layers) == (61, 0, 61)
    assert s.pattern == "M" * 61
    assert (s.dense_layers, s.moe_layers) == (3, 58)
    assert (s.routed_experts, s.shared_experts, s.top_k) == (256, 1, 8)
    assert not s.attn_res and s.attn_res_block_size is None
    assert s.mla_bytes_per_token == DS_MLA_PER_TOKEN and s.kda_state_bytes == 0


def test_cache_at_context():
    k3, ds = _load("kimi-k3"), _load("deepseek-v3")
    assert k3.cache_at(1_048_576) == 27_648 * 1_048_576 + 434_110_464  # 29,425,139,712 B ≈ 27.4 GiB
    assert ds.cache_at(131_072) == 70_272 * 131_072
    assert k3.cache_at(1024) > ds.cache_at(1024)  # the fixed KDA state dominates at short context
    assert k3.cache_at(1_048_576) < ds.cache_at(1_048_576)


def test_crossover_k3_vs_deepseek():
    k3, ds = _load("kimi-k3"), _load("deepseek-v3")
    expected = 434_110_464 / (70_272 - 27_648)  # ≈ 10,184.9 tokens
    assert crossover(k3, ds) == pytest.approx(expected)
    assert crossover(ds, k3) == pytest.approx(expected)
    assert 10_184 < expected < 10_186
    assert k3.cache_at(expected) == pytest.approx(ds.cache_at(expected))


def test_crossover_kimi_linear_vs_k2():
    kl, k2 = _load("kimi-linear-48b"), _load("kimi-k2")
    assert kl.mla_bytes_per_token == KL_MLA_PER_TOKEN and kl.kda_state_bytes == KL_KDA_STATE
    assert crossover(kl, k2) == pytest.approx(41_943_040 / (70_272 - 8_064))


def test_never_cross():
    ds, k2 = _load("deepseek-v3"), _load("kimi-k2")
    assert crossover(ds, k2) is None  # same per-token cache, no state: identical lines
    k3, kl = _load("kimi-k3"), _load("kimi-linear-48b")
    assert crossover(k3, kl) is None  # K3 has more state and more cache per token: always above
    assert crossover(k3, k3) is None


def test_contexts_span():
    c = contexts()
    assert c[0] == 1024 and c[-1] == 1_048_576 and c == sorted(c)
