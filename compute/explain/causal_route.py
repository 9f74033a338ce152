"""The causal route and per-head / per-expert total effects: knock-outs re-run exactly (docs/spec/k3-math.md §12).

Each block (layer ℓ's mixer or FFN), head or expert is knocked out in the explained run — zero ablation, as
`Explanation.knockout(blocks=...)` does: the block's output zeroed at every position; a head's output (after its
norm and gate) zeroed before W_o; an expert's weighted output removed from the latent mix wherever the router
chose it, the latent norm re-evaluated — and layers ℓ..L re-run (compute.explain.rerun, float64). Its TOTAL
effect on the explained word, through everything later layers make of it, is the share of the answer's margin
it removes:

    effect = (C(clean) − C(knocked out)) / C(clean),   C = logit[answer] − max_{v ≠ answer} logit[v]

(contrastive: a change that moves every word alike is no effect). effect ≥ 1 means the answer changes.
The causal route is the blocks with effect ≥ threshold, largest first. Where none reaches it the mechanism
is spread over many blocks: `CausalRoute.spread` says so (the route is empty; nothing falls back to the
direct contributions, which are not causal).
"""
from __future__ import annotations

import numpy as np

from compute.explain.knockout import prefill
from compute.explain.patching import head_deltas, moe_with
from compute.explain.rerun import Variant, rerun, state_before, twin64

__all__ = ["CausalRoute", "block_effects", "causal_route", "route_from", "check_threshold", "head_effects", "expert_effects", "contrast"]


class CausalRoute(list):
    """A list of (layer, part, effect) — layer 1-based, part "mixer" | "ffn" — that `knockout(blocks=[...])`
    accepts, largest effect first. threshold: the cut; effects: {(layer, part): effect} of every block;
    spread: True when no block reaches the threshold; note: one line saying what the route is."""

    threshold: float
    effects: dict
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
    c0 = float(contrast(np.asarray(run.final["lm_head"][ex.position], np.float64), ex.word_index))
    if not c0 > 0:
        raise ValueError("the float64 run does not predict the explained word: no margin to measure effects on")
    return tw, run, c0


def _effects(ex, tw, run, c0, variants) -> np.ndarray:
    lg = rerun(ex.model, variants, ex.knobs, ex.position, run)
    return (c0 - contrast(lg, ex.word_index)) / c0


def block_effects(ex) -> dict[tuple[int, str], float]:
    """{(layer, "mixer" | "ffn"): total effect} of zeroing each block (layers 1-based)."""
    tw, run, c0 = _base(ex)
    bs = ex.model.config.attn_res_block_size
    T = ex.position + 1
    vs, keys = [], []
    for li in range(len(run.layers)):
        p0, R0 = state_before(run, li, bs)
        z = np.zeros((T, p0.shape[1]))
        vs += [Variant(li, p0, R0, mixer=z), Variant(li, p0, R0, ffn=z)]
        keys += [(li + 1, "mixer"), (li + 1, "ffn")]
    return dict(zip(keys, _effects(ex, tw, run, c0, vs).tolist()))


def check_threshold(threshold) -> float:
    """threshold as a float in (0, 10] (ValueError otherwise)."""
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (int, float, np.floating, np.integer)) \
            or not 0.0 < float(threshold) <= 10.0:
        raise ValueError(f"threshold must be a number in (0, 10] (a share of the answer's margin), got {threshold!r}")
    return float(threshold)


def causal_route(ex, threshold: float = 0.3) -> CausalRoute:
    """The blocks whose knock-out removes ≥ threshold of the answer's margin (see the module docstring)."""
    threshold = check_threshold(threshold)
    return route_from(block_effects(ex), float(threshold))


def route_from(eff: dict, threshold: float) -> CausalRoute:
    """The CausalRoute of block effects `eff` ({(layer, part): effect}) at `threshold`."""
    route = CausalRoute(sorted(((ly, pt, e) for (ly, pt), e in eff.items() if e >= threshold), key=lambda x: -x[2]))
    route.threshold, route.effects, route.spread = float(threshold), eff, not route
    top = max(eff.values()) if eff else 0.0
    route.note = (f"spread out: no block's knock-out removes {threshold:.0%} of the answer's margin (largest "
                  f"{top:.0%})" if route.spread else
                  f"{len(route)} block(s) whose knock-out removes ≥ {threshold:.0%} of the answer's margin")
    return route


def head_effects(ex) -> np.ndarray:
    """[L, H] total effect of zeroing each KDA / MLA head (H = the larger head count; a layer with fewer heads
    leaves NaN)."""
    tw, run, c0 = _base(ex)
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
    for (li, h), e in zip(keys, _effects(ex, tw, run, c0, vs).tolist()):
        res[li, h] = e
    return res


def expert_effects(ex) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """(the MoE layers 1-based, [M, E] total effect of removing each routed expert the router chose at the
    explained position — NaN for the others —, [M] of zeroing the shared experts)."""
    tw, run, c0 = _base(ex)
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
    for (m, e), v in zip(keys, _effects(ex, tw, run, c0, vs).tolist()):
        if e < 0:
            shared[m] = v
        else:
            res[m, e] = v
    return tuple(li + 1 for li in moe), res, shared
