"""The one step table of the trace player (Qt-free, compute-free): what each step kind is, and what the app
and the 3D scene do for it. The player (app/player.py, which re-exports it for app/docks/trace_player.py) and
the scene (scene/highlights.py, which scene/view.py asks) both read `STEP_TABLE`; nothing else lists step kinds.

The seed's HTML explorer plays a 17-step pipeline; here the steps of one inference are built from the real
Trace:

    Phase A (prefill, pass 0, all prompt positions in parallel, causal):
      input, utf8, tokenize, token_ids, embedding, prefill, kda_state, mla_cache, attnres, moe,
      final_norm, lm_head, sampling, detokenize, stream
    Phase B (decode, one round per generated token after the first; pass i >= 1):
      decode, decode_cache, lm_head, sampling, detokenize, stream

A step's number is its place in the whole trace, `Step.index + 1` (1..len(build_steps(trace))): the trace
player's list and counter, the CLI's --step, view files, animation captions and the API all count it. Its place
in the 17-step pipeline (`StepSpec.number`, "stage 12 of 17") is a second label only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

# Where data can live, fastest last (seed: HBM -> L2 -> L1/Shared -> Registers; CPU RAM and PCIe before it).
PLACES: tuple[str, ...] = ("cpu_ram", "pcie", "hbm", "l2", "smem", "registers")

LAYER_FOCUS = "layer"  # a camera focus target: the whole exploded layer panel


@dataclass(frozen=True)
class StepSpec:
    """One row of the step table."""

    kind: str
    number: int  # 1-based place in the 17-step pipeline
    phases: str  # "A", "B" or "AB": the phases the step runs in
    layer_type: str | None  # the layer type whose values the facts show: "kda" | "mla" | "moe" | "attnres"
    blocks: tuple[str, ...]  # block kinds the scene outlines (resolved in the shown layer, or global)
    focus: tuple[str, ...]  # block kinds the camera frames (LAYER_FOCUS = the layer panel); () = overview
    flow: bool  # the scene draws the layer's data-flow lines
    data_kind: str  # "string" | "bytes" | "pieces" | "ids" | "tensor" | "id" | "text"
    path: tuple[str, ...]  # memory places the data moves through; the last is where it ends up

    @property
    def location(self) -> str:
        return self.path[-1] if self.path else "cpu_ram"


def _rows() -> tuple[StepSpec, ...]:
    R = ("hbm", "l2", "smem", "registers")
    rows = [
        # kind, phases, layer_type, blocks, focus, flow, data_kind, path
        ("input", "A", None, (), ("embedding",), False, "string", ("cpu_ram",)),
        ("utf8", "A", None, (), ("embedding",), False, "bytes", ("cpu_ram",)),
        ("tokenize", "A", None, (), ("embedding",), False, "pieces", ("cpu_ram",)),
        ("token_ids", "A", None, ("embedding",), ("embedding",), False, "ids", ("cpu_ram", "pcie", "hbm")),
        ("embedding", "A", None, ("embedding",), ("embedding",), False, "tensor", R),
        ("prefill", "A", None, ("stack.layer",), (LAYER_FOCUS,), True, "tensor", R),
        ("kda_state", "A", "kda", ("kda.state", "kda.alpha", "kda.beta"), ("kda.state",), True, "tensor",
         ("registers", "smem", "hbm")),
        ("mla_cache", "A", "mla", ("mla.c_kv", "mla.k_rope", "mla.kv_a"), ("mla.c_kv",), True, "tensor",
         ("registers", "l2", "hbm")),
        ("attnres", "A", "attnres", ("attnres.mixer", "attnres.ffn", "stack.attnres_bracket"),
         ("attnres.mixer.out", "attnres.ffn.out"), True, "tensor", ("hbm", "l2", "registers")),
        ("moe", "A", "moe", ("moe.router", "moe.experts", "moe.shared"), ("moe.router", "moe.experts"), True,
         "tensor", R),
        ("final_norm", "A", None, ("final.attnres", "final.norm"), ("final.attnres", "final.norm"), False,
         "tensor", ("hbm", "smem", "registers")),
        ("lm_head", "AB", None, ("lm_head",), ("lm_head",), False, "tensor", R),
        ("sampling", "AB", None, ("sampling",), ("sampling",), False, "id", ("registers", "hbm", "pcie", "cpu_ram")),
        ("detokenize", "AB", None, (), ("sampling",), False, "text", ("cpu_ram",)),
        ("stream", "AB", None, (), ("sampling",), False, "text", ("cpu_ram",)),
        ("decode", "B", None, ("embedding", "stack.layer"), (LAYER_FOCUS,), True, "tensor", R),
        ("decode_cache", "B", None, ("kda.state", "mla.c_kv"), ("kda.state", "mla.c_kv"), True, "tensor",
         ("registers", "hbm")),
    ]
    return tuple(StepSpec(kind, n, phases, lt, blocks, focus, flow, data, path)
                 for n, (kind, phases, lt, blocks, focus, flow, data, path) in enumerate(rows, start=1))


STEP_TABLE: dict[str, StepSpec] = {spec.kind: spec for spec in _rows()}
STEP_KINDS: tuple[str, ...] = tuple(STEP_TABLE)
PIPELINE_LENGTH = len(STEP_KINDS)  # 17
PREFILL_KINDS: tuple[str, ...] = tuple(k for k, s in STEP_TABLE.items() if "A" in s.phases)
DECODE_KINDS: tuple[str, ...] = ("decode", "decode_cache", "lm_head", "sampling", "detokenize", "stream")


@dataclass(frozen=True)
class Step:
    """One step of a trace: a table row at a place in the trace (pass, token)."""

    index: int  # position in this trace's step list (the seek position)
    kind: str
    phase: str  # "A" prefill | "B" decode
    pass_index: int  # 0 = prefill, i = decode round i
    token: int  # absolute token position in focus

    @property
    def spec(self) -> StepSpec:
        return STEP_TABLE[self.kind]

    @property
    def number(self) -> int:
        """1-based place in the 17-step pipeline."""
        return self.spec.number

    @property
    def layer_type(self) -> str | None:
        return self.spec.layer_type

    @property
    def blocks(self) -> tuple[str, ...]:
        return self.spec.blocks

    @property
    def path(self) -> tuple[str, ...]:
        return self.spec.path

    @property
    def data_kind(self) -> str:
        return self.spec.data_kind

    @property
    def location(self) -> str:
        """Where the step's data lives at the end of the step."""
        return self.spec.location

    @property
    def title_key(self) -> str:
        return f"app.step.{self.kind}.title"

    @property
    def what_key(self) -> str:
        return f"app.step.{self.kind}.what"

    @property
    def move_key(self) -> str:
        return f"app.step.{self.kind}.move"


