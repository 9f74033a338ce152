"""Sources: which earlier token the answer depends on (docs/spec/k3-math.md §13).

Each token 0..position is ablated in turn and the prompt re-run; its effect is how much the answer's measure
falls. Ablations (`mode`):

- "resample" (the default): the token's embedding replaced by each other piece of its role in the toy language
  (the first MAX_ALTERNATIVES of them in the language's order)
  (compute.explain.counterfactual.ROLE_ALTERNATIVES: the other objects, subjects, places, verbs, 이/가, 을/를,
  it/they), the measure averaged over them; a token without such a role (articles, '.', '그리고', pieces outside
  the language) is mean-ablated instead.
- "mean": the toy vocabulary's mean embedding row. "zero": a zero row.

Measures (`metric`): "contrast" (the default) = logit[answer] − the largest other logit, so that an ablation that
lowers every object alike (a sentence-frame token) is no effect, while one that makes another word win is;
"logit" = the answer's logit alone. effect = measure(run) − measure(ablated), averaged over the replacements.

Speed: a token knocked out at position p leaves positions < p as they were, so with the compiled pass each
re-run starts from the states after p−1 (the caches of one pass per prefix, bit-identical to a full prefill)
and covers positions p..position only, writing into buffers kept across the re-runs (compute.explain._pass_reuse:
one slot per block kind, fresh ~35 MB buffers per re-run cost more in page faults than the kernel's own work); the
re-runs go on two threads (the kernel releases the GIL), starting while a third one still computes the later
prefixes' states. The explanation's own token knock-outs stay on that path (its prefill's
embedding rows); block, expert or source knock-outs run full re-runs through the engine's layer loop.
"""
from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from compute.explain._pass_reuse import ReusedPass
from compute.explain.counterfactual import alternatives
from compute.explain.knockout import hooks_for
from compute.ops.parts import _np

__all__ = ["SOURCE_MODES", "SOURCE_METRICS", "source_measure", "source_effects"]

SOURCE_MODES = ("resample", "mean", "zero")
SOURCE_METRICS = ("contrast", "logit")
MAX_ALTERNATIVES = 3  # the first three others of the role (141/144 top sources right on the cuts; 5: 142, 2: 139)


def source_measure(mode: str, metric: str) -> str:
    """One line naming the ablation and the measure."""
    abl = {"resample": "resample ablation (each token replaced by the other pieces of its role in the toy language, "
                       "averaged; mean ablation where it has none)",
           "mean": "mean ablation (the toy vocabulary's mean embedding row)",
           "zero": "zero ablation (the embedding row zeroed)"}[mode]
    m = ("contrastive: the answer's logit minus its strongest competitor's" if metric == "contrast"
         else "the answer's logit")
    return f"{abl}; measure: {m}"


def _measure(lg: np.ndarray, a: int, metric: str) -> float:
    if metric == "logit":
        return float(lg[a])
    return float(lg[a] - np.max(np.delete(lg, a)))


def replacement_rows(model, piece: str, mode: str) -> list[np.ndarray]:
    """The embedding rows a token is replaced by (float64)."""
    if mode == "zero":
        return [np.zeros(model.dims.hidden)]
    if mode == "resample":
        ids = {pc: tid for pc, tid in model.vocab}
        alts = [ids[p] for p in alternatives(piece) if p in ids][:MAX_ALTERNATIVES]
        if alts:
            return list(np.asarray(model.embed_ids(alts), np.float64))
    return [np.asarray(model.embedding64, np.float64).mean(0)]


