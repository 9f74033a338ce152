"""Qt-free part of the Explain dock: what is asked (ExplainRequest), what comes back (ExplainResult: plain numbers
and pieces, no engine objects cross to the UI thread) and `explain_result`, which runs compute.explain."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from compute.trace import Knobs

TOP_BLOCKS = 12  # rows of the contributions table (the largest |direct contribution|)
TOP_EXPERTS = 3  # then the largest routed experts below those rows (an expert can always be picked)
ABLATION_MODES = ("zero", "mean")
LAYER_WORDS = 3  # words a layer's mixer / FFN promotes and suppresses, shown when its slab is clicked


@dataclass(frozen=True)
class ExplainRequest:
    serial: int
    config: object  # compute.config.ModelConfig
    weights: str  # "trained" | "random" (the trace's weights_name)
    tokens: tuple  # ((piece, id), ...) of the trace
    position: int  # 0-based: the token whose next-token prediction is explained
    knobs: Knobs
    knockout: tuple = ()  # what to knock out (the experiment): ("token", p) | ("block", layer, part) |
    # ("expert", layer, id) | ("source", c) items (layers 1-based; layer None: that expert at every MoE layer;
    # c: an AttnRes candidate, 0 = the embedding, j = block j's stored sum)
    mode: str = "zero"
    compare: bool = False  # also explain the same tokens with the other weights (trained <-> random), side by side
    sources: bool = True  # knock each earlier token out (one re-run per token: the costly part); False when only
    # the 3D view needs the result (lens, attention, route) and the dock is not on screen
    word: int | None = None  # the vocabulary index explained (the answer strip's clicked word); None: the answer


def other_weights(name: str) -> str:
    return "random" if name == "trained" else "trained"


@dataclass
class ExplainResult:
    serial: int
    position: int
    pieces: list[str]
    word: str
    prob: float
    logit: float
    top5: list[tuple[str, float]]
    lens_prob: list[float]  # the word's probability at the embedding (0) and after layers 1..L
    lens_rank: list[int]
    lens_top: list[tuple[str, float]]  # the lens' top piece at each entry
    lens_mixer_prob: list[float]  # after each layer's mixer (before its FFN), layers 1..L
    lens_mixer_rank: list[int]
    sources: list[tuple[int, str, float, str]]  # position, piece, effect, answer after the knock-out
    blocks: list[tuple[int, str, float]]  # the TOP_BLOCKS largest |direct contributions|
    block_words: list  # per row of blocks: ([(piece, logit change)] it promotes most, [...] it suppresses most)
    n_blocks: int
    rest: float
    mixers: list[str]  # "kda" | "mla" per layer
    attention: list = field(default_factory=list)  # per layer [heads, T]: what the position reads (KDA: A)
    knockout: dict | None = None  # tokens, mode, word, top5, effect (the experiment's "after")
    totals: list = field(default_factory=list)  # (layer, "embedding" | "mixer" | "ffn", value) of EVERY block
    layer_words: dict = field(default_factory=dict)  # (layer, part) of totals -> (promotes, suppresses), 3 each
    other: "ExplainResult | None" = None  # the same tokens with the other weights (ExplainRequest.compare)
    seconds: float = 0.0
    weights: str = ""
    error: str = ""
    extra: dict = field(default_factory=dict)


class Engines:
    """ToyK3 engines of the explanations, one per (config, weights), built on first use in the calling thread
    (numba's disk cache is used when ready; nothing is compiled). One request runs at a time (the lock)."""

    def __init__(self):
        self._engines: dict = {}
        self.lock = threading.Lock()

    def get(self, config, weights: str):
        key = (config.name if config is not None else None, weights)
        m = self._engines.get(key)
        if m is None:
            from compute.engine import ToyK3

            m = ToyK3(config=config, device="cpu", weights=weights)
            self._engines.clear()  # one model at a time is shown
            self._engines[key] = m
        return m


def explain_result(engines: Engines, req: ExplainRequest) -> ExplainResult:
    """Run compute.explain for the request (in a worker thread) and reduce it to plain numbers."""
    from compute.explain import Explanation

    t0 = time.perf_counter()
    with engines.lock:
        m = engines.get(req.config, req.weights)
        ex = Explanation(m, list(req.tokens), req.position, knobs=req.knobs, source_mode=req.mode, word=req.word)
        lens = ex.lens
        srcs = ex.sources if req.sources else []
        answers = ex.source_answers if req.sources else []
        order = sorted(range(len(ex.blocks)), key=lambda i: -abs(ex.blocks[i].value))
        chosen = order[:TOP_BLOCKS]
        # then the largest routed experts below them: they are rarely among the top rows
        chosen += [i for i in order[TOP_BLOCKS:] if ex.blocks[i].part.startswith("expert ")][:TOP_EXPERTS]
        blocks = [ex.blocks[i] for i in chosen]
        block_words = [ex.promotes(i, 3) for i in chosen]
        ko = None
        if req.knockout:
            toks = [it[1] for it in req.knockout if it[0] == "token"]
            ko_blocks = [(it[1], it[2]) for it in req.knockout if it[0] == "block"]
            ko_experts = [it[2] if it[1] is None else (it[1], it[2])  # a bare id: every MoE layer
                          for it in req.knockout if it[0] == "expert"]
            ko_sources = [it[1] for it in req.knockout if it[0] == "source"]  # AttnRes candidates
            k = ex.knockout(tokens=toks, blocks=ko_blocks, experts=ko_experts, mode=req.mode, sources=ko_sources)
            ko = {"items": list(req.knockout), "mode": req.mode, "word": k.word, "top5": k.top(5),
                  "effect": k.effect, "logit_after": float(k.logits[ex.word_index])}
        res = ExplainResult(
            serial=req.serial, position=ex.position, pieces=list(ex.pieces), word=ex.word,
            prob=float(ex.probs[ex.word_index]), logit=ex.logit, top5=ex.top(5),
            lens_prob=[e.prob for e in lens], lens_rank=[e.rank for e in lens],
            lens_top=[e.top[0] for e in lens],
            lens_mixer_prob=[e.prob for e in ex.lens_mixers], lens_mixer_rank=[e.rank for e in ex.lens_mixers],
            sources=[(s.position, s.piece, s.effect, a) for s, a in zip(srcs, answers)],
            blocks=[(c.layer, c.part, c.value) for c in blocks], block_words=block_words, n_blocks=len(ex.blocks),
            rest=ex.rest,
            mixers=[lt.mixer for lt in ex.run.layers], attention=[a.copy() for a in ex.attention_rows],
            knockout=ko, weights=m.weights_name)
        res.totals, res.layer_words = folded_words(ex, LAYER_WORDS)
    if req.compare:  # outside the lock: explain_result takes it again
        from dataclasses import replace

        res.other = explain_result(engines, replace(req, weights=other_weights(req.weights), compare=False,
                                                    knockout=()))
    res.seconds = time.perf_counter() - t0
    res.extra["thread"] = threading.get_ident()  # tests: never the UI thread
    return res


def folded_words(ex, k: int) -> tuple[list, dict]:
    """Every (layer, part) total of ex's direct contributions (routed experts and the shared expert summed into
    "ffn") and, for each, the k pieces its summed output promotes and suppresses most (its direct effect on every
    logit, the final norm's scale frozen as in the route)."""
    route = ex.route
    keys: list[tuple[int, str]] = []
    index: dict[tuple[int, str], int] = {}
    for c in route.blocks:
        key = (c.layer, c.part if c.part in ("embedding", "mixer") else "ffn")
        if key not in index:
            index[key] = len(keys)
            keys.append(key)
    groups = np.array([index[(c.layer, c.part if c.part in ("embedding", "mixer") else "ffn")]
                       for c in route.blocks])
    vec = np.zeros((len(keys), route.vectors.shape[1]))
    np.add.at(vec, groups, route.vectors)
    eff = (vec * route.final_norm * route.scale) @ route.lm_head  # [G, V]
    vals = np.zeros(len(keys))
    np.add.at(vals, groups, np.array([c.value for c in route.blocks]))
    vocab = ex.model.vocab
    words = {}
    for g, key in enumerate(keys):
        order = np.argsort(-eff[g], kind="stable")
        words[key] = ([(vocab[j][0], float(eff[g, j])) for j in order[:k]],
                      [(vocab[j][0], float(eff[g, j])) for j in order[::-1][:k]])
    return [(l, p, float(v)) for (l, p), v in zip(keys, vals)], words