def build_steps(trace) -> list[Step]:
    """The steps of a Trace: 15 prefill steps, then 6 per decode round. Seeking is `steps[i]`."""
    steps: list[Step] = []
    if trace is None or not trace.passes:
        return steps
    last_prompt = max(trace.prompt_len - 1, 0)
    for kind in PREFILL_KINDS:
        token = 0 if kind in ("input", "utf8", "tokenize", "token_ids") else last_prompt
        steps.append(Step(len(steps), kind, "A", 0, token))
    for p in range(1, len(trace.passes)):
        position = int(trace.passes[p].positions[-1])
        for kind in DECODE_KINDS:
            steps.append(Step(len(steps), kind, "B", p, position))
    return steps


# the app catalogue's phrase text_args asks for (text_args serves the app's translator, not the scene's own texts)
_PHRASES = "app.model_text."
_ABSENT = _PHRASES + "absent"


def text_args(config, tr) -> dict:
    """Format arguments of the step texts (catalogue keys app.step.<kind>.title / .what / .move and the step
    explanations): the shown model's real numbers, so that "Prefill through 93 layers" reads "61 layers" for
    DeepSeek-V3. `tr(key, **fmt)` translates the phrases that depend on the model's kind (which mixers, whether
    the final mix is AttnRes). No config: the default model's (K3)."""
    if config is None:
        from compute.config import load_default

        config = load_default()
    kda = sum(1 for m in config.mixer_types if m == "kda")
    mla = sum(1 for m in config.mixer_types if m == "mla")
    mixers = "app.model_text.mixers." + ("both" if kda and mla else "kda" if kda else "mla")
    candidates = config.attn_res_stored_blocks + 1 if config.attn_res_block_size else 0
    final_mix = "app.model_text.final_mix." + ("attnres" if candidates else "plain")
    args = dict(layers=config.num_hidden_layers, kda=kda, mla=mla, experts=config.n_routed_experts,
                top_k=config.num_experts_per_tok, shared=config.n_shared_experts, hidden=f"{config.hidden_size:,}",
                vocab=f"{config.vocab_size:,}", candidates=candidates,
                latent=f"{config.moe_latent_size or config.hidden_size:,}",
                mla_numbers=config.kv_lora_rank + config.qk_rope_head_dim, model=config.display_name,
                row_bytes=f"{2 * config.hidden_size:,}",
                kda_shape=f"{config.kda_num_heads} × {config.kda_head_dim} × {config.kda_head_dim}" if kda else "—")
    args["mixers"] = tr(mixers, **args)
    args["final_mix"] = tr(final_mix, **args)
    features = config_features(config)
    # what a step's title says the model has: "Final AttnRes + RMSNorm" / "Final RMSNorm", which caches grow
    args["final_title"] = tr(_PHRASES + "final_title." + ("attnres" if "attnres" in features else "plain"))
    caches = "both" if {"kda", "mla"} <= features else "mla" if "mla" in features else "kda"
    args["cache_title"] = tr(_PHRASES + "cache_title." + caches)
    args["cache_what"] = tr(_PHRASES + "cache_what." + caches)
    # a step about a part the model lacks says so in its title ("KDA state written — none in DeepSeek-V3")
    for part in ("kda", "mla", "attnres", "moe"):
        args[f"absent_{part}"] = "" if part in features else tr(_ABSENT, model=config.display_name)
    return args


