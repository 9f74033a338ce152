"""Which heads and experts carry the answer (issue 39.5), reduced for the Explain dock (Qt-free; the explanation
service calls it on its pool thread): the largest per-head and per-expert TOTAL effects of compute.explain —
each head zeroed (its output, after its norm and gate, before W_o), each expert the router chose at the explained
position removed from the latent mix, the shared experts zeroed; later layers re-run; the share of the answer's
margin over its strongest competitor removed (compute/explain/causal_route.py) — each with the words its own
output writes for and against the answer's position (a vocabulary projection: a direct reading, not causal).

    effects_of(ex, ("heads", "experts")) -> {"heads": [(layer, head, mixer, effect, up, down)],
                                             "experts": [(layer, expert or -1 for the shared ones, effect, up,
                                                          down)], "<part>_error": one line}
"""
from __future__ import annotations

import numpy as np

TOP_EFFECTS = 10  # rows of each table: the largest |total effect| first
WORDS = 3  # words written for and against, per row (the first shown, all in its tooltip)
PARTS = ("heads", "experts")


def effects_of(ex, which: tuple) -> dict:
    """The tables asked for (a part of PARTS) of a compute.explain.Explanation without knock-outs; a part that
    cannot be made says why in one line ("<part>_error")."""
    out: dict = {}
    for part in which:
        if part not in PARTS:
            raise ValueError(f"unknown effects part {part!r} (one of {', '.join(PARTS)})")
        try:
            out[part] = _heads(ex) if part == "heads" else _experts(ex)
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
