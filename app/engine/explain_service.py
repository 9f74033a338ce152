"""One explanation service, Qt-free, shared by the window (the Explain dock's worker), the Python API
(`app.api.render(explain=...)`) and the command line (`k3-explorer export --explain`, app/engine/explain_render.py):

  ExplainRequest  what is asked (tokens, position, knobs, the experiment's knock-outs, the ablation mode)
  ExplainResult   what comes back: plain numbers and pieces, no engine object (it crosses to the UI thread)
  explain_result  runs compute.explain for a request; `result_of` reduces an Explanation already made (the one
                  `app.api.explain` returns) the same way
  overlay_of      what the 3D view draws of a result (scene.explain_overlay.ExplainOverlay)
  engine_for      the one engine cache (ENGINES) of the explanations, the API, the usage map and the comparisons
  remembered      the last RESULTS_PER_ENGINE results of each cached engine (explain_result answers a request it
                  has answered before with a copy, at once: a step revisited, the route toggled off and on)
  trace_engine    the side-by-side pane's trace engines (TRACE_ENGINES), in the same module under their own lock

Thread rule of the engine cache: `engine_for` may be called from any thread (ENGINE_LOCK guards the cache), but
a ToyK3 is not re-entrant, so every run of a cached engine happens while its caller holds ENGINE_LOCK (an RLock):
the dock's single pool thread holds it for a whole request, `app.api` for each call it makes. An Explanation
handed to a caller (`app.api.explain`) computes its lazy parts (sources, knock-outs) on the caller's thread when
read; in the window only the explain pool thread makes and reads them.
The side-by-side pane's traces (app/window/side_stack.py) run on engines of their own, `trace_engine`, while the caller
holds TRACE_LOCK: a new trace of the compared model never waits for an explanation that holds ENGINE_LOCK for
seconds. The window's own engine (app/engine/worker.py) is run by the engine thread alone, for the same reason: a
slider's live re-runs must not wait for an explanation.
"""
from __future__ import annotations

import copy
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from compute.trace import Knobs

ENGINE_LOCK = threading.RLock()
ENGINES: dict = {}  # (config name, weights, device, trained weights' file) -> ToyK3, oldest first
MAX_ENGINES = 4  # both weights of two models: side by side and a model switch do not rebuild


def _weights_file(weights: str) -> str:
    """The file trained weights come from (part of the key: another file, e.g. a damaged one, or one that
    made the engine fall back to random weights, is another engine)."""
    if weights != "trained":
        return ""
    from compute.weights import default_path

    return str(default_path())


def _cached(cache: dict, limit: int, config, weights: str, device: str):
    """cache's ToyK3 of (config, weights, device), built in the calling thread when missing or when the config
    was edited; the oldest goes when `limit` are kept. The caller holds the cache's lock."""
    key = (config.name if config is not None else None, weights, device, _weights_file(weights))
    m = cache.get(key)
    if m is None or (config is not None and getattr(m, "config", config) != config):  # an edited config
        cache.pop(key, None)
        from compute.engine import ToyK3

        m = ToyK3(config=config, device=device, weights=weights)
        while len(cache) >= limit:
            cache.pop(next(iter(cache)))
        cache[key] = m
    return m


def engine_for(config, weights: str, device: str = "cpu", cache: dict | None = None):
    """The cached ToyK3 of (config, weights, device), built on first use in the calling thread (numba's disk
    cache is used when ready); the oldest engine goes when MAX_ENGINES are kept. `cache`: another mapping of the
    same shape (the API's, which tests swap for an empty dict)."""
    with ENGINE_LOCK:
        return _cached(ENGINES if cache is None else cache, MAX_ENGINES, config, weights, device)


TRACE_LOCK = threading.Lock()
TRACE_ENGINES: dict = {}  # the side-by-side pane's trace engines, same keys as ENGINES, oldest first
MAX_TRACE_ENGINES = 2  # the compared model's trained and random weights


def trace_engine(config, weights: str):
    """The side-by-side pane's engine for the compared model's traces (see the thread rule): the caller holds
    TRACE_LOCK while it builds and runs it."""
    return _cached(TRACE_ENGINES, MAX_TRACE_ENGINES, config, weights, "cpu")


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
    causal: bool = False  # also the causal route (every block's knock-out effect) and the residual patching grid
    # (the costly part: only while the causal route is drawn or its page is looked at)
    effects: tuple = ()  # "heads" / "experts": their total-effect tables (app/engine/explain_effects.py; only while shown)


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
    source_measure: str = ""  # one line naming the sources' ablation and measure
    causal: dict = field(default_factory=dict)  # ExplainRequest.causal: effects {(layer, part): share of the
    # margin removed by its knock-out}, note / spread / threshold of the 0.3 route; patch: scores [L+1, T] (row 0 =
    # the embedding), metric, clean, corrupted, swap, decided_at; error / patch_error: one line when they failed
    effects: dict = field(default_factory=dict)  # ExplainRequest.effects: app/engine/explain_effects.effects_of's tables
    extra: dict = field(default_factory=dict)