def model_features(mixer_types: Sequence[str], ffn_types: Sequence[str], attnres: bool) -> frozenset[str]:
    """The parts a model has that steps are about: "kda" / "mla" (a layer of that mixer), "moe" (a MoE layer),
    "attnres" (Block AttnRes instead of plain residual sums)."""
    parts = {m for m in mixer_types if m in ("kda", "mla")}
    if "moe" in ffn_types:
        parts.add("moe")
    if attnres:
        parts.add("attnres")
    return frozenset(parts)


def config_features(config) -> frozenset[str]:
    """`model_features` of a ModelConfig."""
    return model_features(config.mixer_types, config.ffn_types, bool(config.attn_res_block_size))


def trace_features(trace) -> frozenset[str]:
    """`model_features` of the model that ran a Trace (read from the trace itself)."""
    if trace is None or not trace.passes:
        return frozenset()
    layers = trace.passes[0].layers
    attnres = trace.passes[0].final.get("final.attnres") is not None
    return model_features([L.mixer for L in layers], [L.ffn for L in layers], attnres)


def has_step(kind: str, features: frozenset[str]) -> bool:
    """Whether a model with `features` has what step `kind` shows (KDA state, MLA cache, AttnRes, MoE routing).
    A step it lacks stays in the list (the 17-step pipeline keeps its numbers) and says "this model has none"."""
    layer_type = STEP_TABLE[kind].layer_type
    return layer_type is None or layer_type in features


def fill(text: str, args: dict) -> str:
    """`text` with {name} replaced for the names in `args` only (Markdown may hold other braces)."""
    if not text or "{" not in text:
        return text
    return re.sub(r"\{(\w+)\}", lambda m: str(args[m.group(1)]) if m.group(1) in args else m.group(0), text)


def step_at(steps: Sequence[Step], index: int) -> Step | None:
    """steps[index] clamped into range; None for no steps."""
    if not steps:
        return None
    return steps[max(0, min(int(index), len(steps) - 1))]


def fitting_layer(layer_type: str | None, mixer_types: Sequence[str], ffn_types: Sequence[str],
                  current: int) -> int:
    """The 0-based layer nearest `current` that has `layer_type` (the current one when it fits).

    kda needs a KDA layer, mla an MLA layer, moe a MoE layer, attnres a layer that mixes stored blocks (any
    layer after the first)."""
    n = len(mixer_types)
    if n == 0:
        return current
    current = min(max(current, 0), n - 1)

    def fits(i: int) -> bool:
        if layer_type in ("kda", "mla"):
            return mixer_types[i] == layer_type
        if layer_type == "moe":
            return ffn_types[i] == "moe"
        if layer_type == "attnres":
            return i >= 1
        return True

    for distance in range(n):
        for i in (current - distance, current + distance):
            if 0 <= i < n and fits(i):
                return i
    return current


def focus_layer(step: Step, mixer_types: Sequence[str], ffn_types: Sequence[str], current: int) -> int:
    """The 0-based layer whose values the step's facts show (the player never moves the chosen layer)."""
    return fitting_layer(step.layer_type, mixer_types, ffn_types, current)


def scene_note_key(kind: str, dims) -> str:
    """The catalogue key of the 3D view's note for step `kind` in a model (`dims`: compute.dims.ModelDims): the
    note of a part the model lacks says so ("no KDA layers in DeepSeek-V3"), the final step without AttnRes is
    a plain RMSNorm, and the caches step names only the caches the model has."""
    features = model_features(dims.mixers, dims.ffns, bool(dims.block_size))
    if kind in STEP_TABLE and not has_step(kind, features):
        return f"scene.step.{kind}.none"
    if kind == "final_norm" and "attnres" not in features:
        return "scene.step.final_norm.plain"
    if kind == "decode_cache" and not {"kda", "mla"} <= features:
        return "scene.step.decode_cache." + ("mla" if "mla" in features else "kda")
    return f"scene.step.{kind}"

