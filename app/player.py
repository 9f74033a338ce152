"""Trace player facts (Qt-free, a pure function of the trace): what a person reads for one step.

The step table (kinds, phases, highlighted blocks, camera focus, flow, data kind, where data lives) and
`build_steps(trace)` live in scene/steps.py, which the 3D scene reads too (re-exported here). This module
adds `describe(trace, step, layer)`: the live facts of a step (data type + shape, toy and real K3; the value)
and `step_caption(...)`: "step 12 of 17 · decode token 2". Titles and explanations are i18n keys
("app.step.<kind>.title", ".what", ".move"); app/docks/trace_player.py adds the widgets and the timer.
Seeking is plain indexing: `steps[i]` — nothing depends on having played the steps before it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from scene.steps import (DECODE_KINDS, PIPELINE_LENGTH, PLACES, PREFILL_KINDS, STEP_KINDS, STEP_TABLE,  # noqa: F401
                         Step, StepSpec, build_steps, fitting_layer, focus_layer, step_at)

# Real K3 sizes used in the "real shape" column (docs/spec/k3-math.md section 0).
K3_HIDDEN = 7168
K3_VOCAB = 163840
K3_KDA_HEADS, K3_KDA_DIM = 96, 128
K3_KV_LORA, K3_ROPE = 512, 64
K3_EXPERTS, K3_TOPK = 896, 16
K3_ATTNRES_CANDIDATES = 9


@dataclass
class StepFacts:
    """What the step panel shows, computed from the trace. Texts are (i18n key, format args)."""

    dtype: str  # e.g. "str", "uint8", "int64", "float32"
    shape: tuple  # toy shape actually in the trace
    real_shape: tuple | None  # the same thing at K3 size (None when it is the same)
    value: str = ""  # a short literal view of the data (bytes in hex, ids, pieces, sampled token ...)
    extra: list[tuple[str, dict]] = field(default_factory=list)  # further (key, fmt) lines
    candidates: list[tuple[str, float, float]] = field(default_factory=list)  # sampling: (word, before, after)


def _sampled(trace, pass_index: int) -> tuple[str, int, float]:
    final = trace.passes[pass_index].final
    idx = int(final["sampled"])
    piece, token_id = trace.vocab[idx]
    prob = float(final["probs"][idx]) if "probs" in final else float("nan")
    return piece, token_id, prob


def sampling_candidates(trace, pass_index: int, n: int = 5) -> list[tuple[str, float, float]]:
    """The `n` most probable next words of a pass as the model gives them: (piece, probability before
    temperature and top-p = softmax of the LM head's last row, probability after = the trace's 'probs', the
    distribution the token was drawn from), most probable first."""
    import numpy as np

    final = trace.passes[pass_index].final
    logits = np.asarray(final["lm_head"][-1], dtype=np.float64)
    before = np.exp(logits - logits.max())
    before /= before.sum()
    after = np.asarray(final["probs"], dtype=np.float64).ravel()
    order = np.argsort(-before, kind="stable")[:n]
    return [(trace.vocab[int(j)][0], float(before[j]), float(after[j])) for j in order]


def attention_over_tokens(trace, pass_index: int, layer: int) -> tuple[int, list[tuple[str, float]], int]:
    """What the last token of a pass attends to in MLA layer `layer` (0-based): (its position, [(piece,
    softmax weight averaged over the heads)] for every position 0..S-1 it can see, number of heads). At a
    decode pass that token is the decode token; the weights sum to 1."""
    import numpy as np

    sm = np.asarray(trace.passes[pass_index].layers[layer].tensors["mla.softmax"], dtype=np.float64)  # [H, T, S]
    weights = sm[:, -1, :].mean(axis=0)
    position = int(np.asarray(trace.passes[pass_index].positions).ravel()[-1])
    pieces = [trace.tokens[p][0] if p < len(trace.tokens) else "?" for p in range(weights.shape[0])]
    return position, [(pieces[p], float(weights[p])) for p in range(position + 1)], int(sm.shape[0])


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
                                                 "prob": f"{prob:.3f}"})],
                         candidates=sampling_candidates(trace, step.pass_index))
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
    return fitting_layer(layer_type, mixers, ffns, 0 if layer is None else layer)


def _row(values) -> str:
    vals = [float(v) for v in list(values)[:8]]
    more = " …" if len(values) > 8 else ""
    return "[" + ", ".join(f"{v:+.2f}" for v in vals) + more + "]"


def shape_text(shape: tuple | None) -> str:
    if shape is None:
        return ""
    return "[" + ", ".join(f"{int(s):,}" for s in shape) + "]"


def step_caption(step: Step, tr) -> str:
    """'Step 12 of 17 · decode token 2': the step's place in the 17-step pipeline and its decode round
    (round i samples generated token i + 1; the prefill samples the first)."""
    if step.phase == "A":
        return tr("app.player.caption_A", n=step.number, total=PIPELINE_LENGTH)
    return tr("app.player.caption_B", n=step.number, total=PIPELINE_LENGTH, round=step.pass_index + 1)
