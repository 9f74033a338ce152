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

The causal route at threshold θ: the candidates are the blocks whose effect is ≥ θ × the largest block effect
(at most MAX_ROUTE, largest first); the route is the shortest run of them, largest first, whose knock-out
TOGETHER changes the answer (one batch of re-runs, one per prefix). When even all candidates together leave the
answer, the mechanism is spread out: the route is empty, `spread` is True and `note` says so (nothing falls back
to the direct contributions, which are not causal). What checks it: knocking out as many random blocks
(tests/compute/test_patching_cuts.py) and the engine's own float32 knock-out of the route.
"""
from __future__ import annotations

import numpy as np

from compute.explain.knockout import prefill
from compute.explain.patching import head_deltas, moe_with
from compute.explain.rerun import Variant, rerun, state_before, twin64

MAX_ROUTE = 24  # more candidates than this are no route one can read: spread out

__all__ = ["CausalRoute", "block_effects", "causal_route", "check_threshold", "head_effects", "expert_effects",
           "contrast", "MAX_ROUTE"]


class CausalRoute(list):
    """A list of (layer, part, effect) — layer 1-based, part "mixer" | "ffn" — that `knockout(blocks=[...])`
    accepts, largest effect first. threshold: the share of the largest block effect a block needs to be a
    candidate; candidates: those blocks (what the threshold lights); effects: {(layer, part): effect} of every
    block; spread: True when even all candidates knocked out together leave the answer (the route is empty);
    note: one line saying what the route is."""

    threshold: float
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
    if ex.ablation is not None:
        raise ValueError("causal effects are measured on an explanation without knock-outs")
    tw = twin64(ex.model)
    run = prefill(tw, ex.ids, ex.knobs)
    lg = np.asarray(run.final["lm_head"][ex.position], np.float64)
    a = int(np.argmax(lg))  # the explained word, unless float32 rounding made the engine pick another (chaotic toys)
    return tw, run, float(contrast(lg, a)), a


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


def causal_route(ex, threshold: float = 0.3, effects: dict | None = None) -> CausalRoute:
    """The causal route (see the module docstring); `effects`: block_effects(ex) when already known."""
    threshold = check_threshold(threshold)
    eff = block_effects(ex) if effects is None else effects
    base = _base(ex)
    top = max(eff.values()) if eff else 0.0
    cand = sorted(((ly, pt, e) for (ly, pt), e in eff.items() if top > 0 and e >= threshold * top),
                  key=lambda x: -x[2])[:MAX_ROUTE]
    k = _smallest_flip(ex, [(ly, pt) for ly, pt, _ in cand], base)
    route = CausalRoute(cand[:k] if k else [])
    route.threshold, route.effects, route.spread, route.candidates = threshold, eff, not route, cand
    a = base[3]
    other = (f"; measured on {ex.model.vocab[a][0]!r}, the float64 run's answer (float32 rounding made the engine "
             f"pick {ex.word!r})" if a != ex.word_index else "")
    route.note = (f"spread out: knocking out together the {len(cand)} strongest blocks (each ≥ {threshold:.0%} of the "
                  f"largest effect, {top:.0%} of the answer's margin) leaves the answer" if route.spread else
                  f"{len(route)} block(s), the strongest first, whose knock-out together changes the answer "
                  f"(largest single effect {top:.0%} of its margin)") + other
    return route


def _smallest_flip(ex, blocks: list[tuple[int, str]], base) -> int:
    """The smallest k such that knocking out blocks[:k] together changes the answer (0: none does), from one
    batch of re-runs (one per prefix)."""
    if not blocks:
        return 0
    tw, run, c0, a = base
    bs = ex.model.config.attn_res_block_size
    vs = []
    for k in range(1, len(blocks) + 1):
        z = frozenset((ly - 1, pt) for ly, pt in blocks[:k])
        start = min(li for li, _ in z)
        vs.append(Variant(start, *state_before(run, start, bs), zero=z))
    c = contrast(rerun(ex.model, vs, ex.knobs, ex.position, run), a)
    flips = np.flatnonzero(c < 0)
    return int(flips[0]) + 1 if flips.size else 0


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
