"""The causal route's two searches (compute/explain/causal_route.py, docs/spec/k3-math.md §12), checked against
knock-outs through the float64 twin's own layer loop (ToyK3.forward with hooks, not the batched re-runs the
route uses), and the slider's contract: the route at any threshold follows from the one computed at 1 %
(app/explain_service.route_at cuts it without a re-run)."""
from __future__ import annotations

import numpy as np
import pytest

from app.explain_service import MIN_ROUTE_FRACTION, route_at
from compute.engine import ToyK3
from compute.explain import Explanation
from compute.explain.causal_route import MIN_THRESHOLD, contrast
from compute.explain.rerun import twin64
from compute.trace import Knobs

GREEDY = "the robot picks up the cup. it puts the"  # the greedy run (3 blocks) is stronger than strongest-first
STRONGEST = "the cat picks up the cup. it puts the"  # strongest-first (11 blocks) is the stronger run


@pytest.fixture(scope="module")
def m():
    return ToyK3(device="cpu")


def _knocked(m, ex, blocks):
    """C = logit[answer] − the largest other logit with `blocks` zeroed, through ToyK3.forward's hooks."""
    zero = {(b - 1, p) for b, p in blocks}
    hooks = {k: (lambda li, y, t, k=k: np.zeros_like(y) if (li, k) in zero else y) for k in ("mixer", "ffn")}
    _, _, lg = twin64(m).forward(list(ex.ids), 0, Knobs(temperature=0.0), None, hooks)
    return float(contrast(np.asarray(lg, np.float64)[-1], ex.word_index))


def test_the_greedy_run_against_the_engine_loop(m):
    ex = Explanation.of_prompt(m, GREEDY)
    r = ex.causal_route()
    assert r.search == "greedy" and 2 <= len(r) <= 4 and not r.spread and "greedily" in r.note
    c0 = _knocked(m, ex, [])
    assert _knocked(m, ex, r.blocks) < 0 < _knocked(m, ex, r.blocks[:-1])  # together they change the answer
    assert abs(r[0][2] - max(r.effects.values())) < 1e-12  # it starts at the largest block
    for k in range(1, len(r)):  # each effect: what its knock-out removes on top of the blocks before it
        want = (_knocked(m, ex, r.blocks[:k]) - _knocked(m, ex, r.blocks[:k + 1])) / c0
        assert abs(r[k][2] - want) < 1e-6
    # greedy is not strongest-first here: some block of the run is weaker alone than a block it skipped
    alone = sorted(r.effects.values(), reverse=True)
    assert [r.effects[b] for b in r.blocks] != alone[:len(r)]
    assert bool(ex.knockout(blocks=r.blocks).changed)  # the engine's own float32 knock-out agrees


def test_the_route_at_any_threshold_follows_from_one_computation(m):
    for prompt in (GREEDY, STRONGEST):
        ex = Explanation.of_prompt(m, prompt)
        low = ex.causal_route(MIN_THRESHOLD)
        assert MIN_THRESHOLD == MIN_ROUTE_FRACTION and low
        causal = dict(effects=dict(low.effects), route=[(ly, pt, e) for ly, pt, e in low])
        top = max(low.effects.values())
        strength = min(e for *_, e in low) / top
        for th in (0.05, 0.2, 0.3, min(1.0, strength * (1 - 1e-9)), min(1.0, strength * (1 + 1e-6)), 0.5, 1.0):
            r = ex.causal_route(th)
            assert list(r) == (list(low) if th * top <= min(e for *_, e in low) else [])
            assert route_at(causal, th) == list(r)
            if not r:
                assert r.spread and r.note.startswith("spread out")
    r = Explanation.of_prompt(m, STRONGEST).causal_route()
    assert r.search == "strongest" and [e for *_, e in r] == sorted((e for *_, e in r), reverse=True)
