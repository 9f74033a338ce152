"""Trace player core: one inference as a list of numbered steps (Qt-free, a pure function of the trace).

The seed's HTML explorer plays a 17-step pipeline; here every step is computed from the real Trace:

    Phase A (prefill, pass 0, all prompt positions in parallel, causal):
      input, utf8, tokenize, token_ids, embedding, prefill, kda_state, mla_cache, attnres, moe,
      final_norm, lm_head, sampling, detokenize, stream
    Phase B (decode, one step per generated token after the first; pass i >= 1):
      decode, decode_cache, lm_head, sampling, detokenize, stream

`build_steps(trace)` returns the list; `describe(trace, step)` the live facts a person reads for that step
(data type + shape, toy and real K3; where it lives; the path it moves along). Titles and explanations are
i18n keys ("app.step.<kind>.title", ".what", ".move"); the Qt dock (app/docks/trace_player.py) adds the timer.
Seeking is plain indexing: `steps[i]` — nothing depends on having played the steps before it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

STEP_KINDS: tuple[str, ...] = (
    "input", "utf8", "tokenize", "token_ids", "embedding", "prefill", "kda_state", "mla_cache",
    "attnres", "moe", "final_norm", "lm_head", "sampling", "detokenize", "stream", "decode", "decode_cache",
)
PREFILL_KINDS: tuple[str, ...] = STEP_KINDS[:15]
DECODE_KINDS: tuple[str, ...] = ("decode", "decode_cache", "lm_head", "sampling", "detokenize", "stream")

# Where data can live, fastest last (seed: HBM -> L2 -> L1/Shared -> Registers; CPU RAM and PCIe before it).
PLACES: tuple[str, ...] = ("cpu_ram", "pcie", "hbm", "l2", "smem", "registers")

# Real K3 sizes used in the "real shape" column (spec/k3-math.md section 0).
K3_HIDDEN = 7168
K3_VOCAB = 163840
K3_KDA_HEADS, K3_KDA_DIM = 96, 128
K3_KV_LORA, K3_ROPE = 512, 64
K3_EXPERTS, K3_TOPK = 896, 16
K3_ATTNRES_CANDIDATES = 9


@dataclass(frozen=True)
class Step:
    """One step of the player. Per-layer blocks are kinds ("kda.state"); the dock resolves the layer."""

    index: int
    kind: str
    phase: str  # "A" prefill | "B" decode
    pass_index: int  # 0 = prefill, i = decode pass i
    token: int  # absolute token position in focus
    layer_type: str | None = None  # "kda" | "mla" | "moe" | "attnres" | None (whole stack / no layer)
    blocks: tuple[str, ...] = ()  # block kinds to highlight
    path: tuple[str, ...] = ()  # memory places the data moves through; the last is where it ends up
    data_kind: str = "tensor"  # "string" | "bytes" | "pieces" | "ids" | "tensor" | "id" | "text"

    @property
    def title_key(self) -> str:
        return f"app.step.{self.kind}.title"

    @property
    def what_key(self) -> str:
        return f"app.step.{self.kind}.what"

    @property
    def move_key(self) -> str:
        return f"app.step.{self.kind}.move"

    @property
    def location(self) -> str:
        """Where the step's data lives at the end of the step."""
        return self.path[-1] if self.path else "cpu_ram"


# kind -> (layer_type, blocks, path, data_kind)
_SPEC: dict[str, tuple[str | None, tuple[str, ...], tuple[str, ...], str]] = {
    "input": (None, (), ("cpu_ram",), "string"),
    "utf8": (None, (), ("cpu_ram",), "bytes"),
    "tokenize": (None, (), ("cpu_ram",), "pieces"),
    "token_ids": (None, ("embedding",), ("cpu_ram", "pcie", "hbm"), "ids"),
    "embedding": (None, ("embedding",), ("hbm", "l2", "smem", "registers"), "tensor"),
    "prefill": (None, ("stack.layer",), ("hbm", "l2", "smem", "registers"), "tensor"),
    "kda_state": ("kda", ("kda.state", "kda.alpha", "kda.beta"), ("registers", "smem", "hbm"), "tensor"),
    "mla_cache": ("mla", ("mla.c_kv", "mla.k_rope", "mla.kv_a"), ("registers", "l2", "hbm"), "tensor"),
    "attnres": ("attnres", ("attnres.mixer", "attnres.ffn", "stack.attnres_bracket"),
                ("hbm", "l2", "registers"), "tensor"),
    "moe": ("moe", ("moe.router", "moe.experts", "moe.shared"), ("hbm", "l2", "smem", "registers"), "tensor"),
    "final_norm": (None, ("final.attnres", "final.norm"), ("hbm", "smem", "registers"), "tensor"),
    "lm_head": (None, ("lm_head",), ("hbm", "l2", "smem", "registers"), "tensor"),
    "sampling": (None, ("sampling",), ("registers", "hbm", "pcie", "cpu_ram"), "id"),
    "detokenize": (None, (), ("cpu_ram",), "text"),
    "stream": (None, (), ("cpu_ram",), "text"),
    "decode": (None, ("embedding", "stack.layer"), ("hbm", "l2", "smem", "registers"), "tensor"),
    "decode_cache": (None, ("kda.state", "mla.c_kv"), ("registers", "hbm"), "tensor"),
}