def explain_result(req: ExplainRequest) -> ExplainResult:
    """Run compute.explain for the request (in the caller's thread: a worker's, never the UI thread's) and
    reduce it to plain numbers; with req.compare the other weights' result too (.other)."""
    from compute.explain import Explanation

    t0 = time.perf_counter()
    with ENGINE_LOCK:
        m = engine_for(req.config, req.weights)
        res = remembered(m, req)
        if res is None:
            ex = Explanation(m, list(req.tokens), req.position, knobs=req.knobs,  # sources: resample, contrastive
                             word=req.word)
            res = result_of(ex, req.knockout, req.mode, sources=req.sources, serial=req.serial, causal=req.causal)
            if req.effects:
                from app.engine.explain_effects import effects_of

                res.effects = effects_of(ex, tuple(req.effects))
            res.seconds = time.perf_counter() - t0
            remember(m, req, res)
    if req.compare:
        res.other = explain_result(replace(req, weights=other_weights(req.weights), compare=False, knockout=(),
                                           effects=()))
        if not res.extra.get("remembered"):  # (a remembered result keeps the seconds it was computed in)
            res.seconds = time.perf_counter() - t0  # both weights' explanations
    res.extra["thread"] = threading.get_ident()  # tests: never the UI thread
    return res


RESULTS_PER_ENGINE = 12  # results kept per cached engine (a few steps' explanations, each with and without its
# route); they go with their engine when the engine cache drops it, so a changed config or weights file is asked again
_RESULTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # engine -> OrderedDict(key -> ExplainResult)


def _request_key(req: ExplainRequest) -> tuple:
    """What an explanation depends on besides its engine (the engine stands for the config and the weights): the
    serial, which only orders requests, and the comparison, which is the other engine's own result, are not in it."""
    return (tuple(req.tokens), req.position, repr(req.knobs), tuple(req.knockout), req.mode, req.sources, req.word,
            req.causal, tuple(req.effects))


def remembered(engine, req: ExplainRequest) -> ExplainResult | None:
    """A copy of the result `engine` gave for the same request before (serial set to this request's,
    extra["remembered"] True, seconds: what the computation took), or None. The caller holds ENGINE_LOCK."""
    kept, key = _RESULTS.get(engine), _request_key(req)
    got = kept.get(key) if kept is not None else None
    if got is None:
        return None
    kept.move_to_end(key)
    res = copy.deepcopy(got)
    res.serial = req.serial
    res.extra["remembered"] = True
    return res


def remember(engine, req: ExplainRequest, res: ExplainResult) -> None:
    """Keep a copy of a result; the oldest of the engine's goes past RESULTS_PER_ENGINE. The parts of a result that
    could not be made say why in it (a ValueError of the request itself, e.g. a prompt outside the toy language has
    no corruption to patch with: the same when asked again), so they are kept with it; a failure raises instead and
    leaves nothing here, and a result whose `error` is set is not kept. The caller holds ENGINE_LOCK."""
    if res.error:
        return
    kept = _RESULTS.setdefault(engine, OrderedDict())
    kept[_request_key(req)] = copy.deepcopy(replace(res, other=None))  # (asked only on a miss: a new, last key)
    while len(kept) > RESULTS_PER_ENGINE:
        kept.popitem(last=False)