def source_effects(ex, mode: str = "resample", metric: str = "contrast", runner=None) -> tuple[list[float], list[str]]:
    """(effect of ablating each token 0..position, the word predicted with it ablated (for resample: the most
    common over the replacements)) for Explanation `ex` (its own knock-outs stay on). runner: how the re-runs
    run (jobs [(position, row)] -> logits at the position; default `_runner(ex)`)."""
    if mode not in SOURCE_MODES:
        raise ValueError(f"source mode must be one of {', '.join(SOURCE_MODES)}, got {mode!r}")
    if metric not in SOURCE_METRICS:
        raise ValueError(f"source metric must be one of {', '.join(SOURCE_METRICS)}, got {metric!r}")
    model, a = ex.model, ex.word_index
    base = _measure(ex.logits, a, metric)
    jobs = [(j, row) for j in range(ex.position + 1) for row in replacement_rows(model, ex.pieces[j], mode)]
    logits = (runner or _runner(ex))(jobs)
    eff, ans = [], []
    for j in range(ex.position + 1):
        lgs = [lg for (jj, _), lg in zip(jobs, logits) if jj == j]
        eff.append(base - float(np.mean([_measure(lg, a, metric) for lg in lgs])))
        words = Counter(int(np.argmax(lg)) for lg in lgs)
        ans.append(model.vocab[max(words, key=lambda w: (words[w], w == a))][0])
    return eff, ans


def _runner(ex, reuse: bool = True):
    """A function (jobs [(position, embedding row)]) -> logits at the explained position of each re-run.
    reuse: the compiled re-runs write into buffers kept across them (compute.explain._pass_reuse; False: a fresh
    CompiledPass._run each, the reference the tests compare with)."""
    model = ex.model
    cp = getattr(model, "_pass", None)
    hooks = hooks_for(model, ex.ablation) if ex.ablation is not None else None
    if cp is None or ex._loop or (hooks and hooks.keys() != {"embedding"}):
        return lambda jobs: [_full(ex, j, row) for j, row in jobs]
    emb = np.asarray(model.embed_ids(ex.ids))
    if hooks:  # the explanation's own token knock-outs (what its prefill ran on the compiled pass)
        emb = np.ascontiguousarray(hooks["embedding"](emb))
    knobs = ex.knobs
    bias = model._bias_offset(knobs)
    T = len(ex.ids)
    caches: list = [None] * T
    ready = [threading.Event() for _ in range(T)]
    ready[0].set()
    err: list[BaseException] = []

    def prefixes():  # the states after each prefix 0..j (one one-token pass each), while the re-runs start
        try:
            for j in range(T - 1):
                caches[j + 1] = cp._run(emb[j:j + 1], knobs, caches[j], bias).caches()
                ready[j + 1].set()
        except BaseException as e:  # re-raised by the re-runs waiting for it, not lost in the thread
            err.append(e)
            for ev in ready:
                ev.set()

    rp = ReusedPass(cp) if reuse else None

    def one(job):
        j, row = job
        ready[j].wait()
        if err:
            raise err[0]
        e = emb[j:].copy()
        e[0] = row
        if rp is not None:
            return rp.last_logits(e, knobs, caches[j], bias)
        return np.asarray(cp._run(e, knobs, caches[j], bias).final()["lm_head"][-1], np.float64)

    started: list = []

    def run(jobs):
        th = None
        if not started:  # once: the re-runs from early positions (the longest) need only the first prefixes
            started.append(th := threading.Thread(target=prefixes, daemon=True))
            th.start()
        try:
            with ThreadPoolExecutor(2) as pool:
                return list(pool.map(one, jobs))
        finally:
            if th is not None:
                th.join()

    return run


def _full(ex, j: int, row: np.ndarray) -> np.ndarray:
    """One full re-run with token j's embedding row replaced (the explanation's own knock-outs applied, on its
    kernels)."""
    model = ex.model
    hooks = dict(hooks_for(model, ex.ablation) or {})
    inner = hooks.get("embedding")

    def embedding(e):
        e = inner(e) if inner is not None else e
        x = _np(e).astype(np.float64, copy=True)
        x[j] = row
        return model._arr(x)

    hooks["embedding"] = embedding
    if ex._loop and not ({"mixer", "ffn", "attnres"} & hooks.keys()):
        hooks["mixer"] = lambda li, y, t: y
    _, _, logits = model.forward(list(ex.ids), 0, ex.knobs, None, hooks)
    return np.asarray(_np(logits), np.float64)[ex.position]
