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


# ---------------------------------------------------------------------------------------------------------------
# The block-kind table: one entry per kind a trace block can have. `rows`/`cols` name what the axes
# of the tensor the inspector shows (a >2-D tensor flattened to [-1, last]) really are; `colour` names the rule
# scene/colouring.py applies; `features` the model features a kind needs (a model lacking one has no such block).

from dataclasses import dataclass, replace  # noqa: E402

# axis names (i18n keys "block_axis.{name}" in assets/i18n/block_kinds.*.json)
AXES: tuple[str, ...] = ("tokens", "cache", "heads", "head_query", "head_dk", "d_v", "channels", "experts",
                         "token_expert", "topk", "vocab", "candidates", "one")

# colour rules of scene/colouring.block_colors
COLOUR_RULES: tuple[str, ...] = ("diverging", "unit_ramp", "expert_weights", "router_stretch")


@dataclass(frozen=True)
class BlockKind:
    kind: str
    family: str  # embedding / kda / mla / moe / dense / attnres / norm / residual / head / sampling / stack
    station: str  # where in a layer it sits: global, mixer, ffn
    inputs: tuple[str, ...]  # kinds it reads
    rows: str  # one of AXES
    cols: str  # one of AXES
    colour: str = "diverging"  # one of COLOUR_RULES
    features: tuple[str, ...] = ()  # model features it needs: kda, mla, q_lora, mla_gate, moe, shared_experts,
    #                                   latent, dense, attnres (empty: every model); see `model_features`
    per_token: bool = False  # the scene draws one token's row of it as a grid (router scores, chosen experts)
    role: str = "activation"  # its colour role (scene/palette.py ROLES; "mixer": its layer's mixer colour)
    linear_in: str = ""  # y = x @ W: the kind whose rows are x (compute.trace.LINEAR_INPUTS), "" otherwise
    plate_in: str = ""  # the weight W drawn as a plate: what its rows are ("hidden" or a kind), "" for no plate
    values: str = "layer"  # where the inspector reads its values: layer (the layer's tensors), residual (the
    #                        layer's output), embedding, final (the pass's final tensors), probs, "" (none)
    real: str = ""  # its real size as the labels show it: a template over `real_size_args` ("{D} → {hk}")
    toy: tuple[str, ...] = ()  # its toy shape before a trace is there: names of `toy_size_args`

    @property
    def name_key(self) -> str:
        """The i18n key of the kind's name (see `label_key` for a model that builds it differently)."""
        return f"block.{self.kind}"

    @property
    def rows_are_tokens(self) -> bool:
        return self.rows == "tokens"


def _k(kind, family, station, inputs, rows="tokens", cols="channels", colour="diverging", features=(),
       per_token=False, role=None, linear_in="", plate_in="", values=None):
    if role is None:  # the family's colour
        role = {"kda": "kda", "mla": "mla", "moe": "expert", "dense": "dense", "attnres": "attnres", "norm": "norm",
                "embedding": "embedding", "head": "output", "sampling": "output"}.get(family, "activation")
    if values is None:
        values = "layer" if station != "global" else ""
    return BlockKind(kind, family, station, tuple(inputs), rows, cols, colour, tuple(features), per_token, role,
                     linear_in, plate_in, values)


