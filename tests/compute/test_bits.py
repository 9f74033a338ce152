"""BF16 fields / value against torch.bfloat16 (an independent implementation) and hand-written patterns."""
import math
import struct

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from compute.teaching import bits


def torch_bf16_bits(x: float) -> int:
    t = torch.tensor([x], dtype=torch.float32).to(torch.bfloat16)
    return int(t.view(torch.int16).item()) & 0xFFFF


def torch_bf16_value(x: float) -> float:
    return float(torch.tensor([x], dtype=torch.float32).to(torch.bfloat16).to(torch.float64).item())


def f32_from_bits(b: int) -> float:
    return struct.unpack(">f", struct.pack(">I", b))[0]


EDGE = [0.0, -0.0, 0.75, 1.0, -1.0, 2.0, 0.1, -3.14159, 1e-40, -1e-40, 1.17549435e-38, 9.1835e-41, 3.3895e38,
        3.4e38, -3.4028235e38, 65504.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-7 + 2**-8, math.inf, -math.inf,
        f32_from_bits(0x3F808000),  # exact tie, even upper half -> stays
        f32_from_bits(0x3F818000),  # exact tie, odd upper half -> rounds up
        f32_from_bits(0x7F7FFFFF),  # float32 max -> rounds up into inf
        f32_from_bits(0x00000001),  # smallest float32 subnormal -> 0
        f32_from_bits(0x00008000),  # subnormal tie
        f32_from_bits(0x00018000)]


@pytest.mark.parametrize("x", EDGE)
def test_fields_match_torch_on_edge_cases(x):
    assert bits.join_bf16(*bits.bf16_fields(x)) == torch_bf16_bits(x)
    v = bits.bf16_value(*bits.bf16_fields(x))
    ref = torch_bf16_value(x)
    assert v == ref and math.copysign(1, v) == math.copysign(1, ref)


def test_hand_written_patterns():
    # 0.75 = 1.1b × 2^-1 -> sign 0, exponent 126 = 0b01111110, mantissa 0b1000000
    assert bits.bf16_fields(0.75) == (0, 0b01111110, 0b1000000)
    assert bits.bf16_value(0, 126, 64) == 0.75
    assert bits.bf16_fields(-2.0) == (1, 128, 0)
    assert bits.bf16_fields(-0.0) == (1, 0, 0)
    assert bits.bf16_fields(math.inf) == (0, 255, 0)
    assert bits.bf16_fields(-math.inf) == (1, 255, 0)
    s, e, m = bits.bf16_fields(math.nan)
    assert e == 255 and m != 0 and math.isnan(bits.bf16_value(s, e, m))
    # smallest subnormal 2^-133 = 2^-126 × 1/128
    assert bits.bf16_value(0, 0, 1) == 2.0**-133
    # 1 + 2^-8 is exactly half way between 1 and 1 + 2^-7: tie to even keeps mantissa 0
    assert bits.bf16_fields(1.0 + 2**-8) == (0, 127, 0)
    # 1 + 3·2^-8 is half way between mantissa 1 and 2: tie to even goes to 2
    assert bits.bf16_fields(1.0 + 3 * 2**-8) == (0, 127, 2)


def test_nan_matches_torch_in_kind():
    for payload in (0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF):
        x = f32_from_bits(payload)
        ours = bits.bf16_bits(x)
        ref = torch_bf16_bits(x)
        assert (ours >> 7) & 0xFF == (ref >> 7) & 0xFF == 0xFF
        assert ours & 0x7F and ref & 0x7F


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=0xFFFFFFFF))
def test_every_float32_pattern_rounds_like_torch(pattern):
    x = f32_from_bits(pattern)
    if math.isnan(x):
        assert math.isnan(bits.bf16_value(*bits.bf16_fields(x)))
        return
    assert bits.bf16_bits(x) == torch_bf16_bits(x)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, width=64))
def test_python_floats_round_like_torch(x):
    assert bits.bf16_value(*bits.bf16_fields(x)) == torch_bf16_value(x)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 1), st.integers(0, 254), st.integers(0, 127))
def test_value_of_every_finite_pattern_matches_torch(s, e, m):
    pattern = bits.join_bf16(s, e, m)
    ref = torch.tensor([pattern], dtype=torch.int32).to(torch.int16).view(torch.bfloat16).to(torch.float64).item()
    assert bits.bf16_value(s, e, m) == ref
    assert bits.bf16_fields(ref) == (s, e, m)  # exact values round-trip


def test_rounding_report():
    r = bits.bf16_rounding(f32_from_bits(0x3F818000))
    assert (r["upper"], r["lower"], r["decision"], r["bf16_bits"]) == (0x3F81, 0x8000, "tie_even_up", 0x3F82)
    assert bits.bf16_rounding(0.75)["decision"] == "exact"
    r = bits.bf16_rounding(0.1)  # float32 0.1 = 0x3DCCCCCD; lower 0xCCCD > 0x8000 -> up to 0x3DCD
    assert (r["f32_bits"], r["decision"], r["bf16_bits"]) == (0x3DCCCCCD, "up", 0x3DCD)
    assert bits.bf16_rounding(math.nan)["decision"] == "nan"
    assert bits.bf16_rounding(1e39)["f32_bits"] == 0x7F800000  # beyond float32 -> inf


def test_facts_are_computed_by_hand():
    assert bits.bytes_for(7168) == 14_336
    assert bits.bytes_for(4096) == 8_192
    f = bits.bf16_facts()
    assert f["epsilon"] == 2.0**-7
    assert f["min_normal"] == 2.0**-126
    assert f["min_subnormal"] == 2.0**-133
    assert f["max_finite"] == (2 - 2**-7) * 2.0**127
    assert f["max_finite"] == float(torch.finfo(torch.bfloat16).max)


def test_out_of_range_fields_raise():
    with pytest.raises(ValueError):
        bits.bf16_value(2, 0, 0)
    with pytest.raises(ValueError):
        bits.bf16_value(0, 256, 0)
    with pytest.raises(ValueError):
        bits.bf16_value(0, 0, 128)