def result_of(ex, knockout: tuple = (), mode: str = "zero", *, sources: bool = True, serial: int = 0,
              causal: bool = False) -> ExplainResult:
    """An ExplainResult of a compute.explain.Explanation (e.g. `app.api.explain`'s), with the experiment's
    knock-out items (ExplainRequest.knockout) run on it. Runs its engine: hold ENGINE_LOCK for a cached one."""
    lens = ex.lens
    srcs = ex.sources if sources else []
    answers = ex.source_answers if sources else []
    order = sorted(range(len(ex.blocks)), key=lambda i: -abs(ex.blocks[i].value))
    chosen = order[:TOP_BLOCKS]
    # then the largest routed experts below them: they are rarely among the top rows
    chosen += [i for i in order[TOP_BLOCKS:] if ex.blocks[i].part.startswith("expert ")][:TOP_EXPERTS]
    blocks = [ex.blocks[i] for i in chosen]
    res = ExplainResult(
        serial=serial, position=ex.position, pieces=list(ex.pieces), word=ex.word,
        prob=float(ex.probs[ex.word_index]), logit=ex.logit, top5=ex.top(5),
        lens_prob=[e.prob for e in lens], lens_rank=[e.rank for e in lens], lens_top=[e.top[0] for e in lens],
        lens_mixer_prob=[e.prob for e in ex.lens_mixers], lens_mixer_rank=[e.rank for e in ex.lens_mixers],
        sources=[(s.position, s.piece, s.effect, a) for s, a in zip(srcs, answers)],
        blocks=[(c.layer, c.part, c.value) for c in blocks], block_words=[ex.promotes(i, 3) for i in chosen],
        n_blocks=len(ex.blocks), rest=ex.rest, mixers=[lt.mixer for lt in ex.run.layers],
        attention=[a.copy() for a in ex.attention_rows], knockout=knockout_of(ex, knockout, mode),
        weights=ex.model.weights_name)
    res.totals, res.layer_words = folded_words(ex, LAYER_WORDS)
    res.source_measure = ex.source_measure if sources else ""
    if causal:
        res.causal = causal_of(ex)
    return res


def causal_of(ex) -> dict:
    """The causal route's block effects and the residual patching grid of ex (see ExplainResult.causal); a part
    that cannot be made (a prompt outside the toy language has no proposed corruption) says why in one line."""
    out: dict = {}
    try:
        route = ex.causal_route(MIN_ROUTE_FRACTION)  # the route at every slider threshold follows (route_at)
        out.update(effects=dict(route.effects), note=route.note, spread=route.spread,
                   route=[(int(ly), str(pt), float(e)) for ly, pt, e in route])
    except ValueError as exc:
        out["error"] = _line(exc)
    try:
        pt = ex.patch()
        out["patch"] = {"scores": np.asarray(pt.scores, np.float64).copy(), "metric": pt.metric, "clean": pt.clean,
                        "corrupted": pt.corrupted, "swap": pt.swap, "decided_at": pt.decided_at(),
                        "clean_word": pt.clean_word, "corrupted_word": pt.corrupted_word}
    except ValueError as exc:
        out["patch_error"] = _line(exc)
    return out


MIN_ROUTE_FRACTION = 0.01  # the lowest threshold computed (the slider's 0 % reads as 1 %)


def route_fraction(percent: float) -> float:
    """The causal route's threshold (a share of the largest block effect, in (0, 1]) of a slider's percent."""
    return min(1.0, max(float(percent) / 100.0, MIN_ROUTE_FRACTION))


def route_at(causal: dict, fraction: float) -> list[tuple[int, str, float]]:
    """compute.explain's causal_route(fraction) from the route computed at MIN_ROUTE_FRACTION, with no re-run:
    the candidates at a higher threshold are a prefix of the same strongest-first list, so its shortest flipping
    run is the same run when every block of it is still a candidate (effect ≥ fraction × the largest effect),
    and there is none otherwise (spread out at that threshold)."""
    route, effects = causal.get("route") or [], causal.get("effects") or {}
    top = max(effects.values(), default=0.0)
    if not route or top <= 0 or min(e for _l, _p, e in route) < fraction * top:
        return []
    return list(route)


def _line(exc) -> str:
    lines = [s for s in str(exc).splitlines() if s.strip()]
    return lines[0] if lines else type(exc).__name__


def knockout_of(ex, items: tuple, mode: str) -> dict | None:
    """The experiment's "after" of knock-out items ("token", p) | ("block", layer, part) | ("expert", layer or
    None, id) | ("source", c) on ex: None without items."""
    if not items:
        return None
    toks = [it[1] for it in items if it[0] == "token"]
    ko_blocks = [(it[1], it[2]) for it in items if it[0] == "block"]
    ko_experts = [it[2] if it[1] is None else (it[1], it[2])  # a bare id: every MoE layer
                  for it in items if it[0] == "expert"]
    ko_sources = [it[1] for it in items if it[0] == "source"]  # AttnRes candidates
    k = ex.knockout(tokens=toks, blocks=ko_blocks, experts=ko_experts, mode=mode, sources=ko_sources)
    probs = k.probs
    return {"items": list(items), "mode": mode, "word": k.word, "top5": k.top(5), "effect": k.effect,
            "logit_after": float(k.logits[ex.word_index]), "prob_after": float(probs[ex.word_index]),
            "word_prob_after": float(probs[k.word_index]), "word_logit_after": float(k.logit)}


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


