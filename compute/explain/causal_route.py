"""The causal route and per-head / per-expert total effects: knock-outs re-run exactly (docs/spec/k3-math.md §12).

Each block (layer ℓ's mixer or FFN), head or expert is knocked out in the explained run — zero ablation, as
`Explanation.knockout(blocks=...)` does: the block's output zeroed at every position; a head's output (after its
norm and gate) zeroed before W_o; an expert's weighted output removed from the latent mix wherever the router
chose it, the latent norm re-evaluated — and layers ℓ..L re-run (compute.explain.rerun, float64). Its TOTAL
effect on the explained word, through everything later layers make of it, is the share of the answer's margin
it removes:

    effect = (C(clean) − C(knocked out)) / C(clean),   C = logit[answer] − max_{v ≠ answer} logit[v]

(contrastive: a change that moves every word alike is no effect; effect ≥ 1 means the answer changes). The answer
is the float64 run's; where float32 rounding made the engine pick another word (random weights, rarely) the
route's note says so.

The causal route: a run of blocks whose knock-out TOGETHER changes the answer, from two searches made once at
θ = MIN_THRESHOLD over the POOL blocks with the largest effects (`searches`; any higher θ cuts them, no re-run):
"strongest" — the shortest run of them largest first (one batch of re-runs, one per prefix), each block counted
by its effect alone —, and "greedy" — the largest block, then each time the block whose knock-out on top of
those already chosen removes the most of the margin (one batch per step), counted by that conditional effect
(a share of the clean margin too; a run's conditional effects add up to its knock-out's effect), until the
answer changes. A run's strength is its weakest counted effect / the largest block effect. The route at
threshold θ is the run of the greater strength (ties: the shorter) when its strength is ≥ θ — every block on it
then removes ≥ θ × the largest effect, alone or on top of those before it —, and empty otherwise: the mechanism
is spread out, `spread` is True and `note` says so (nothing falls back to the direct contributions, which are
not causal). So the route at any θ follows from the route at MIN_THRESHOLD: the same run while θ ≤ its
weakest effect / the largest, nothing above. What checks it: knocking out as many random blocks
(tests/compute/test_patching_cuts.py) and the engine's own float32 knock-out of the route.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from compute.explain.knockout import prefill
from compute.explain.patching import head_deltas, moe_with
from compute.explain.rerun import Variant, rerun, state_before, twin64

MAX_ROUTE = 24  # more blocks than this are no route one can read: spread out
POOL = 24  # the greedy steps choose among the blocks with the largest effects alone
MIN_THRESHOLD = 0.01  # the lowest threshold the greedy steps are computed for (any higher one cuts them)
GREEDY_SPLIT = 8  # a greedy step's batch (< POOL variants) runs on two threads from this many variants

__all__ = ["CausalRoute", "block_effects", "causal_route", "check_threshold", "head_effects", "expert_effects",
           "contrast", "searches", "greedy_steps", "MAX_ROUTE", "POOL", "MIN_THRESHOLD"]


class CausalRoute(list):
    """A list of (layer, part, effect) — layer 1-based, part "mixer" | "ffn" — that `knockout(blocks=[...])`
    accepts, in the order found; effect: the block's alone ("strongest" search) or on top of the blocks before
    it ("greedy"). threshold: the share of the largest block effect every block of the route needs; search:
    "strongest" | "greedy" ("" when empty); candidates: the blocks of the stronger run that reach the
    threshold; effects: {(layer, part): effect alone} of every block; spread: True when no run reaches the
    threshold (the route is empty); note: one line saying what the route is."""

    threshold: float
    search: str
    effects: dict
    candidates: list
    spread: bool
    note: str

    @property
    def blocks(self) -> list[tuple[int, str]]:
        """[(layer, part)] of the route (what knockout(blocks=...) takes)."""
        return [(ly, pt) for ly, pt, _ in self]


def contrast(lg: np.ndarray, a: int) -> np.ndarray:
    """logit[a] − the largest other logit, for logits [..., V]."""
    lg = np.asarray(lg, np.float64)
    other = np.delete(lg, a, -1).max(-1)
    return lg[..., a] - other


def _base(ex):
    """(the float64 twin, its prefill of ex, the clean margin C, the answer) — made once per explanation."""
    got = ex.__dict__.get("_causal_base")
    if got is not None:
        return got
    if ex.ablation is not None:
        raise ValueError("causal effects are measured on an explanation without knock-outs")
    tw = twin64(ex.model)
    run = prefill(tw, ex.ids, ex.knobs)
    lg = np.asarray(run.final["lm_head"][ex.position], np.float64)
    a = int(np.argmax(lg))  # the explained word, unless float32 rounding made the engine pick another (chaotic toys)
    ex.__dict__["_causal_base"] = got = (tw, run, float(contrast(lg, a)), a)
    return got


def _effects(ex, tw, run, c0, a, variants) -> np.ndarray:
    lg = rerun(ex.model, variants, ex.knobs, ex.position, run)
    return (c0 - contrast(lg, a)) / max(c0, 1e-12)


def block_effects(ex) -> dict[tuple[int, str], float]:
    """{(layer, "mixer" | "ffn"): total effect} of zeroing each block (layers 1-based)."""
    tw, run, c0, a = _base(ex)
    bs = ex.model.config.attn_res_block_size
    T = ex.position + 1
    vs, keys = [], []
    for li in range(len(run.layers)):
        p0, R0 = state_before(run, li, bs)
        z = np.zeros((T, p0.shape[1]))
        vs += [Variant(li, p0, R0, mixer=z), Variant(li, p0, R0, ffn=z)]
        keys += [(li + 1, "mixer"), (li + 1, "ffn")]
    return dict(zip(keys, _effects(ex, tw, run, c0, a, vs).tolist()))


def check_threshold(threshold) -> float:
    """threshold as a float in (0, 1] (ValueError otherwise)."""
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (int, float, np.floating, np.integer)) \
            or not 0.0 < float(threshold) <= 1.0:
        raise ValueError(f"threshold must be a number in (0, 1] (a share of the largest block's effect), got "
                         f"{threshold!r}")
    return float(threshold)


def searches(ex, effects: dict) -> dict:
    """Both searches for a flipping run, made once at MIN_THRESHOLD (any higher threshold cuts them, no re-run):
    {"strongest": [(layer, part, effect alone)] — the shortest run of the POOL strongest blocks, largest first,
    whose knock-out together changes the answer ([] when none does) —, "greedy": ([(layer, part, effect on top
    of the blocks before it)], flipped)}."""
    base = _base(ex)
    top = max(effects.values(), default=0.0)
    pool = [(ly, pt, e) for (ly, pt), e in sorted(effects.items(), key=lambda kv: -kv[1])
            if top > 0 and e >= MIN_THRESHOLD * top][:POOL]
    first: list = []
    k = _smallest_flip(ex, [(ly, pt) for ly, pt, _ in pool], base, first)
    strongest = pool[:k] if k else []
    if len(strongest) == 1:  # one block changes the answer alone: the greedy run is the same block
        return {"strongest": strongest, "greedy": (list(strongest), True)}
    kr = _Stream.of(base[1]).then(first[0]) if first else None
    return {"strongest": strongest, "greedy": greedy_steps(ex, pool, base, _strength(strongest, top), kr)}


def greedy_steps(ex, pool: list, base, beat: float = 0.0, first=None) -> tuple[list, bool]:
    """([(layer, part, conditional effect)], flipped): first the block with the largest effect, then each time
    the block of `pool` whose knock-out on top of those already chosen removes the most of the margin — until
    the answer changes (flipped), none removes ≥ MIN_THRESHOLD × the largest effect more, MAX_ROUTE blocks, or
    a step's effect falls below `beat` × the largest (the run can no longer be the stronger one: not flipped).
    A conditional effect is a share of the clean margin: a run's effects add up to its knock-out's total
    effect. One batch of re-runs per step, each candidate from its own layer on the run with the chosen blocks
    zeroed — that run's residual stream is the chosen candidate's own re-run (kept by the batch), so no step
    re-runs the layers below its candidates. first: the residual stream with pool[0] zeroed when already known
    (`_Stream`)."""
    tw, run, c0, a = base
    if not pool:
        return [], False
    top = pool[0][2]
    steps = [pool[0]]
    c = c0 * (1.0 - top)
    bs = ex.model.config.attn_res_block_size
    kr = first if first is not None else _knocked_stream(ex, run, _Stream.of(run), [(pool[0][0], pool[0][1])])
    while c >= 0 and len(steps) < MAX_ROUTE:
        chosen = [(ly, pt) for ly, pt, _ in steps]
        rest = [(ly, pt) for ly, pt, _ in pool if (ly, pt) not in chosen]
        if not rest:
            break
        z0 = frozenset((ly - 1, pt) for ly, pt in chosen)
        vs = [Variant(ly - 1, *state_before(kr, ly - 1, bs), zero=z0 | {(ly - 1, pt)}, trace=[]) for ly, pt in rest]
        cs = contrast(rerun(ex.model, vs, ex.knobs, ex.position, run, split_min=GREEDY_SPLIT), a)
        j = int(np.argmin(cs))
        gain = (c - float(cs[j])) / max(c0, 1e-12)
        if gain < MIN_THRESHOLD * top or gain < beat * top:
            break
        steps.append((rest[j][0], rest[j][1], gain))
        c = float(cs[j])
        kr = kr.then(vs[j])
    return steps, c < 0


class _Stream:
    """The residual stream of a (knocked-out) float64 run — what `state_before` reads: the embedding and each
    layer's residual [T, D]."""

    def __init__(self, embedding: np.ndarray, residuals: list):
        self.embedding = embedding
        self.layers = [SimpleNamespace(tensors={"residual": r}) for r in residuals]

    @classmethod
    def of(cls, run) -> "_Stream":
        return cls(np.asarray(run.embedding, np.float64),
                   [np.asarray(ly.tensors["residual"], np.float64) for ly in run.layers])

    def then(self, v: Variant) -> "_Stream":
        """The stream of variant v's re-run (kept in v.trace) on top of this one: this one's below v.start."""
        return _Stream(self.embedding, [ly.tensors["residual"] for ly in self.layers[:v.start]] + list(v.trace))


