"""Trace player facts (Qt-free, computed from the trace and the model's config): what a person reads for one step.

The step table (kinds, phases, highlighted blocks, camera focus, flow, data kind, where data lives) and
`build_steps(trace)` live in scene/steps.py, which the 3D scene reads too (re-exported here). This module
adds `describe(trace, step, layer, config)`: the live facts of a step (data type + shape, toy and the real
model's from its config; the value)
and `step_caption(...)`: "Step 16 of 33 · stage 12 of 17 · decode token 2". Titles and explanations are i18n keys
("app.step.<kind>.title", ".what", ".move"); app/docks/trace_player.py adds the widgets and the timer.
Seeking is plain indexing: `steps[i]` — nothing depends on having played the steps before it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Sequence

from compute.dims import ModelDims
from scene.steps import (DECODE_KINDS, PIPELINE_LENGTH, PLACES, PREFILL_KINDS, STEP_KINDS, STEP_TABLE,  # noqa: F401
                         Step, StepSpec, build_steps, fitting_layer, focus_layer, has_step, step_at, trace_features)

@dataclass
class StepFacts:
    """What the step panel shows, computed from the trace. Texts are (i18n key, format args)."""

    dtype: str  # e.g. "str", "uint8", "int64", "float32"
    shape: tuple  # toy shape actually in the trace
    real_shape: tuple | None  # the same thing at the real model's size (None when it is the same or unknown)
    value: str = ""  # a short literal view of the data (bytes in hex, ids, pieces, sampled token ...)
    extra: list[tuple[str, dict]] = field(default_factory=list)  # further (key, fmt) lines
    candidates: list[tuple[str, float, float]] = field(default_factory=list)  # sampling: (word, before, after)
    absent: bool = False  # the model has nothing this step shows (no KDA layer, no AttnRes ...): `extra` says so


def sampled_token(trace, pass_index: int) -> tuple[str, int, float]:
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


def model_dims(trace, config=None) -> ModelDims | None:
    """The real sizes of the model that ran `trace`: `config` when it is that model (a ModelConfig), else the
    bundled config of that name; None when neither is known (the facts then show toy sizes only)."""
    if config is not None and getattr(config, "name", None) == trace.config_name:
        return ModelDims.from_config(config)
    return _bundled_dims(trace.config_name)


@functools.lru_cache(maxsize=8)
def _bundled_dims(name: str) -> ModelDims | None:
    from compute.config import ConfigError, ModelConfig, available_configs

    for path in available_configs().values():
        try:
            cfg = ModelConfig.from_json(path)
        except (ConfigError, OSError):
            continue
        if cfg.name == name:
            return ModelDims.from_config(cfg)
    return None


def _absent(part: str, dims: ModelDims | None, n_layers: int) -> StepFacts:
    """Facts of a step about a part the model has none of (DeepSeek-V3's KDA state, Kimi Linear's AttnRes)."""
    return StepFacts("—", (), None, "", [(f"app.fact.none.{part}", {"model": _name(dims), "layers": n_layers})],
                     absent=True)


def _name(dims: ModelDims | None) -> str:
    return dims.display_name if dims is not None else "?"


def describe(trace, step: Step, layer: int | None = None, config=None) -> StepFacts:
    """The live facts of a step: shapes and values from the trace; real shapes from the model that ran it
    (`config`, a ModelConfig, when it is that model; else the bundled config of the trace's name).
    A step about a part the model lacks (KDA state, AttnRes ...) returns facts with `absent` set."""
    dims = model_dims(trace, config)
    features = trace_features(trace)
    P = trace.prompt_len
    pss = trace.passes[step.pass_index]
    T = len(pss.positions)
    D = pss.embedding.shape[-1]
    k = step.kind

    def real(*shape):
        return None if dims is None else tuple(shape)

    if not has_step(k, features):
        return _absent(step.layer_type, dims, trace.n_layers)
    if k == "input":
        return StepFacts("str", (len(trace.text),), None, repr(trace.text))
    if k == "utf8":
        data = trace.text.encode("utf-8")
        shown = " ".join(f"{b:02X}" for b in data[:48]) + (" …" if len(data) > 48 else "")
        return StepFacts("uint8", (len(data),), None, shown,
                         [("app.fact.utf8_bytes", {"chars": len(trace.text), "bytes": len(data)})])
    if k == "tokenize":
        pieces = [p for p, _ in trace.tokens[:P]]
        return StepFacts("str", (P,), None, " | ".join(pieces),
                         [("app.fact.toy_tokenizer_of", {"model": _name(dims), "pieces": len(trace.vocab)})])
    if k == "token_ids":
        ids = [i for _, i in trace.tokens[:P]]
        extra = [("app.fact.vocab", {"vocab": f"{dims.vocab:,}"})] if dims is not None else []
        return StepFacts("int64", (P,), None, ", ".join(str(i) for i in ids), extra)
    if k == "embedding":
        extra = [("app.fact.embedding_row_of", {"model": dims.display_name, "hidden": f"{dims.hidden:,}",
                                                 "bytes": f"{dims.hidden * 2:,}"})] if dims is not None else []
        return StepFacts("float32", (P, D), real(P, dims and dims.hidden), _row(pss.embedding[-1]), extra)
    if k in ("prefill", "decode"):
        res = pss.layers[-1].tensors["residual"]
        return StepFacts("float32", (T, D), real(T, dims and dims.hidden), _row(res[-1]),
                         [("app.fact.layers", {"n": trace.n_layers, "t": T})])
    if k == "kda_state":
        li = _layer_of(trace, layer, "kda")
        s = pss.layers[li].tensors["kda.state"]
        n_kda = sum(1 for L in pss.layers if L.mixer == "kda")
        return StepFacts("float32", tuple(s.shape), real(dims and dims.kda_heads, dims and dims.kda_dim,
                                                         dims and dims.kda_dim), _row(s.reshape(-1)),
                         [("app.fact.kda_state", {"layer": li + 1, "n": n_kda})])
    if k == "mla_cache":
        li = _layer_of(trace, layer, "mla")
        c = pss.layers[li].tensors["mla.c_kv"]
        n_mla = sum(1 for L in pss.layers if L.mixer == "mla")
        return StepFacts("float32", tuple(c.shape), real(c.shape[0], dims and dims.kv_lora), _row(c[-1]),
                         [("app.fact.mla_cache", {"layer": li + 1, "n": n_mla, "rows": c.shape[0]})])
    if k == "attnres":
        li = _layer_of(trace, layer, "attnres")
        w = pss.layers[li].tensors.get("attnres.mixer")
        if w is None:
            w = pss.layers[li].tensors["attnres.ffn"]
        # the toy runs the real layer order and block size: its candidate count is the real model's
        return StepFacts("float32", tuple(w.shape), None, _row(w[-1]),
                         [("app.fact.attnres", {"layer": li + 1, "n": w.shape[-1]})])
    if k == "moe":
        li = _layer_of(trace, layer, "moe")
        t = pss.layers[li].tensors
        idx = t["moe.topk_idx"][-1]
        return StepFacts("float32", tuple(t["moe.router"].shape), real(T, dims and dims.experts),
                         ", ".join(str(int(e)) for e in idx),
                         [("app.fact.moe", {"layer": li + 1, "k": len(idx), "e": t["moe.router"].shape[-1]})])
    if k == "final_norm":
        h = pss.final["final.norm"]
        mix = pss.final.get("final.attnres")
        extra = [("app.fact.final", {"n": mix.shape[-1]})] if mix is not None else \
            [("app.fact.final_plain", {"model": _name(dims)})]
        return StepFacts("float32", tuple(h.shape), real(T, dims and dims.hidden), _row(h[-1]), extra)
    if k == "lm_head":
        logits = pss.final["lm_head"]
        top = int(logits[-1].argmax())
        extra = [("app.fact.lm_head_of", {"v": logits.shape[-1], "model": _name(dims),
                                          "real": f"{dims.vocab:,}" if dims is not None else "?"})]
        return StepFacts("float32", tuple(logits.shape), real(T, dims and dims.vocab),
                         f"{trace.vocab[top][0]!r} {float(logits[-1, top]):+.3f}", extra)
    if k == "sampling":
        piece, token_id, prob = sampled_token(trace, step.pass_index)
        kn = trace.knobs
        return StepFacts("int64", (1,), None, f"{piece!r} → {token_id}",
                         [("app.fact.sampling", {"t": f"{kn.temperature:.2f}", "p": f"{kn.top_p:.2f}",
                                                 "prob": f"{prob:.3f}"})],
                         candidates=sampling_candidates(trace, step.pass_index))
    if k == "detokenize":
        piece, token_id, _ = sampled_token(trace, step.pass_index)
        return StepFacts("str", (len(piece),), None, f"{token_id} → {piece!r}")
    if k == "stream":
        piece, _, _ = sampled_token(trace, step.pass_index)
        n_bytes = len(piece.encode("utf-8"))
        return StepFacts("bytes", (n_bytes,), None, repr(piece), [("app.fact.stream", {})])
    if k == "decode_cache":
        state = None
        if "kda" in features:
            state = pss.layers[_layer_of(trace, layer, "kda")].tensors["kda.state"]
        if "mla" not in features:  # an all-KDA model: only the states, updated in place
            return StepFacts("float32", tuple(state.shape), real(dims and dims.kda_heads, dims and dims.kda_dim,
                                                                 dims and dims.kda_dim), _row(state.reshape(-1)),
                             [("app.fact.decode_cache_kda", {"state": "×".join(str(x) for x in state.shape)})])
        mla_i = _layer_of(trace, layer, "mla")
        c = pss.layers[mla_i].tensors["mla.c_kv"]
        prev = trace.passes[step.pass_index - 1].layers[mla_i].tensors["mla.c_kv"]
        if state is None:
            extra = [("app.fact.decode_cache_mla", {"model": _name(dims), "before": prev.shape[0],
                                                    "after": c.shape[0]})]
        else:
            extra = [("app.fact.decode_cache", {"state": "×".join(str(x) for x in state.shape),
                                                "before": prev.shape[0], "after": c.shape[0]})]
        return StepFacts("float32", tuple(c.shape), real(c.shape[0], dims and dims.kv_lora), _row(c[-1]), extra)
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


def step_caption(step: Step, tr, total: int) -> str:
    """'Step 16 of 33 · stage 12 of 17 · decode token 2': the step's place in the whole trace (`total` steps: the
    one number the list, the CLI's --step, view files, animation captions and the API count), then its stage in
    the 17-step pipeline and its decode round (round i samples generated token i + 1; the prefill the first)."""
    args = dict(n=step.index + 1, total=total, stage=step.number, stages=PIPELINE_LENGTH)
    if step.phase == "A":
        return tr("app.player.caption_A", **args)
    return tr("app.player.caption_B", round=step.pass_index + 1, **args)