def build_steps(trace) -> list[Step]:
    """The player's steps for a Trace: 15 prefill steps, then 6 per decode pass."""
    steps: list[Step] = []
    if trace is None or not trace.passes:
        return steps
    last_prompt = max(trace.prompt_len - 1, 0)
    for kind in PREFILL_KINDS:
        token = 0 if kind in ("input", "utf8", "tokenize", "token_ids") else last_prompt
        steps.append(_make(len(steps), kind, "A", 0, token))
    for p in range(1, len(trace.passes)):
        position = int(trace.passes[p].positions[-1])
        for kind in DECODE_KINDS:
            steps.append(_make(len(steps), kind, "B", p, position))
    return steps


def _make(index: int, kind: str, phase: str, pass_index: int, token: int) -> Step:
    layer_type, blocks, path, data_kind = _SPEC[kind]
    return Step(index, kind, phase, pass_index, token, layer_type, blocks, path, data_kind)


def focus_layer(step: Step, mixer_types: Sequence[str], ffn_types: Sequence[str], current: int) -> int:
    """The 0-based layer the step shows: the current one when it fits the step, else the nearest that does.

    kda_state needs a KDA layer, mla_cache an MLA layer, moe a MoE layer, attnres a layer that mixes stored
    blocks (any layer after the first)."""
    n = len(mixer_types)
    if n == 0:
        return current
    current = min(max(current, 0), n - 1)

    def fits(i: int) -> bool:
        if step.layer_type == "kda":
            return mixer_types[i] == "kda"
        if step.layer_type == "mla":
            return mixer_types[i] == "mla"
        if step.layer_type == "moe":
            return ffn_types[i] == "moe"
        if step.layer_type == "attnres":
            return i >= 1
        return True

    for distance in range(n):
        for i in (current - distance, current + distance):
            if 0 <= i < n and fits(i):
                return i
    return current


@dataclass
class StepFacts:
    """What the step panel shows, computed from the trace. Texts are (i18n key, format args)."""

    dtype: str  # e.g. "str", "uint8", "int64", "float32"
    shape: tuple  # toy shape actually in the trace
    real_shape: tuple | None  # the same thing at K3 size (None when it is the same)
    value: str = ""  # a short literal view of the data (bytes in hex, ids, pieces, sampled token ...)
    extra: list[tuple[str, dict]] = field(default_factory=list)  # further (key, fmt) lines


def _sampled(trace, pass_index: int) -> tuple[str, int, float]:
    final = trace.passes[pass_index].final
    idx = int(final["sampled"])
    piece, token_id = trace.vocab[idx]
    prob = float(final["probs"][idx]) if "probs" in final else float("nan")
    return piece, token_id, prob


def streamed_text(trace, steps: Sequence[Step], index: int) -> str:
    """The generated text the user has received once step `index` has run (one chunk per stream step)."""
    passes_streamed = sum(1 for s in steps[: index + 1] if s.kind == "stream")
    pieces = [trace.vocab[int(trace.passes[p].final["sampled"])][0] for p in range(passes_streamed)]
    return "".join(pieces)


