"""Memory arithmetic of the seed's calculator and of K3's caches (docs/spec/k3-math.md §6). Pure Python.

Seed calculator (a rough lower bound, not a measurement):
    weights (decimal GB) = params × bytes_per_weight
    KV (binary GiB)      = 2 × layers × tokens × batch × kv_heads × head_dim × bytes_per_kv,
                           head_dim = d_model / 32 (32 query heads assumed), bytes_per_kv = 2
    total (GiB)          = weights bytes / 2^30 + KV GiB;   per GPU = total / gpus (ideal even split)

K3 mode:
    weights              = params × bytes_per_weight(format)      (BF16 / FP8 + block scales / MXFP4 + E8M0 scales)
    MLA latent cache     = 576 numbers (kv_lora 512 + rope key 64) × 24 MLA layers × tokens × sequences × 2 B
    KDA state            = 96 heads × 128 × 128 × 4 B (fp32) × 69 KDA layers × sequences  (constant in length)

Every input is validated; a bad value raises `MemoryInputError(field, message_key, **limits)`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

GB = 1e9  # decimal gigabyte
GIB = 2**30  # binary gibibyte
SEED_QUERY_HEADS = 32
SEED_BYTES_PER_KV = 2

@dataclass(frozen=True)
class CacheShape:
    """What the cache arithmetic needs of a model: layer counts, MLA numbers cached per token and layer, the
    KDA state's heads and head size. `from_config` reads any ModelConfig; K3_SHAPE is the shipped K3 config's."""

    layers: int
    mla_layers: int
    kda_layers: int
    mla_numbers: int
    kda_heads: int
    kda_head_dim: int

    @classmethod
    def from_config(cls, cfg) -> "CacheShape":
        kda = sum(1 for m in cfg.mixer_types if m == "kda")
        return cls(layers=cfg.num_hidden_layers, mla_layers=sum(1 for m in cfg.mixer_types if m == "mla"),
                   kda_layers=kda, mla_numbers=cfg.kv_lora_rank + cfg.qk_rope_head_dim,
                   kda_heads=(cfg.kda_num_heads or 0) if kda else 0, kda_head_dim=(cfg.kda_head_dim or 0) if kda else 0)


@dataclass(frozen=True)
class CacheBytes:
    """A model's per-sequence cache, from `cache_bytes`: the MLA latent cache per token (all MLA layers) and the
    KDA state (all KDA layers, constant in length)."""

    mla_per_token: float
    kda_per_sequence: float

    def at(self, tokens: int, sequences: int = 1) -> float:
        """Both caches of `sequences` sequences of `tokens` tokens."""
        return (self.mla_per_token * tokens + self.kda_per_sequence) * sequences


def cache_bytes(shape: CacheShape, cache_bytes_per_number: float = 2, state_bytes_per_number: float = 4) -> CacheBytes:
    """The one cache formula every view uses (calculator, hierarchy, Learn, player):
        MLA latent cache per token = (kv_lora_rank + qk_rope_head_dim) × MLA layers × bytes   (BF16: 2)
        KDA state per sequence     = heads × d_k × d_v × KDA layers × bytes                   (fp32: 4)"""
    return CacheBytes(mla_cache_bytes(1, 1, shape.mla_layers, shape.mla_numbers, cache_bytes_per_number),
                      kda_state_bytes(1, shape.kda_layers, shape.kda_heads, shape.kda_head_dim, shape.kda_head_dim,
                                      state_bytes_per_number))


def _k3_config():
    from compute.config import default_config

    return default_config()


# K3's facts, read from its shipped config (assets/configs/kimi-k3.json; docs/spec/k3-math.md §0)
K3_SHAPE = CacheShape.from_config(_k3_config())
K3_PARAMS_BILLION = float(_k3_config().total_params_billion)
K3_MLA_LAYERS = K3_SHAPE.mla_layers
K3_KDA_LAYERS = K3_SHAPE.kda_layers
K3_KV_LORA_RANK = _k3_config().kv_lora_rank
K3_QK_ROPE_DIM = _k3_config().qk_rope_head_dim
K3_MLA_NUMBERS_PER_TOKEN = K3_SHAPE.mla_numbers  # numbers cached per token per MLA layer
K3_KDA_HEADS = K3_SHAPE.kda_heads
K3_KDA_HEAD_DIM = K3_SHAPE.kda_head_dim
K3_MAX_CONTEXT = _k3_config().max_position_embeddings

# name -> (bits per element, scale bits, elements per scale); scale bits 0 = no scales
WEIGHT_FORMATS: dict[str, tuple[int, int, int]] = {
    "bf16": (16, 0, 1),
    "fp8": (8, 32, 128 * 128),  # E4M3 + one fp32 scale per 128×128 block (DeepSeek-V3 style)
    "mxfp4": (4, 8, 32),  # OCP MX: E2M1 elements + one E8M0 scale per 32 elements
}
SEED_PRECISIONS: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp8": 1.0, "int4": 0.5}


class MemoryInputError(ValueError):
    """A calculator input out of range. `field` names the input, `key` is an i18n message key suffix and
    `limits` the numbers the message needs."""

    def __init__(self, field: str, key: str, **limits):
        self.field, self.key, self.limits = field, key, limits
        super().__init__(f"{field}: {key} {limits}")


def _number(field: str, value, lo: float, hi: float, integer: bool) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise MemoryInputError(field, "not_number") from None
    if not math.isfinite(v):
        raise MemoryInputError(field, "not_number")
    if integer and v != int(v):
        raise MemoryInputError(field, "not_integer")
    if v < lo or v > hi:
        raise MemoryInputError(field, "range", lo=lo, hi=hi)
    return int(v) if integer else v


# field -> (min, max, integer)
SEED_LIMITS: dict[str, tuple[float, float, bool]] = {
    "params_billion": (0.001, 100_000, False),
    "bytes_per_weight": (0.125, 8, False),
    "tokens": (1, 100_000_000, True),
    "layers": (1, 1000, True),
    "d_model": (32, 1_048_576, True),
    "kv_heads": (1, SEED_QUERY_HEADS, True),
    "batch": (1, 1_000_000, True),
    "gpus": (1, 100_000, True),
    "gpu_gb": (1, 10_000, False),
}

def _config_params_range() -> tuple[float, float]:
    """The total_params_billion a model config may hold (compute.config.LIMITS): the K3-mode calculator takes
    every value the config loader accepts, so opening any loadable model never fails here."""
    from compute.config import LIMITS

    return LIMITS["total_params_billion"]


K3_LIMITS: dict[str, tuple[float, float, bool]] = {
    "params_billion": (*_config_params_range(), False),
    "context": (1, K3_MAX_CONTEXT, True),
    "concurrency": (1, 1_000_000, True),
    "gpus": (1, 100_000, True),
    "hbm_gb": (1, 10_000, False),
    "cache_bytes": (0.5, 4, False),
}


def validate(limits: dict[str, tuple[float, float, bool]], **values) -> dict:
    """Check each value against limits; return them converted (int / float). Raises MemoryInputError."""
    return {name: _number(name, values[name], *limits[name]) for name in values}


def check_seed_field(name: str, value):
    """Validate one seed-calculator input, including the head rules (d_model a multiple of the 32 query
    heads, KV heads a divisor of 32). Returns the converted value or raises MemoryInputError."""
    v = _number(name, value, *SEED_LIMITS[name])
    if name == "d_model" and v % SEED_QUERY_HEADS:
        raise MemoryInputError("d_model", "multiple_of", n=SEED_QUERY_HEADS)
    if name == "kv_heads" and SEED_QUERY_HEADS % v:
        raise MemoryInputError("kv_heads", "divides", n=SEED_QUERY_HEADS)
    return v


def estimate(params_billion, bytes_per_weight, tokens, layers, d_model, kv_heads, batch, gpus, gpu_gb=80) -> dict:
    """The seed calculator. Returns weights_gb, kv_gib, total_gib, per_gpu_gib, plus head_dim, weights_bytes,
    kv_bytes, gpu_gib (one GPU's memory in GiB) and fits (per-GPU share <= one GPU)."""
    raw = dict(params_billion=params_billion, bytes_per_weight=bytes_per_weight, tokens=tokens, layers=layers,
               d_model=d_model, kv_heads=kv_heads, batch=batch, gpus=gpus, gpu_gb=gpu_gb)
    v = {name: check_seed_field(name, value) for name, value in raw.items()}
    head_dim = v["d_model"] // SEED_QUERY_HEADS
    weights_bytes = v["params_billion"] * 1e9 * v["bytes_per_weight"]
    kv_bytes = 2 * v["layers"] * v["tokens"] * v["batch"] * v["kv_heads"] * head_dim * SEED_BYTES_PER_KV
    total_gib = weights_bytes / GIB + kv_bytes / GIB
    per_gpu = total_gib / v["gpus"]
    gpu_gib = v["gpu_gb"] * GB / GIB
    return {"weights_gb": weights_bytes / GB, "kv_gib": kv_bytes / GIB, "total_gib": total_gib,
            "per_gpu_gib": per_gpu, "head_dim": head_dim, "weights_bytes": weights_bytes, "kv_bytes": kv_bytes,
            "gpu_gib": gpu_gib, "fits": per_gpu <= gpu_gib}


# --- K3 ---------------------------------------------------------------------------------------------------
def bytes_per_weight(fmt: str) -> float:
    """Average bytes per weight including scale overhead: (element_bits + scale_bits / block) / 8.
    bf16 -> 2, fp8 -> 1 + 4/16384, mxfp4 -> (4 + 8/32)/8 = 0.53125."""
    if fmt not in WEIGHT_FORMATS:
        raise MemoryInputError("weight_format", "unknown_format")
    bits, scale_bits, block = WEIGHT_FORMATS[fmt]
    return (bits + scale_bits / block) / 8


def mla_cache_bytes(tokens: int, sequences: int = 1, layers: int = K3_MLA_LAYERS,
                    numbers_per_token: int = K3_MLA_NUMBERS_PER_TOKEN, bytes_per_number: float = 2) -> float:
    """Latent KV cache c_kv + rope key k_pe of Gated MLA: numbers_per_token × layers × tokens × sequences × B."""
    return numbers_per_token * layers * tokens * sequences * bytes_per_number


def kda_state_bytes(sequences: int = 1, layers: int = K3_KDA_LAYERS, heads: int = K3_KDA_HEADS,
                    d_k: int = K3_KDA_HEAD_DIM, d_v: int = K3_KDA_HEAD_DIM, bytes_per_number: float = 4) -> float:
    """KDA recurrent state S [heads, d_k, d_v] in fp32 per layer per sequence; independent of length."""
    return heads * d_k * d_v * bytes_per_number * layers * sequences


def k3_estimate(params_billion=K3_PARAMS_BILLION, weight_format="mxfp4", context=K3_MAX_CONTEXT, concurrency=1,
                gpus=8, hbm_gb=288, cache_bytes=2, shape: CacheShape = K3_SHAPE) -> dict:
    """K3 serving memory: weights + MLA latent cache + KDA state for `concurrency` sequences of `context`
    tokens on `gpus` GPUs with `hbm_gb` (decimal GB) each. Returns GB/GiB figures, the per-sequence cache,
    the free memory after weights, the max number of such sequences that fit, and the cache a hypothetical
    all-MLA 93-layer model would need. `shape`: another model's layers and cache sizes (default K3's)."""
    v = validate(K3_LIMITS, params_billion=params_billion, context=context, concurrency=concurrency, gpus=gpus,
                 hbm_gb=hbm_gb, cache_bytes=cache_bytes)
    bpw = bytes_per_weight(weight_format)
    weights_bytes = v["params_billion"] * 1e9 * bpw
    mla_of = dict(layers=shape.mla_layers, numbers_per_token=shape.mla_numbers, bytes_per_number=v["cache_bytes"])
    kda_of = dict(layers=shape.kda_layers, heads=shape.kda_heads, d_k=shape.kda_head_dim, d_v=shape.kda_head_dim)
    mla = mla_cache_bytes(v["context"], v["concurrency"], **mla_of)
    kda = kda_state_bytes(v["concurrency"], **kda_of)
    per_seq = mla_cache_bytes(v["context"], 1, **mla_of) + kda_state_bytes(1, **kda_of)
    hbm_bytes = v["gpus"] * v["hbm_gb"] * GB
    free = hbm_bytes - weights_bytes
    total = weights_bytes + mla + kda
    all_mla = mla_cache_bytes(v["context"], v["concurrency"], layers=shape.layers, numbers_per_token=shape.mla_numbers,
                              bytes_per_number=v["cache_bytes"])
    return {
        "bytes_per_weight": bpw, "weights_gb": weights_bytes / GB, "weights_gib": weights_bytes / GIB,
        "mla_gib": mla / GIB, "kda_gib": kda / GIB, "cache_gib": (mla + kda) / GIB,
        "total_gib": total / GIB, "per_gpu_gib": total / GIB / v["gpus"],
        "hbm_gb": hbm_bytes / GB, "hbm_gib": hbm_bytes / GIB, "free_gib": free / GIB,
        "fits": total <= hbm_bytes, "per_sequence_gib": per_seq / GIB,
        "max_sequences": max(0, int(free // per_seq)) if free > 0 else 0,
        "all_mla_gib": all_mla / GIB,
        "mla_bytes_per_token": mla_cache_bytes(1, 1, **mla_of),
        "kda_bytes_per_sequence": kda_state_bytes(1, **kda_of),
    }


def context_curve(contexts, cache_bytes: float = 2, shape: CacheShape = K3_SHAPE) -> dict[str, list[float]]:
    """Per-sequence cache in GiB against context length: MLA latent cache (24 layers), KDA state (constant),
    K3 total (both), hypothetical all-MLA 93-layer model."""
    mla = [mla_cache_bytes(int(t), layers=shape.mla_layers, numbers_per_token=shape.mla_numbers,
                           bytes_per_number=cache_bytes) / GIB for t in contexts]
    kda_const = kda_state_bytes(1, layers=shape.kda_layers, heads=shape.kda_heads, d_k=shape.kda_head_dim,
                                d_v=shape.kda_head_dim) / GIB
    return {
        "context": [int(t) for t in contexts],
        "mla_gib": mla,
        "kda_gib": [kda_const] * len(mla),
        "k3_gib": [m + kda_const for m in mla],
        "all_mla_gib": [mla_cache_bytes(int(t), layers=shape.layers, numbers_per_token=shape.mla_numbers,
                                        bytes_per_number=cache_bytes) / GIB for t in contexts],
    }
