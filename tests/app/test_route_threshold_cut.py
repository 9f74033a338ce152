"""The causal route's slider contract (compute/explain/causal_route.py, docs/spec/k3-math.md §12): the route at
any threshold follows from the one computed at 1 % — compute.explain's causal_route(θ) and
app/engine/explain_service.route_at (which cuts the 1 % route without a re-run) agree, for a greedy and a
strongest-first route."""
from __future__ import annotations

import pytest

from app.engine.explain_service import MIN_ROUTE_FRACTION, route_at
from compute.engine import ToyK3
from compute.explain import Explanation
from compute.explain.causal_route import MIN_THRESHOLD

GREEDY = "the robot picks up the cup. it puts the"  # the greedy run (3 blocks) is stronger than strongest-first
STRONGEST = "the cat picks up the cup. it puts the"  # strongest-first (11 blocks) is the stronger run


@pytest.fixture(scope="module")
def m():
    return ToyK3(device="cpu")


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