def _knocked_stream(ex, run, stream: _Stream, blocks: list) -> _Stream:
    """The residual stream with `blocks` [(layer, part)] zeroed (one re-run from the lowest of them)."""
    z = frozenset((ly - 1, pt) for ly, pt in blocks)
    start = min(li for li, _ in z)
    v = Variant(start, *state_before(stream, start, ex.model.config.attn_res_block_size), zero=z, trace=[])
    rerun(ex.model, [v], ex.knobs, ex.position, run)
    return stream.then(v)


def _strength(run: list, top: float) -> float:
    """The highest threshold at which a run still counts: its weakest block's effect / the largest effect."""
    return min(e for *_, e in run) / top if run and top > 0 else 0.0


def causal_route(ex, threshold: float = 0.3, effects: dict | None = None, found: dict | None = None) -> CausalRoute:
    """The causal route (see the module docstring); `effects`: block_effects(ex) and `found`: searches(ex,
    effects) when already known."""
    threshold = check_threshold(threshold)
    eff = block_effects(ex) if effects is None else effects
    found = searches(ex, eff) if found is None else found
    top = max(eff.values()) if eff else 0.0
    greedy, flipped = found["greedy"]
    runs = [("strongest", found["strongest"])] + ([("greedy", greedy)] if flipped else [])
    kind, best = max(runs, key=lambda kr: (_strength(kr[1], top), -len(kr[1])))  # ties: the shorter
    ok = bool(best) and min(e for *_, e in best) >= threshold * top  # app/engine/explain_service.route_at's test
    route = CausalRoute(best if ok else [])
    cand = [st for st in (best if best else greedy) if st[2] >= threshold * top]
    route.threshold, route.effects, route.spread, route.candidates = threshold, eff, not route, cand
    route.search = kind if ok else ""
    a = _base(ex)[3]
    other = (f"; measured on {ex.model.vocab[a][0]!r}, the float64 run's answer (float32 rounding made the engine "
             f"pick {ex.word!r})" if a != ex.word_index else "")
    if route.spread:
        route.note = (f"spread out: no run of blocks each removing ≥ {threshold:.0%} of the largest effect "
                      f"({top:.0%} of the answer's margin) — alone (strongest first) or on top of those before it "
                      f"(greedy) — changes the answer when knocked out together") + other
    elif kind == "strongest":
        route.note = (f"{len(route)} block(s), the strongest first, whose knock-out together changes the answer "
                      f"(effects alone; largest {top:.0%} of its margin)") + other
    else:
        route.note = (f"{len(route)} block(s) chosen greedily — each the one whose knock-out on top of those "
                      f"before it removes the most of the margin (its effect) — whose knock-out together changes "
                      f"the answer (largest single effect {top:.0%} of its margin)") + other
    return route