_ENTRIES = (
    _k("embedding", "embedding", "global", (), features=(), values="embedding"),
    _k("stack.layer", "stack", "global", ("residual",), role="mixer", values="residual"),
    _k("stack.attnres_bracket", "attnres", "global", (), "one", "one", features=("attnres",)),
    _k("final.attnres", "attnres", "global", ("residual",), "tokens", "candidates", features=("attnres",),
       values="final"),
    _k("final.norm", "norm", "global", ("residual", "final.attnres"), values="final"),
    _k("lm_head", "head", "global", ("final.norm",), "tokens", "vocab", values="final"),
    _k("sampling", "sampling", "global", ("lm_head",), "one", "vocab", values="probs"),
    # every layer
    _k("attnres.mixer", "attnres", "mixer", ("residual",), "tokens", "candidates", "unit_ramp", ("attnres",)),
    _k("attnres.mixer.out", "attnres", "mixer", ("attnres.mixer",), features=("attnres",)),
    _k("norm.mixer", "norm", "mixer", ("residual",)),
    _k("mixer.out", "residual", "mixer", ("kda.o_proj", "mla.o_proj")),
    _k("attnres.ffn", "attnres", "ffn", ("residual",), "tokens", "candidates", "unit_ramp", ("attnres",)),
    _k("attnres.ffn.out", "attnres", "ffn", ("attnres.ffn",), features=("attnres",)),
    _k("norm.ffn", "norm", "ffn", ("mixer.out",)),
    _k("ffn.out", "residual", "ffn", ("mlp.down", "moe.mix")),
    _k("residual", "residual", "ffn", ("ffn.out",)),
    # KDA
    _k("kda.q_proj", "kda", "mixer", ("norm.mixer",), features=("kda",), linear_in="norm.mixer", plate_in="hidden"),
    _k("kda.k_proj", "kda", "mixer", ("norm.mixer",), features=("kda",), linear_in="norm.mixer", plate_in="hidden"),
    _k("kda.v_proj", "kda", "mixer", ("norm.mixer",), features=("kda",), linear_in="norm.mixer", plate_in="hidden"),
    _k("kda.q_conv", "kda", "mixer", ("kda.q_proj",), features=("kda",)),
    _k("kda.k_conv", "kda", "mixer", ("kda.k_proj",), features=("kda",)),
    _k("kda.v_conv", "kda", "mixer", ("kda.v_proj",), features=("kda",)),
    _k("kda.q_norm", "kda", "mixer", ("kda.q_conv",), features=("kda",), role="norm"),
    _k("kda.k_norm", "kda", "mixer", ("kda.k_conv",), features=("kda",), role="norm"),
    _k("kda.f", "kda", "mixer", ("norm.mixer",), features=("kda",)),
    _k("kda.alpha", "kda", "mixer", ("kda.f",), colour="unit_ramp", features=("kda",)),
    _k("kda.beta", "kda", "mixer", ("norm.mixer",), "tokens", "heads", "unit_ramp", ("kda",)),
    _k("kda.state", "kda", "mixer", ("kda.q_norm", "kda.k_norm", "kda.v_conv", "kda.alpha", "kda.beta"),
       "head_dk", "d_v", features=("kda",), role="state"),
    _k("kda.o", "kda", "mixer", ("kda.state", "kda.q_norm"), features=("kda",)),
    _k("kda.gate", "kda", "mixer", ("norm.mixer",), colour="unit_ramp", features=("kda",)),
    _k("kda.o_norm", "kda", "mixer", ("kda.o", "kda.gate"), features=("kda",), role="norm"),
    _k("kda.o_proj", "kda", "mixer", ("kda.o_norm",), features=("kda",), linear_in="kda.o_norm",
       plate_in="kda.o_norm"),
    # MLA
    _k("mla.q_a", "mla", "mixer", ("norm.mixer",), features=("mla", "q_lora"), linear_in="norm.mixer",
       plate_in="hidden"),
    _k("mla.q_a_norm", "mla", "mixer", ("mla.q_a",), features=("mla", "q_lora"), role="norm"),
    _k("mla.q_b", "mla", "mixer", ("mla.q_a_norm",), features=("mla",), linear_in="mla.q_a_norm", plate_in="mla.q_a"),
    _k("mla.kv_a", "mla", "mixer", ("norm.mixer",), features=("mla",), linear_in="norm.mixer", plate_in="hidden"),
    _k("mla.c_kv", "mla", "mixer", ("mla.kv_a",), "cache", features=("mla",), role="state"),
    _k("mla.k_rope", "mla", "mixer", ("mla.kv_a",), "cache", features=("mla",), role="state"),
    _k("mla.kv_b", "mla", "mixer", ("mla.c_kv",), "cache", features=("mla",)),
    _k("mla.scores", "mla", "mixer", ("mla.q_b", "mla.kv_b", "mla.k_rope"), "head_query", "cache",
       features=("mla",)),
    _k("mla.softmax", "mla", "mixer", ("mla.scores",), "head_query", "cache", "unit_ramp", ("mla",)),
    _k("mla.o", "mla", "mixer", ("mla.softmax", "mla.kv_b"), features=("mla",)),
    _k("mla.gate", "mla", "mixer", ("norm.mixer",), colour="unit_ramp", features=("mla", "mla_gate")),
    _k("mla.o_gated", "mla", "mixer", ("mla.o", "mla.gate"), features=("mla", "mla_gate")),
    _k("mla.o_proj", "mla", "mixer", ("mla.o_gated", "mla.o"), features=("mla",), linear_in="mla.o_gated",
       plate_in="mla.o"),
    # MoE
    _k("moe.router", "moe", "ffn", ("norm.ffn",), "tokens", "experts", "router_stretch", ("moe",),
       per_token=True),
    _k("moe.router.logits", "moe", "ffn", ("norm.ffn",), "tokens", "experts", features=("moe",),
       linear_in="norm.ffn"),
    _k("moe.bias", "moe", "ffn", (), "one", "experts", features=("moe",)),
    _k("moe.topk_idx", "moe", "ffn", ("moe.router",), "tokens", "topk", features=("moe",)),
    _k("moe.topk_weight", "moe", "ffn", ("moe.router",), "tokens", "topk", features=("moe",)),
    _k("moe.experts", "moe", "ffn", ("norm.ffn", "moe.topk_idx"), "token_expert", "channels", "expert_weights",
       ("moe",), per_token=True),
    _k("moe.down", "moe", "ffn", ("norm.ffn",), features=("moe", "latent"), linear_in="norm.ffn", plate_in="hidden"),
    _k("moe.mix", "moe", "ffn", ("moe.experts", "moe.topk_weight", "moe.down"), features=("moe",)),
    _k("moe.norm", "moe", "ffn", ("moe.mix",), features=("moe", "latent"), role="norm"),
    _k("moe.up", "moe", "ffn", ("moe.norm",), features=("moe", "latent"), linear_in="moe.norm", plate_in="moe.mix"),
    _k("moe.shared", "moe", "ffn", ("norm.ffn",), features=("moe", "shared_experts"), role="shared"),
    # dense FFN
    _k("mlp.gate", "dense", "ffn", ("norm.ffn",), features=("dense",), linear_in="norm.ffn", plate_in="hidden"),
    _k("mlp.up", "dense", "ffn", ("norm.ffn",), features=("dense",), linear_in="norm.ffn", plate_in="hidden"),
    _k("mlp.act", "dense", "ffn", ("mlp.gate", "mlp.up"), features=("dense",)),
    _k("mlp.down", "dense", "ffn", ("mlp.act",), features=("dense",), linear_in="mlp.act", plate_in="mlp.act"),
)

