"""Compare two models (feature B1): stack facts, parameters, experts and per-token cache memory. Pure Python.

Cache arithmetic is compute.teaching.memory's (`CacheShape.from_config` + `cache_bytes`): the MLA latent cache grows with
context, the KDA state is constant, so cache(L) = mla_per_token × L + kda_per_sequence. Two such lines cross at
L* = (kda_B − kda_A) / (mla_A − mla_B) when that is a positive context length; otherwise they never cross.
"""
from __future__ import annotations

from dataclasses import dataclass

from compute.config import ModelConfig
from compute.teaching.memory import CacheBytes, CacheShape, cache_bytes

MIN_CONTEXT = 1_024
MAX_CONTEXT = 1_048_576


@dataclass(frozen=True)
class ModelSummary:
    name: str
    display_name: str
    layers: int
    kda_layers: int
    mla_layers: int
    pattern: str  # one letter per layer: K = KDA, M = MLA
    dense_layers: int
    moe_layers: int
    routed_experts: int
    shared_experts: int
    top_k: int
    attn_res: bool
    attn_res_block_size: int | None
    total_params_billion: float | None
    active_params_billion: float | None
    mla_bytes_per_token: float  # all MLA layers, BF16 cache
    kda_state_bytes: float  # all KDA layers, fp32 state, constant in context

    def cache_at(self, context: int) -> float:
        """Bytes of one sequence's caches at `context` tokens."""
        return self.mla_bytes_per_token * context + self.kda_state_bytes


def model_cache(cfg: ModelConfig, cache_bytes_per_number: float = 2, state_bytes_per_number: float = 4) -> CacheBytes:
    return cache_bytes(CacheShape.from_config(cfg), cache_bytes_per_number, state_bytes_per_number)


def layer_pattern(cfg: ModelConfig) -> str:
    return "".join("K" if m == "kda" else "M" for m in cfg.mixer_types)


def summarize(cfg: ModelConfig) -> ModelSummary:
    c = model_cache(cfg)
    moe = sum(1 for f in cfg.ffn_types if f == "moe")
    return ModelSummary(
        name=cfg.name, display_name=cfg.display_name, layers=cfg.num_hidden_layers,
        kda_layers=len(cfg.kda_layers), mla_layers=len(cfg.mla_layers), pattern=layer_pattern(cfg),
        dense_layers=cfg.num_hidden_layers - moe, moe_layers=moe,
        routed_experts=cfg.n_routed_experts if moe else 0, shared_experts=cfg.n_shared_experts if moe else 0,
        top_k=cfg.num_experts_per_tok if moe else 0, attn_res=bool(cfg.attn_res_block_size),
        attn_res_block_size=cfg.attn_res_block_size or None,
        total_params_billion=cfg.total_params_billion, active_params_billion=cfg.active_params_billion,
        mla_bytes_per_token=c.mla_per_token, kda_state_bytes=c.kda_per_sequence)


def crossover(a: ModelSummary, b: ModelSummary) -> float | None:
    """Context length (tokens, may be fractional) where a's cache equals b's; None if the lines never cross at a
    positive length (parallel, identical or crossing at L ≤ 0)."""
    slope = a.mla_bytes_per_token - b.mla_bytes_per_token
    if slope == 0:
        return None
    length = (b.kda_state_bytes - a.kda_state_bytes) / slope
    return length if length > 0 else None


def contexts(points: int = 61, lo: int = MIN_CONTEXT, hi: int = MAX_CONTEXT) -> list[int]:
    """Log-spaced context lengths lo…hi inclusive (for the plot)."""
    if points < 2:
        return [lo]
    ratio = (hi / lo) ** (1 / (points - 1))
    return [round(lo * ratio**i) for i in range(points)]