def _smallest_flip(ex, blocks: list[tuple[int, str]], base, keep: list | None = None) -> int:
    """The smallest k such that knocking out blocks[:k] together changes the answer (0: none does), from one
    batch of re-runs (prefix_contrasts). keep: a list that gets the variant of blocks[:1] (its re-run's
    residuals in its trace: the stream greedy_steps starts from)."""
    if not blocks:
        return 0
    c = prefix_contrasts(ex, blocks, base, keep)
    flips = np.flatnonzero(c < 0)
    return int(flips[0]) + 1 if flips.size else 0


def prefix_contrasts(ex, blocks: list[tuple[int, str]], base, keep: list | None = None) -> np.ndarray:
    """[len(blocks)] the answer's margin C with blocks[:k] knocked out together, k = 1..len(blocks), from one
    batch of re-runs: each prefix forks at its last block's layer from a prefix run that agrees with it below
    that layer, so it re-runs only the layers from its last block up. keep: as _smallest_flip's."""
    tw, run, c0, a = base
    bs = ex.model.config.attn_res_block_size
    vs = []
    for k in range(1, len(blocks) + 1):
        z = frozenset((ly - 1, pt) for ly, pt in blocks[:k])
        li = blocks[k - 1][0] - 1
        kept = [] if keep is not None and k == 1 else None
        v = vs[-1] if vs else None  # the run of blocks[:k-1] agrees below layer li with the first of its forks
        while v is not None and v.start > li:  # (itself, the run it forked from, ...) that starts at or below li:
            v = v.parent  # the blocks each fork adds lie at or above its start
        if v is not None:  # from that run's state at li, with blocks[:k] zeroed from li up
            vs.append(Variant(li, None, None, zero=z, trace=kept, parent=v))
        else:  # every block before it lies above li: from the clean run's state
            vs.append(Variant(li, *state_before(run, li, bs), zero=z, trace=kept))
    if keep is not None:
        keep.append(vs[0])
    return contrast(rerun(ex.model, vs, ex.knobs, ex.position, run), a)