# the sizes of each kind: (real, as the labels show it; toy shape, without a trace), templates over the size args
_SIZES = {
    "embedding": ("{vocab} × {D}", ()), "lm_head": ("{D} → {vocab}", ()), "final.attnres": ("T × {final_cand}", ()),
    "final.norm": ("T × {D}", ()), "sampling": ("{vocab} → 1", ()),
    "attnres.mixer": ("T × {nm}", ("T", "nm")), "attnres.mixer.out": ("T × {D}", ("T", "D")),
    "norm.mixer": ("T × {D}", ("T", "D")), "mixer.out": ("T × {D}", ("T", "D")),
    "attnres.ffn": ("T × {nf}", ("T", "nf")), "attnres.ffn.out": ("T × {D}", ("T", "D")),
    "norm.ffn": ("T × {D}", ("T", "D")), "ffn.out": ("T × {D}", ("T", "D")), "residual": ("T × {D}", ("T", "D")),
    "kda.q_proj": ("{D} → {hk}", ("T", "hk")), "kda.k_proj": ("{D} → {hk}", ("T", "hk")),
    "kda.v_proj": ("{D} → {hk}", ("T", "hv")),
    "kda.q_conv": ("T × {hk} · k={conv}", ("T", "hk")), "kda.k_conv": ("T × {hk} · k={conv}", ("T", "hk")),
    "kda.v_conv": ("T × {hk} · k={conv}", ("T", "hv")),
    "kda.q_norm": ("{kda_heads} × {kda_dim}", ("T", "hk")), "kda.k_norm": ("{kda_heads} × {kda_dim}", ("T", "hk")),
    "kda.f": ("{D} → {hk}", ("T", "hk")), "kda.alpha": ("T × {hk}", ("T", "hk")),
    "kda.beta": ("{D} → {kda_heads}", ("T", "H")),
    "kda.state": ("{kda_heads} × {kda_dim} × {kda_dim}", ("H", "dk", "dv")), "kda.o": ("T × {hk}", ("T", "hv")),
    "kda.gate": ("{D} → {hk}", ("T", "hv")), "kda.o_norm": ("T × {hk}", ("T", "hv")),
    "kda.o_proj": ("{hk} → {D}", ("T", "D")),
    "mla.q_a": ("{D} → {q_lora}", ("T", "ql")), "mla.q_a_norm": ("T × {q_lora}", ("T", "ql")),
    "mla.q_b": ("{q_in} → {hq}", ("T", "mq")),  # q_in: q_lora, or hidden without query compression (W_q)
    "mla.kv_a": ("{D} → {kv_a}", ("T", "kva")), "mla.c_kv": ("S × {kv_lora}", ("S", "kl")),
    "mla.k_rope": ("S × {rope}", ("S", "ro")), "mla.kv_b": ("{kv_lora} → {kv_b}", ("S", "mkvb")),
    "mla.scores": ("{mla_heads} × T × S", ("mh", "T", "S")), "mla.softmax": ("{mla_heads} × T × S", ("mh", "T", "S")),
    "mla.o": ("T × {hv}", ("T", "mv")), "mla.gate": ("{D} → {hv}", ("T", "mv")),
    "mla.o_gated": ("T × {hv}", ("T", "mv")), "mla.o_proj": ("{hv} → {D}", ("T", "D")),
    "moe.router": ("{D} → {experts}", ("T", "E")), "moe.experts": ("{experts} · top-{topk}", ("T", "K", "L")),
    "moe.shared": ("{shared} × {expert_width}", ("T", "D")), "moe.down": ("{D} → {latent}", ("T", "L")),
    "moe.mix": ("Σ {topk} · {latent}", ("T", "L")), "moe.norm": ("T × {latent}", ("T", "L")),
    "moe.up": ("{latent} → {D}", ("T", "D")),
    "mlp.gate": ("{D} → {dense}", ("T", "W")), "mlp.up": ("{D} → {dense}", ("T", "W")),
    "mlp.act": ("T × {dense}", ("T", "W")), "mlp.down": ("{dense} → {D}", ("T", "D")),
}
_ENTRIES = tuple(replace(e, real=_SIZES[e.kind][0], toy=_SIZES[e.kind][1]) if e.kind in _SIZES else e
                 for e in _ENTRIES)