def largest_block(res) -> float:
    """The largest |(layer, part) total| of a result (the route threshold's 100 %)."""
    return max((abs(v) for _l, _p, v in res.totals), default=0.0)


def overlay_of(res, lens: bool, route: bool, percent: int, arcs: bool = False, kind: str = "causal"):
    """What the 3D view draws of an ExplainResult: a scene.explain_overlay.ExplainOverlay (None: nothing). An
    active knock-out is always drawn (its marks and its before -> after), whatever else is on. kind: the route
    drawn — "causal" (lit: the blocks Explanation.causal_route(percent / 100) names — the shortest run of the
    strongest blocks, each ≥ percent of the largest knock-out effect, whose knock-out together changes the
    answer, none when spread out — and the residual patching grid as token lanes on the slabs) or "direct"
    (direct effects, not causal: |value| ≥ percent of the largest)."""
    ko = res.knockout if res is not None else None
    if res is None or not (lens or route or arcs or ko):
        return None
    from scene.explain_data import ExplainOverlay
    from scene.route_glow import threshold_of

    entries = ()
    if lens:
        entries = tuple((i, top[0], float(top[1]), int(rank), float(prob))
                        for i, (top, rank, prob) in enumerate(zip(res.lens_top, res.lens_rank, res.lens_prob)))
    causal = kind == "causal"
    effects = res.causal.get("effects", {}) if causal else {}
    patch = res.causal.get("patch") if causal and route else None
    route_set = None
    if causal:  # lit: the causal route at the slider's threshold, the blocks causal_route() names
        blocks = tuple((ly, pt, float(v)) for (ly, pt), v in effects.items()) if route else ()
        threshold = route_fraction(percent)
        route_set = tuple((ly, pt) for ly, pt, _e in route_at(res.causal, threshold))
    else:
        blocks = tuple(res.totals) if route else ()
        threshold = threshold_of(blocks, percent / 100) if blocks else 0.0
    piece = res.pieces[res.position] if res.position < len(res.pieces) else ""
    reads = tuple(tuple(tuple(float(x) for x in h) for h in row) for row in res.attention) if arcs else ()  # per head
    after = ()
    if ko:
        after = (ko["mode"], ko["word"], ko.get("word_prob_after", 0.0), ko.get("prob_after", 0.0),
                 float(ko["logit_after"]), float(res.prob))
    lanes = tuple(tuple(float(x) for x in row) for row in patch["scores"]) if patch is not None else ()
    return ExplainOverlay(res.position, piece, res.word, entries, blocks, threshold, float(res.logit), reads,
                          knockout=tuple(tuple(it) for it in ko["items"]) if ko else (), after=after,
                          n_tokens=len(res.pieces), route_kind=kind if route else "",
                          lanes=lanes, decided_at=patch["decided_at"] if patch is not None else None,
                          largest=max((abs(v) for v in effects.values()), default=0.0),
                          computing=causal and route and not res.causal, route_set=route_set)


def knobs_of(trace_knobs) -> Knobs:
    """The knobs an explanation runs with: only those that change the layers (temperature 0: the word is the
    argmax; top-p and the sampler leave the explanation as it is)."""
    k = trace_knobs
    return Knobs(alpha=k.alpha, beta=k.beta, temperature=0.0, expert_bias=dict(k.expert_bias))


def knockout_items(ko: dict | None) -> tuple[tuple, str]:
    """A view file's (validated) `knockouts` value as (ExplainRequest.knockout items, mode); ((), "zero") for
    None. An expert without a layer is knocked out at every MoE layer (compute.explain reads a bare id so)."""
    if not ko:
        return (), ABLATION_MODES[0]
    items: list[tuple] = [("token", int(p)) for p in ko.get("tokens", ())]
    items += [("block", int(ly), str(part)) for ly, part in ko.get("blocks", ())]
    items += [("expert", None if ly is None else int(ly), int(e)) for ly, e in ko.get("experts", ())]
    items += [("source", int(c)) for c in ko.get("sources", ())]
    mode = ko.get("mode", ABLATION_MODES[0])
    return tuple(dict.fromkeys(items)), mode if mode in ABLATION_MODES else ABLATION_MODES[0]
