"""Model facts in one place, without torch: the toy widths the engine computes with (`ToyDims`) and the real
widths of a model the scene and the inspector label (`ModelDims`, read from a `compute.config.ModelConfig`).

    from compute.dims import ToyDims, ModelDims, OpArgs
    ModelDims.from_config(cfg).experts      # 896 for K3; cfg None = K3's shipped config
    OpArgs.of(cfg, ToyDims())               # what every operator reads (compute.ops.kda / mla / moe)

The toy engine (compute.engine.ToyK3) runs every layer at ToyDims' widths but with the config's real layer
order, expert count and top-k; the scene draws its grids at those sizes and labels them with ModelDims.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from compute.config import ModelConfig, default_config


@dataclass(frozen=True)
class ToyDims:
    hidden: int = 8
    kda_heads: int = 2
    kda_head_dim: int = 4
    mla_heads: int = 2
    q_lora: int = 4
    kv_lora: int = 3
    nope: int = 4
    rope: int = 2
    v: int = 4
    latent: int = 4
    expert_width: int = 4
    dense_width: int = 16
    conv: int = 4


@dataclass(frozen=True)
class OpArgs:
    """Everything the operators (compute.ops.kda.kda_layer, compute.ops.mla.mla_layer, compute.ops.moe.dense_mlp /
    latent_moe) read from the model, in one record, as DeepSeek-V3's reference passes one ModelArgs: the toy
    widths the engine computes at and the config's scalars. Built once per model by `OpArgs.of`; the defaults are
    ToyDims' widths with K3's settings (a test changes what it needs with dataclasses.replace)."""

    kda_heads: int = 2
    kda_head_dim: int = 4
    kda_lower_bound: float | None = -5.0  # None = Kimi Linear's softplus gate
    mla_heads: int = 2
    nope: int = 4
    rope: int = 2
    v: int = 4
    kv_lora: int = 3
    mla_gated: bool = True  # o ⊙ sigmoid(W_g x)
    rope_theta: float | None = None  # None = NoPE (K3): nothing rotated
    act: str = "situ_glu"  # "situ_glu" | "silu"
    beta1: float = 4.0  # SiTU-GLU's β₁, β₂
    beta2: float = 25.0
    top_k: int = 2
    routed_scaling_factor: float = 1.0
    n_group: int = 1
    topk_group: int = 1
    eps: float = 1e-6  # every RMSNorm's ε

    @classmethod
    def of(cls, config: ModelConfig, dims: ToyDims | None = None) -> "OpArgs":
        """The operators' record of `config` at the toy widths `dims` (None = ToyDims())."""
        c, d = config, dims or ToyDims()
        return cls(kda_heads=d.kda_heads, kda_head_dim=d.kda_head_dim, kda_lower_bound=c.kda_gate_lower_bound,
                   mla_heads=d.mla_heads, nope=d.nope, rope=d.rope, v=d.v, kv_lora=d.kv_lora,
                   mla_gated=c.mla_output_gate is not None,
                   rope_theta=float(c.raw.get("rope_theta", 10000.0)) if c.mla_use_rope else None,
                   act=c.hidden_act, beta1=float(c.situ_glu_beta1), beta2=float(c.situ_glu_beta2),
                   top_k=c.num_experts_per_tok, routed_scaling_factor=float(c.routed_scaling_factor),
                   n_group=c.n_group, topk_group=c.topk_group, eps=float(c.rms_norm_eps))


@functools.lru_cache(maxsize=1)
def _default_config() -> ModelConfig:
    return default_config()


@dataclass(frozen=True)
class ModelDims:
    """The real widths of one model (K3: hidden 7,168, 896 experts ...), as its labels show them."""

    name: str  # the config's id ("kimi-k3")
    display_name: str  # what texts call the model ("Kimi K3")
    n_layers: int
    hidden: int
    vocab: int
    dense_width: int
    mixers: tuple[str, ...]  # "kda" | "mla", one per layer (0-based)
    ffns: tuple[str, ...]  # "dense" | "moe", one per layer
    kda_heads: int  # 0 when the model has no KDA layers
    kda_dim: int
    conv: int
    mla_heads: int
    q_lora: int  # 0 = no query compression
    kv_lora: int
    nope: int
    rope: int
    v: int
    mla_gate: bool
    experts: int
    topk: int
    shared: int
    expert_width: int
    latent: int  # = hidden when the MoE has no latent projection
    block_size: int  # AttnRes block size; 0 = plain residuals

    @classmethod
    def from_config(cls, cfg: ModelConfig | None) -> "ModelDims":
        """The dims of `cfg` (None = K3's shipped config)."""
        c = _default_config() if cfg is None else cfg
        if not isinstance(c, ModelConfig):
            raise TypeError(f"expected a compute.config.ModelConfig, got {type(c).__name__}")
        return cls(
            name=c.name, display_name=c.display_name, n_layers=c.num_hidden_layers, hidden=c.hidden_size,
            vocab=c.vocab_size, dense_width=c.intermediate_size, mixers=tuple(c.mixer_types), ffns=tuple(c.ffn_types),
            kda_heads=c.kda_num_heads or 0, kda_dim=c.kda_head_dim or 0, conv=c.kda_conv_size or 0,
            mla_heads=c.num_attention_heads, q_lora=c.q_lora_rank or 0, kv_lora=c.kv_lora_rank,
            nope=c.qk_nope_head_dim, rope=c.qk_rope_head_dim, v=c.v_head_dim, mla_gate=c.mla_output_gate is not None,
            experts=c.n_routed_experts, topk=c.num_experts_per_tok, shared=c.n_shared_experts,
            expert_width=c.moe_intermediate_size, latent=c.moe_latent_size or c.hidden_size,
            block_size=c.attn_res_block_size or 0)