TABLE: dict[str, BlockKind] = {e.kind: e for e in _ENTRIES}


def entry(kind: str) -> BlockKind | None:
    """The table entry of a block kind (None for a kind the table does not know)."""
    return TABLE.get(kind)


def kinds_with(*, rows: str | None = None, colour: str | None = None, family: str | None = None) -> tuple[str, ...]:
    """The kinds whose entry matches every given field (e.g. the cache kinds: rows="cache")."""
    return tuple(e.kind for e in _ENTRIES if (rows is None or e.rows == rows)
                 and (colour is None or e.colour == colour) and (family is None or e.family == family))


def axes_key(kind: str) -> tuple[str, str] | None:
    """The i18n keys of what the rows and the columns of a kind's tensor are."""
    e = TABLE.get(kind)
    return None if e is None else (f"block_axis.{e.rows}", f"block_axis.{e.cols}")


def role_of(kind: str) -> str:
    """The colour role of a kind (scene/palette.py); "activation" for a kind the table does not know."""
    e = TABLE.get(kind)
    return e.role if e is not None else "activation"


# y = x @ W kinds -> the kind of x; the kinds whose W is drawn as a plate -> what W's rows are
LINEAR_IN: dict[str, str] = {e.kind: e.linear_in for e in _ENTRIES if e.linear_in}
PLATE_IN: dict[str, str] = {e.kind: e.plate_in for e in _ENTRIES if e.plate_in}


