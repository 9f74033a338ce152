"""Which heads and experts carry the answer (issue 39.5), reduced for the Explain dock (Qt-free; the explanation
service calls it on its pool thread): the largest per-head and per-expert TOTAL effects of compute.explain —
each head zeroed (its output, after its norm and gate, before W_o), each expert the router chose at the explained
position removed from the latent mix, the shared experts zeroed; later layers re-run; the share of the answer's
margin over its strongest competitor removed (compute/explain/causal_route.py) — each with the words its own
output writes for and against the answer's position (a vocabulary projection: a direct reading, not causal).

    effects_of(ex, ("heads", "experts")) -> {"heads": [(layer, head, mixer, effect, up, down)],
                                             "experts": [(layer, expert or -1 for the shared ones, effect, up,
                                                          down)], "<part>_error": one line}

The "paths" part is path patching (compute/explain/path_patching.py) of every block against the proposed corrupted
prompt: each block's DIRECT path to the answer (its clean output sent only to the final readout, every other block
at its corrupted output), the TOTAL_ROWS largest with the same block sent along every path (to every later block
too: activation patching of that block), both the restored fraction of the logit difference (0 = the corrupted
run, 1 = the clean one):

    effects_of(ex, ("paths",)) -> {"paths": [(layer, part, direct, all_paths)], "paths_metric": one line,
                                   "paths_corrupted": the corrupted prompt, "paths_control": PathsControl}

Its control, computed the same way: the listed blocks' direct paths patched together, as many blocks drawn at
random (a fixed seed) from all of them patched together, and the median |direct path| of one block (over all).

The "units" part is the whole of both grids for the 3D view (scene/effect_cells.UnitEffects: every head of every
layer, every expert routed at the position and the shared ones, each with its words): kept per explanation
(UNITS_CACHE), since the dock asks again whenever another of its choices changes.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

TOP_EFFECTS = 10  # rows of each table: the largest |total effect| first
WORDS = 3  # words written for and against, per row (the first shown, all in its tooltip)
PARTS = ("heads", "experts", "units", "paths")
UNITS_CACHE: dict = {}  # explanation key -> UnitEffects (the latest few; an explanation's grids cost seconds)
UNITS_CACHE_MAX = 8
CONTROL_SEED = 0  # the paths table's random blocks: numpy.random.default_rng(CONTROL_SEED)


class PathsControl(NamedTuple):
    """The paths table's random-block control (restored fractions, corrupted 0, clean 1): listed = the table's n
    blocks' direct paths patched together; random = n blocks drawn from all `blocks` (seed) patched together;
    median = the median |direct path| of one block over all `blocks`."""

    n: int
    listed: float
    random: float
    median: float
    blocks: int
    seed: int


def effects_of(ex, which: tuple) -> dict:
    """The tables asked for (a part of PARTS) of a compute.explain.Explanation without knock-outs; a part that
    cannot be made says why in one line ("<part>_error")."""
    out: dict = {}
    for part in which:
        if part not in PARTS:
            raise ValueError(f"unknown effects part {part!r} (one of {', '.join(PARTS)})")
        try:
            if part == "paths":
                out.update(_paths(ex))
            else:
                out[part] = _heads(ex) if part == "heads" else _experts(ex) if part == "experts" else units_of(ex)
        except ValueError as exc:
            lines = [s for s in str(exc).splitlines() if s.strip()]
            out[f"{part}_error"] = lines[0] if lines else type(exc).__name__
    return out


def _largest(values: list[tuple]) -> list[tuple]:
    """The TOP_EFFECTS entries whose last item (the effect) is largest in size, a finite one."""
    rows = [v for v in values if np.isfinite(v[-1])]
    return sorted(rows, key=lambda v: -abs(v[-1]))[:TOP_EFFECTS]


def _heads(ex) -> list[tuple]:
    he = np.asarray(ex.head_effects, np.float64)  # [L, H]: NaN where a layer has fewer heads
    rows = _largest([(li + 1, h, float(he[li, h])) for li in range(he.shape[0]) for h in range(he.shape[1])])
    out = []
    for layer, head, eff in rows:
        up, down = ex.head_words(layer, head, WORDS)
        out.append((layer, head, ex.mixer_kind(layer), eff, up, down))
    return out


def _experts(ex) -> list[tuple]:
    layers, routed, shared = ex.expert_effects  # MoE layers 1-based, [M, E] (NaN: not routed here), [M]
    routed, shared = np.asarray(routed, np.float64), np.asarray(shared, np.float64)
    cand = [(int(ly), int(e), float(routed[m, e])) for m, ly in enumerate(layers) for e in range(routed.shape[1])]
    cand += [(int(ly), -1, float(shared[m])) for m, ly in enumerate(layers)]
    out = []
    for layer, e, eff in _largest(cand):
        up, down = ex.expert_words(layer, "shared" if e < 0 else e, WORDS)
        out.append((layer, e, eff, up, down))
    return out


def _paths(ex) -> dict:
    """The "paths" part: the TOP_EFFECTS blocks whose direct path restores most in size, each also sent along
    every path (every later block and the readout)."""
    grid = ex.direct_paths()
    L = grid.scores.shape[0]
    rows = _largest([(li + 1, part, float(grid.scores[li, j])) for li in range(L)
                     for j, part in enumerate(("mixer", "ffn"))])
    out = []
    for layer, part, direct in rows:
        later = ([(layer, "ffn")] if part == "mixer" else []) + [(ly, pt) for ly in range(layer + 1, L + 1)
                                                                  for pt in ("mixer", "ffn")]
        every = ex.path_patch(grid.corrupted, sender=(layer, part), receivers=later + ["logits"]).score
        out.append((layer, part, direct, float(every)))
    return {"paths": out, "paths_metric": grid.metric, "paths_corrupted": grid.corrupted,
            "paths_control": paths_control(ex, grid, [(ly, pt) for ly, pt, _d, _e in out])}


def paths_control(ex, grid, listed: list[tuple[int, str]], seed: int = CONTROL_SEED) -> PathsControl:
    """The control of the paths table's `listed` blocks against the direct-path grid `grid`: see PathsControl."""
    every = [(li + 1, part) for li in range(grid.scores.shape[0]) for part in ("mixer", "ffn")]
    drawn = np.random.default_rng(seed).choice(len(every), len(listed), replace=False)
    rnd = [every[i] for i in sorted(drawn.tolist())]
    together = [ex.path_patch(grid.corrupted, sender=blocks).score if blocks else 0.0 for blocks in (listed, rnd)]
    return PathsControl(len(listed), float(together[0]), float(together[1]),
                        float(np.median(np.abs(grid.scores))), len(every), seed)