def describe(trace, step: Step, layer: int | None = None) -> StepFacts:
    """The live facts of a step (shapes and values from the trace; real K3 shapes from the config)."""
    P = trace.prompt_len
    pss = trace.passes[step.pass_index]
    T = len(pss.positions)
    D = pss.embedding.shape[-1]
    k = step.kind
    if k == "input":
        return StepFacts("str", (len(trace.text),), None, repr(trace.text))
    if k == "utf8":
        data = trace.text.encode("utf-8")
        shown = " ".join(f"{b:02X}" for b in data[:48]) + (" …" if len(data) > 48 else "")
        return StepFacts("uint8", (len(data),), None, shown,
                         [("app.fact.utf8_bytes", {"chars": len(trace.text), "bytes": len(data)})])
    if k == "tokenize":
        pieces = [p for p, _ in trace.tokens[:P]]
        return StepFacts("str", (P,), None, " | ".join(pieces), [("app.fact.toy_tokenizer", {})])
    if k == "token_ids":
        ids = [i for _, i in trace.tokens[:P]]
        return StepFacts("int64", (P,), None, ", ".join(str(i) for i in ids),
                         [("app.fact.vocab", {"vocab": f"{K3_VOCAB:,}"})])
    if k == "embedding":
        return StepFacts("float32", (P, D), (P, K3_HIDDEN), _row(pss.embedding[-1]),
                         [("app.fact.embedding_row", {"bytes": f"{K3_HIDDEN * 2:,}"})])
    if k in ("prefill", "decode"):
        res = pss.layers[-1].tensors["residual"]
        return StepFacts("float32", (T, D), (T, K3_HIDDEN), _row(res[-1]),
                         [("app.fact.layers", {"n": trace.n_layers, "t": T})])
    if k == "kda_state":
        li = _layer_of(trace, layer, "kda")
        s = pss.layers[li].tensors["kda.state"]
        n_kda = sum(1 for L in pss.layers if L.mixer == "kda")
        return StepFacts("float32", tuple(s.shape), (K3_KDA_HEADS, K3_KDA_DIM, K3_KDA_DIM), _row(s.reshape(-1)),
                         [("app.fact.kda_state", {"layer": li + 1, "n": n_kda})])
    if k == "mla_cache":
        li = _layer_of(trace, layer, "mla")
        c = pss.layers[li].tensors["mla.c_kv"]
        n_mla = sum(1 for L in pss.layers if L.mixer == "mla")
        return StepFacts("float32", tuple(c.shape), (c.shape[0], K3_KV_LORA), _row(c[-1]),
                         [("app.fact.mla_cache", {"layer": li + 1, "n": n_mla, "rows": c.shape[0]})])
    if k == "attnres":
        li = _layer_of(trace, layer, "attnres")
        w = pss.layers[li].tensors.get("attnres.mixer")
        if w is None:
            w = pss.layers[li].tensors["attnres.ffn"]
        return StepFacts("float32", tuple(w.shape), (w.shape[0], K3_ATTNRES_CANDIDATES), _row(w[-1]),
                         [("app.fact.attnres", {"layer": li + 1, "n": w.shape[-1]})])
    if k == "moe":
        li = _layer_of(trace, layer, "moe")
        t = pss.layers[li].tensors
        idx = t["moe.topk_idx"][-1]
        return StepFacts("float32", tuple(t["moe.router"].shape), (T, K3_EXPERTS),
                         ", ".join(str(int(e)) for e in idx),
                         [("app.fact.moe", {"layer": li + 1, "k": len(idx), "e": t["moe.router"].shape[-1]})])
    if k == "final_norm":
        h = pss.final["final.norm"]
        return StepFacts("float32", tuple(h.shape), (T, K3_HIDDEN), _row(h[-1]),
                         [("app.fact.final", {"n": pss.final["final.attnres"].shape[-1]})])
    if k == "lm_head":
        logits = pss.final["lm_head"]
        top = int(logits[-1].argmax())
        return StepFacts("float32", tuple(logits.shape), (T, K3_VOCAB),
                         f"{trace.vocab[top][0]!r} {float(logits[-1, top]):+.3f}",
                         [("app.fact.lm_head", {"v": logits.shape[-1], "real": f"{K3_VOCAB:,}"})])
    if k == "sampling":
        piece, token_id, prob = _sampled(trace, step.pass_index)
        kn = trace.knobs
        return StepFacts("int64", (1,), None, f"{piece!r} → {token_id}",
                         [("app.fact.sampling", {"t": f"{kn.temperature:.2f}", "p": f"{kn.top_p:.2f}",
                                                 "prob": f"{prob:.3f}"})])
    if k == "detokenize":
        piece, token_id, _ = _sampled(trace, step.pass_index)
        return StepFacts("str", (len(piece),), None, f"{token_id} → {piece!r}")
    if k == "stream":
        piece, _, _ = _sampled(trace, step.pass_index)
        n_bytes = len(piece.encode("utf-8"))
        return StepFacts("bytes", (n_bytes,), None, repr(piece), [("app.fact.stream", {})])
    if k == "decode_cache":
        kda_i = _layer_of(trace, layer, "kda")
        mla_i = _layer_of(trace, layer, "mla")
        s = pss.layers[kda_i].tensors["kda.state"]
        c = pss.layers[mla_i].tensors["mla.c_kv"]
        prev = trace.passes[step.pass_index - 1].layers[mla_i].tensors["mla.c_kv"]
        return StepFacts("float32", tuple(c.shape), (c.shape[0], K3_KV_LORA), _row(c[-1]),
                         [("app.fact.decode_cache", {"state": "×".join(str(x) for x in s.shape),
                                                     "before": prev.shape[0], "after": c.shape[0]})])
    raise ValueError(f"unknown step kind {k!r}")


def _layer_of(trace, layer: int | None, layer_type: str) -> int:
    pss = trace.passes[0]
    mixers = [L.mixer for L in pss.layers]
    ffns = [L.ffn for L in pss.layers]
    probe = Step(0, "prefill", "A", 0, 0, layer_type)
    return focus_layer(probe, mixers, ffns, 0 if layer is None else layer)


def _row(values) -> str:
    vals = [float(v) for v in list(values)[:8]]
    more = " …" if len(values) > 8 else ""
    return "[" + ", ".join(f"{v:+.2f}" for v in vals) + more + "]"


def shape_text(shape: tuple | None) -> str:
    if shape is None:
        return ""
    return "[" + ", ".join(f"{int(s):,}" for s in shape) + "]"