def head_effects(ex) -> np.ndarray:
    """[L, H] total effect of zeroing each KDA / MLA head (H = the larger head count; a layer with fewer heads
    leaves NaN)."""
    tw, run, c0, a = _base(ex)
    bs = ex.model.config.attn_res_block_size
    L = len(run.layers)
    H = max(tw.dims.kda_heads, tw.dims.mla_heads)
    vs, keys = [], []
    for li in range(L):
        p0, R0 = state_before(run, li, bs)
        out = np.asarray(run.layers[li].tensors["mixer.out"], np.float64)
        for h, d in enumerate(head_deltas(tw, run, None, li)):
            vs.append(Variant(li, p0, R0, mixer=out + d))
            keys.append((li, h))
    res = np.full((L, H), np.nan)
    for (li, h), e in zip(keys, _effects(ex, tw, run, c0, a, vs).tolist()):
        res[li, h] = e
    return res


def expert_effects(ex) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """(the MoE layers 1-based, [M, E] total effect of removing each routed expert the router chose at the
    explained position — NaN for the others —, [M] of zeroing the shared experts)."""
    tw, run, c0, a = _base(ex)
    cfg = ex.model.config
    bs = cfg.attn_res_block_size
    t = ex.position
    moe = [li for li, f in enumerate(cfg.ffn_types) if f == "moe"]
    vs, keys = [], []
    for m, li in enumerate(moe):
        p0, R0 = state_before(run, li, bs)
        tn = run.layers[li].tensors
        out = np.asarray(tn["ffn.out"], np.float64)
        idx = np.asarray(tn["moe.topk_idx"])
        for e in np.asarray(idx[t]).tolist():
            first = int(np.flatnonzero((idx == e).any(-1))[0])
            vs.append(Variant(li, p0, R0, ffn=moe_with(tw, li, tn, {e: None}), first=first))
            keys.append((m, e))
        if "moe.shared" in tn:
            vs.append(Variant(li, p0, R0, ffn=out - np.asarray(tn["moe.shared"], np.float64)))
            keys.append((m, -1))
    res = np.full((len(moe), cfg.n_routed_experts), np.nan)
    shared = np.full(len(moe), np.nan)
    for (m, e), v in zip(keys, _effects(ex, tw, run, c0, a, vs).tolist()):
        if e < 0:
            shared[m] = v
        else:
            res[m, e] = v
    return tuple(li + 1 for li in moe), res, shared