def _key(ex) -> tuple:
    """What makes an explanation's grids: its engine (model and weights), tokens, position, knobs and word."""
    m = ex.model
    return (id(m), getattr(getattr(m, "config", None), "name", None), getattr(m, "weights_name", ""),
            tuple(int(i) for i in ex.ids), int(ex.position), repr(ex.knobs), int(ex.word_index))


def units_of(ex):
    """scene.effect_cells.UnitEffects of ex: head_effects [L, H], expert_effects and the words each head / chosen
    expert writes for and against (WORDS each); cached per explanation."""
    key = _key(ex)
    hit = UNITS_CACHE.get(key)
    if hit is not None:
        return hit
    units = experts_part(ex, heads_part(ex))
    while len(UNITS_CACHE) >= UNITS_CACHE_MAX:
        UNITS_CACHE.pop(next(iter(UNITS_CACHE)))
    UNITS_CACHE[key] = units
    return units


def heads_part(ex):
    """The heads' half of units_of (the quicker grid: one re-run per head), the experts still to come
    (UnitEffects.experts_computing)."""
    from scene.effect_cells import UnitEffects

    heads = np.array(ex.head_effects, np.float64)
    words: dict = {}
    for li in range(heads.shape[0]):
        for h in np.flatnonzero(np.isfinite(heads[li])).tolist():
            words[("head", li + 1, h)] = _pieces(ex.head_words(li + 1, h, WORDS))
    return UnitEffects(heads=heads, words=words, experts_computing=True)


def experts_part(ex, heads):
    """heads_part's UnitEffects completed with the experts' grid (one re-run per expert chosen at the position,
    at every MoE layer, and per layer's shared experts) and their words."""
    from dataclasses import replace

    layers, routed, shared = ex.expert_effects
    routed, shared = np.array(routed, np.float64), np.array(shared, np.float64)
    words = dict(heads.words)
    for m, ly in enumerate(layers):
        for e in np.flatnonzero(np.isfinite(routed[m])).tolist():
            words[("expert", int(ly), e)] = _pieces(ex.expert_words(int(ly), e, WORDS))
        if np.isfinite(shared[m]):
            words[("expert", int(ly), -1)] = _pieces(ex.expert_words(int(ly), "shared", WORDS))
    return replace(heads, expert_layers=tuple(int(x) for x in layers), routed=routed, shared=shared, words=words,
                   experts_computing=False)


def _pieces(up_down) -> tuple:
    """(promoted pieces, suppressed pieces) of a (promoted, suppressed) list of (piece, value) pairs."""
    up, down = up_down
    return tuple(p for p, _v in up), tuple(p for p, _v in down)
