"""Canonical block kinds of the 3D scene (the ids every part of the app agrees on).

A block kind names one drawn tensor / operator. Per-layer kinds are also the keys of
`compute.trace.LayerTrace.tensors`; a concrete block id in the layout is "L{layer}/{kind}" (layer 1-based)
or just "{kind}" for global blocks. Explanation texts live in assets/texts/{lang}/block/{kind}.md and UI
names in the i18n catalogue under "block.{kind}".

Kinds are grouped by family (the colour role and the mesh family in scene/).
"""
from __future__ import annotations

GLOBAL_KINDS: tuple[str, ...] = (
    "embedding",  # token -> embedding row (bottom of the stack)
    "stack.layer",  # one slab of the 93-layer stack
    "stack.attnres_bracket",  # the AttnRes block bracket every 12 layers
    "final.attnres",  # AttnRes over the 9 stored candidates before the final norm
    "final.norm",  # final RMSNorm
    "lm_head",  # W_lm: hidden -> vocab logits
    "sampling",  # temperature / top-p -> sampled token
)

COMMON_KINDS: tuple[str, ...] = (
    "attnres.mixer", "norm.mixer", "mixer.out",
    "attnres.ffn", "norm.ffn", "ffn.out", "residual",
)

KDA_KINDS: tuple[str, ...] = (
    "kda.q_proj", "kda.k_proj", "kda.v_proj",
    "kda.q_conv", "kda.k_conv", "kda.v_conv",
    "kda.q_norm", "kda.k_norm",
    "kda.f", "kda.alpha", "kda.beta", "kda.state",
    "kda.o", "kda.gate", "kda.o_norm", "kda.o_proj",
)

MLA_KINDS: tuple[str, ...] = (
    "mla.q_a", "mla.q_a_norm", "mla.q_b", "mla.kv_a", "mla.c_kv", "mla.k_rope", "mla.kv_b",
    "mla.scores", "mla.softmax", "mla.o", "mla.gate", "mla.o_gated", "mla.o_proj",
)

MOE_KINDS: tuple[str, ...] = (
    "moe.router", "moe.experts", "moe.shared", "moe.down", "moe.mix", "moe.norm", "moe.up",
)

DENSE_KINDS: tuple[str, ...] = ("mlp.gate", "mlp.up", "mlp.act", "mlp.down")

ALL_KINDS: tuple[str, ...] = GLOBAL_KINDS + COMMON_KINDS + KDA_KINDS + MLA_KINDS + MOE_KINDS + DENSE_KINDS


def mixer_key(mixer: str, mla_gate: bool) -> str:
    """The catalogue suffix naming a layer's mixer for a model: "kda", "mla" (Gated MLA: K3, with its sigmoid
    output gate) or "mla_plain" (MLA without a gate: Kimi K2, DeepSeek-V3, Kimi Linear)."""
    return "mla_plain" if mixer == "mla" and not mla_gate else mixer


def label_key(kind: str, dims) -> str:
    """The catalogue key of a block kind's name in a model (`dims`: compute.dims.ModelDims): an MLA without query
    compression (q_lora_rank null, Kimi Linear) projects x straight to the heads' queries with W_q, not W_qb."""
    if kind == "mla.q_b" and not dims.q_lora:
        return "block.mla.q_direct"
    return f"block.{kind}"


def formula_key(kind: str, dims) -> str:
    """The catalogue key of a block kind's formula in a model (see `label_key`)."""
    if kind == "mla.q_b" and not dims.q_lora:
        return "scene.formula.mla.q_direct"
    return f"scene.formula.{kind}"