def model_features(dims) -> frozenset[str]:
    """The model-wide features of a model (`dims`: compute.dims.ModelDims) that decide which kinds it has beyond
    its layers' types: attnres, q_lora, mla_gate, shared_experts, latent (an MoE latent narrower than hidden)."""
    have = {"kda", "mla", "moe", "dense"}  # (which layer has which type: the layout's stations)
    if dims.block_size:
        have.add("attnres")
    if dims.q_lora:
        have.add("q_lora")
    if dims.mla_gate:
        have.add("mla_gate")
    if dims.shared:
        have.add("shared_experts")
    if dims.latent != dims.hidden:
        have.add("latent")
    return frozenset(have)


def has(kind: str, dims) -> bool:
    """Whether a model has blocks of this kind (a kind the table does not know: yes)."""
    e = TABLE.get(kind)
    return e is None or set(e.features) <= model_features(dims)


def real_size_args(d, candidates_mixer: int, candidates_ffn: int) -> dict[str, object]:
    """The real sizes the `real` templates name, from a model's ModelDims (widths with thousands separators)."""
    def f(n):
        return f"{int(n):,}"
    return dict(
        D=f(d.hidden), hk=f(d.kda_heads * d.kda_dim), hq=f(d.mla_heads * (d.nope + d.rope)),
        hv=f(d.mla_heads * d.v), nm=candidates_mixer, nf=candidates_ffn, conv=d.conv, kda_heads=d.kda_heads,
        kda_dim=d.kda_dim, q_lora=f(d.q_lora), q_in=f(d.q_lora) if d.q_lora else f(d.hidden),
        kv_a=f(d.kv_lora + d.rope), kv_lora=f(d.kv_lora), rope=d.rope, kv_b=f(d.mla_heads * (d.nope + d.v)),
        mla_heads=d.mla_heads, experts=f(d.experts), topk=d.topk, shared=d.shared, expert_width=f(d.expert_width),
        latent=f(d.latent), dense=f(d.dense_width), vocab=f(d.vocab),
        final_cand=(d.n_layers - 1) // d.block_size + 2 if d.block_size else 1)


def toy_size_args(toy, dims, rows: int, seq: int, candidates_mixer: int, candidates_ffn: int) -> dict[str, int]:
    """The toy sizes the `toy` shapes name: the engine's widths (compute.dims.ToyDims) with the model's expert
    count and top-k, `rows` token rows and `seq` cache positions."""
    H, dk, dv = toy.kda_heads, toy.kda_head_dim, toy.kda_head_dim
    mh = toy.mla_heads
    return dict(T=rows, S=seq, D=toy.hidden, nm=candidates_mixer, nf=candidates_ffn, H=H, dk=dk, dv=dv,
                hk=H * dk, hv=H * dv, ql=toy.q_lora, kva=toy.kv_lora + toy.rope, kl=toy.kv_lora, ro=toy.rope,
                mq=mh * (toy.nope + toy.rope), mkvb=mh * (toy.nope + toy.v), mh=mh, mv=mh * toy.v,
                E=dims.experts, K=dims.topk, L=toy.latent, W=toy.dense_width)
