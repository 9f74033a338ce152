"""Memory calculator: the seed's numbers and K3's formulas, every expectation worked out by hand below."""
import pytest

from compute.teaching import memory as mem


def test_seed_defaults_reproduce_the_seed():
    r = mem.estimate(7, 2, 4096, 32, 4096, 8, 1, 1)
    # weights: 7e9 params × 2 B = 14e9 B = 14.00 GB (decimal)
    assert r["weights_gb"] == pytest.approx(14.0)
    # KV: 2 × 32 layers × 4096 tokens × 1 × 8 heads × (4096/32 = 128) × 2 B = 536,870,912 B = 0.5 GiB
    assert r["head_dim"] == 128
    assert r["kv_bytes"] == 536_870_912
    assert r["kv_gib"] == pytest.approx(0.5)
    # total: 14e9 / 1,073,741,824 = 13.0385 GiB + 0.5 = 13.5385 -> "13.54"
    assert r["total_gib"] == pytest.approx(13.538516, abs=1e-6)
    assert f"{r['weights_gb']:.2f} {r['kv_gib']:.2f} {r['total_gib']:.2f} {r['per_gpu_gib']:.2f}" == \
        "14.00 0.50 13.54 13.54"
    assert r["fits"]  # 13.54 GiB <= 80e9 B = 74.51 GiB


def test_seed_scaling_by_hand():
    # 70B FP32 on 4 GPUs, 8192 tokens, 80 layers, d_model 8192 (head_dim 256), 8 KV heads, batch 2:
    # weights 70e9 × 4 = 280 GB; KV = 2 × 80 × 8192 × 2 × 8 × 256 × 2 = 10,737,418,240 B = 10 GiB
    r = mem.estimate(70, 4, 8192, 80, 8192, 8, 2, 4)
    assert r["weights_gb"] == pytest.approx(280.0)
    assert r["kv_gib"] == pytest.approx(10.0)
    total = 280e9 / 2**30 + 10  # 260.770 + 10
    assert r["total_gib"] == pytest.approx(total)
    assert r["per_gpu_gib"] == pytest.approx(total / 4)
    assert r["fits"]  # 67.69 GiB <= 74.51 GiB


def test_seed_fit_flag():
    assert mem.estimate(70, 4, 8192, 80, 8192, 8, 2, 4)["per_gpu_gib"] == pytest.approx(67.6926, abs=1e-4)
    assert mem.estimate(70, 4, 8192, 80, 8192, 8, 2, 4)["fits"] is True
    assert mem.estimate(70, 4, 8192, 80, 8192, 8, 2, 1)["fits"] is False  # 270.77 GiB > 74.51 GiB


@pytest.mark.parametrize("field,value,key", [
    ("params_billion", -1, "range"), ("tokens", 0, "range"), ("tokens", 1.5, "not_integer"),
    ("layers", "abc", "not_number"), ("d_model", 4010, "multiple_of"), ("kv_heads", 5, "divides"),
    ("kv_heads", 64, "range"), ("gpus", float("nan"), "not_number"), ("batch", 10**9, "range"),
])
def test_seed_inputs_validated(field, value, key):
    args = dict(params_billion=7, bytes_per_weight=2, tokens=4096, layers=32, d_model=4096, kv_heads=8, batch=1,
                gpus=1)
    args[field] = value
    with pytest.raises(mem.MemoryInputError) as e:
        mem.estimate(**args)
    assert e.value.field == field and e.value.key == key


def test_weight_formats_with_scale_overhead():
    assert mem.bytes_per_weight("bf16") == 2
    assert mem.bytes_per_weight("fp8") == 1 + 4 / 16384  # one fp32 scale per 128×128 block
    assert mem.bytes_per_weight("mxfp4") == 0.53125  # (4 + 8/32) bits / 8
    with pytest.raises(mem.MemoryInputError):
        mem.bytes_per_weight("int3")


def test_k3_cache_formulas_by_hand():
    # MLA: 576 numbers × 24 layers × 2 B = 27,648 B per token
    assert mem.mla_cache_bytes(1) == 27_648
    # KDA: 96 × 128 × 128 × 4 B = 6,291,456 B (6 MiB) per layer; × 69 = 434,110,464 B = 414 MiB
    assert mem.kda_state_bytes() == 434_110_464


def test_k3_estimate_by_hand():
    r = mem.k3_estimate(2800, "mxfp4", 1_048_576, 1, 8, 288)
    assert r["weights_gb"] == pytest.approx(1487.5)  # 2.8e12 × 0.53125 B
    assert r["mla_gib"] == pytest.approx(27.0)  # 27,648 B × 2^20 tokens = 27 × 2^30
    assert r["kda_gib"] == pytest.approx(414 / 1024)  # 414 MiB
    assert r["all_mla_gib"] == pytest.approx(104.625)  # 93 × 576 × 2 = 107,136 B/token × 2^20 / 2^30
    assert r["hbm_gb"] == pytest.approx(2304.0)  # 8 × 288 GB
    free = (2304e9 - 1487.5e9) / 2**30  # 760.42 GiB
    assert r["free_gib"] == pytest.approx(free)
    per_seq = 27.0 + 414 / 1024
    assert r["per_sequence_gib"] == pytest.approx(per_seq)
    assert r["max_sequences"] == 27  # 760.42 / 27.404 = 27.7
    assert r["fits"]
    assert r["total_gib"] == pytest.approx(1487.5e9 / 2**30 + per_seq)


def test_k3_concurrency_and_bf16_does_not_fit():
    # 10 sequences of 131,072 tokens: MLA 27,648 × 131,072 × 10 B = 33.75 GiB; KDA 10 × 414 MiB = 4.043 GiB
    r = mem.k3_estimate(2800, "bf16", 131_072, 10, 8, 288)
    assert r["mla_gib"] == pytest.approx(33.75)
    assert r["kda_gib"] == pytest.approx(4140 / 1024)
    assert r["weights_gb"] == pytest.approx(5600.0)
    assert not r["fits"] and r["max_sequences"] == 0


def test_k3_context_limit_validated():
    with pytest.raises(mem.MemoryInputError) as e:
        mem.k3_estimate(context=2_000_000)
    assert e.value.field == "context"
    with pytest.raises(mem.MemoryInputError):
        mem.k3_estimate(gpus=0)


def test_context_curve():
    c = mem.context_curve([1024, 1_048_576])
    assert c["mla_gib"] == pytest.approx([27 / 1024, 27.0])
    assert c["kda_gib"][0] == c["kda_gib"][1]  # constant in length
    assert c["all_mla_gib"][1] == pytest.approx(104.625)
    assert c["k3_gib"][1] == pytest.approx(27.0 + 414 / 1024)
