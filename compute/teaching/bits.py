"""BF16 and float32 bit arithmetic for the "BF16 bits" view (docs/spec/k3-math.md §6). Pure Python + numpy.

BF16 = sign 1 | exponent 8 (bias 127) | mantissa 7: the top 16 bits of an IEEE-754 float32, obtained by
round-to-nearest-even on the 16 dropped bits (what torch's float32 -> bfloat16 conversion does).

    bf16_fields(0.75)        -> (0, 126, 64)        # 0 01111110 1000000
    bf16_value(0, 126, 64)   -> 0.75
    bf16_rounding(1.00390625) -> dict with the float32 bits, the dropped half and the decision taken
"""
from __future__ import annotations

import math
import struct

SIGN_BITS, EXPONENT_BITS, MANTISSA_BITS = 1, 8, 7
BIAS = 127
BF16_QUIET_NAN = 0x7FC0  # the NaN torch produces (sign 0, exponent 255, mantissa 0b1000000)


def float32_bits(x: float) -> int:
    """The 32-bit pattern of x after conversion to float32 (overflow -> ±inf, as numpy/torch do)."""
    try:
        packed = struct.pack(">f", x)
    except OverflowError:  # |x| beyond float32 range: IEEE conversion gives ±inf
        packed = struct.pack(">f", math.copysign(math.inf, x))
    return struct.unpack(">I", packed)[0]


def float32_from_bits(bits: int) -> float:
    return struct.unpack(">f", struct.pack(">I", bits & 0xFFFFFFFF))[0]


def bf16_bits(x: float) -> int:
    """16-bit BF16 pattern of x: float32, then round to nearest even on the low 16 bits. NaN -> 0x7FC0. Overflow of the rounding carries into the exponent and gives ±inf, as IEEE requires."""
    b32 = float32_bits(x)
    if (b32 & 0x7FFFFFFF) > 0x7F800000:  # any NaN -> canonical quiet NaN (c10's scalar path; torch's vectorised
        # CPU path gives 0xFFFF: the NaN payload is implementation-defined, only "exponent 255, mantissa != 0" is)
        return BF16_QUIET_NAN
    lower = b32 & 0xFFFF
    upper = b32 >> 16
    if lower > 0x8000 or (lower == 0x8000 and upper & 1):
        upper += 1
    return upper & 0xFFFF


def split_bf16(bits: int) -> tuple[int, int, int]:
    """16-bit pattern -> (sign, exponent, mantissa)."""
    return (bits >> 15) & 1, (bits >> 7) & 0xFF, bits & 0x7F


def join_bf16(sign: int, exponent: int, mantissa: int) -> int:
    """(sign, exponent, mantissa) -> 16-bit pattern; fields are range-checked."""
    if sign not in (0, 1) or not 0 <= exponent <= 0xFF or not 0 <= mantissa <= 0x7F:
        raise ValueError(f"BF16 fields out of range: sign {sign}, exponent {exponent}, mantissa {mantissa}")
    return (sign << 15) | (exponent << 7) | mantissa


def bf16_fields(x: float) -> tuple[int, int, int]:
    """(sign, exponent, mantissa) of x rounded to BF16 (x is first converted to float32)."""
    return split_bf16(bf16_bits(x))


def bf16_value(sign: int, exponent: int, mantissa: int) -> float:
    """The number a BF16 pattern means:
    exponent 255: ±inf (mantissa 0) or NaN; exponent 0: (-1)^s · (m/128) · 2^-126 (zero / subnormal);
    otherwise (-1)^s · (1 + m/128) · 2^(e-127)."""
    join_bf16(sign, exponent, mantissa)  # range check
    s = -1.0 if sign else 1.0
    if exponent == 0xFF:
        return s * math.inf if mantissa == 0 else math.nan
    if exponent == 0:
        return s * (mantissa / 128.0) * 2.0**-126
    return s * (1.0 + mantissa / 128.0) * 2.0 ** (exponent - BIAS)


def bf16_from_bits(bits: int) -> float:
    return bf16_value(*split_bf16(bits))


def classify(sign: int, exponent: int, mantissa: int) -> str:
    """One of 'zero', 'subnormal', 'normal', 'inf', 'nan' (sign reported separately)."""
    if exponent == 0xFF:
        return "inf" if mantissa == 0 else "nan"
    if exponent == 0:
        return "zero" if mantissa == 0 else "subnormal"
    return "normal"


def bf16_rounding(x: float) -> dict:
    """How float32 x becomes BF16. Keys: f32_bits, f32_value, upper (kept 16 bits before rounding), lower
    (dropped 16 bits), decision in {'exact', 'down', 'up', 'tie_even_down', 'tie_even_up', 'nan'}, bf16_bits,
    bf16_value, error (bf16 - f32, float)."""
    b32 = float32_bits(x)
    f32 = float32_from_bits(b32)
    upper, lower = b32 >> 16, b32 & 0xFFFF
    b16 = bf16_bits(x)
    if math.isnan(f32):
        decision = "nan"
    elif lower == 0:
        decision = "exact"
    elif lower < 0x8000:
        decision = "down"
    elif lower > 0x8000:
        decision = "up"
    else:
        decision = "tie_even_up" if upper & 1 else "tie_even_down"
    v16 = bf16_from_bits(b16)
    if math.isfinite(v16) and math.isfinite(f32):
        error = v16 - f32
    else:
        error = 0.0 if (v16 == f32 or (math.isnan(v16) and math.isnan(f32))) else math.inf
    return {"f32_bits": b32, "f32_value": f32, "upper": upper, "lower": lower, "decision": decision,
            "bf16_bits": b16, "bf16_value": v16, "error": error}


# --- computed facts (never typed) ----------------------------------------------------------------------
def bytes_for(n_values: int, bits_per_value: int = 16) -> int:
    """Bytes needed to store n_values numbers of bits_per_value bits each (e.g. a 7,168-wide BF16 row)."""
    if n_values < 0 or bits_per_value <= 0:
        raise ValueError("n_values must be >= 0 and bits_per_value > 0")
    return (n_values * bits_per_value + 7) // 8


def bf16_facts() -> dict[str, float]:
    """Extremes of the format, computed from bf16_value: largest finite, smallest normal, smallest subnormal,
    the gap after 1.0 (machine epsilon)."""
    return {
        "max_finite": bf16_value(0, 0xFE, 0x7F),
        "min_normal": bf16_value(0, 1, 0),
        "min_subnormal": bf16_value(0, 0, 1),
        "epsilon": bf16_value(0, BIAS, 1) - 1.0,
    }
