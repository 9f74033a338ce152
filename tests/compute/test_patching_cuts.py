"""Issue 39's figures over the toy language's repeated-object cuts (docs/spec/k3-math.md §11-§13): 72 cuts (both
languages, both English put verbs, every pair — held-out ones included) without and with a sentence about
another object before them, and 72 with two such sentences (the causal route's design was chosen on the first
144; these it was not tuned on). A survey, tens of minutes on 2 cores: runs with K3_SURVEY=1 (`K3_SURVEY=1
pytest -s` prints the figures for trained and random weights), by hand, not by .ci/run (K3_SLOW: the contract
tests that start processes)."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest

from compute.language import task
from compute.engine import ToyK3
from compute.explain import Explanation
from compute.explain.counterfactual import repeated_object_cuts

pytestmark = pytest.mark.skipif(not os.environ.get("K3_SURVEY"), reason="a survey of every cut: set K3_SURVEY=1")


def two_distractor_cuts() -> list[tuple[str, str, str]]:
    """The distractor cuts with one more sentence about another object before them (a set the route's design
    was not tuned on): (prompt, answer, mention)."""
    out = []
    for k, (prompt, answer, mention) in enumerate(repeated_object_cuts(True)):
        ko = not prompt.startswith("the")
        objs = [o for o in (task.KO_OBJECTS if ko else task.EN_OBJECTS) if o != answer and o not in prompt]
        o = objs[(k * 3) % len(objs)]
        if ko:
            s = list(task.KO_SUBJECTS)[(k + 1) % 4]
            pre = f"{s}{task.KO_SUBJECTS[s]}{o}{task.KO_OBJECTS[o]} 밀었다.\n"
        else:
            s = list(task.EN_SUBJECTS)[(k + 1) % 4]
            pre = f"the{s}{' push' if task.EN_SUBJECTS[s] else ' pushes'} the{o}.\n"
        out.append((pre + prompt, answer, mention))
    return out


def _figures(m, route_every: int = 4, cases=None) -> dict:
    cases = [(d, c) for d in (False, True) for c in repeated_object_cuts(d)] if cases is None else cases
    n = len(cases)
    f = dict(n=n, right=0, source=0, mention=0, others=0, last=0, routed=0, route_n=0, route_changes=0,
             random_changes=0, spread=0)
    for i, (dist, (prompt, answer, _)) in enumerate(cases):
        ex = Explanation.of_prompt(m, prompt)
        f["right"] += ex.word == answer
        pcs = ex.pieces
        ment = max(j for j, pc in enumerate(pcs[:-1]) if pc == answer)
        near = {ment, ment + 1} if pcs[ment + 1] in ("을", "를") else {ment, ment - 1}  # its particle / article
        f["source"] += ex.top_source().position in near
        pt = ex.patch(layers=[0, len(ex.run.layers)])
        row = pt.scores[0]
        f["mention"] += row[ment] >= 0.9
        f["others"] += max(np.delete(row[:-1], ment)) <= 0.1
        f["last"] += pt.scores[-1, -1] >= 0.9
        if i % route_every:
            continue
        f["route_n"] += 1
        r = ex.causal_route()
        if not r:
            f["spread"] += 1
            continue
        f["routed"] += 1
        f["route_changes"] += bool(ex.knockout(blocks=r.blocks).changed)
        rnd = random.Random(i).sample(sorted(r.effects), len(r))
        f["random_changes"] += bool(ex.knockout(blocks=rnd).changed)
    return f


@pytest.fixture(scope="module")
def trained():
    return _figures(ToyK3(device="cpu"))


def test_figures_with_trained_weights(trained):
    f = trained
    print("\ntrained:", f)
    assert f["right"] == f["n"]  # the toy copies the mention on every cut
    assert f["source"] >= 0.9 * f["n"]  # the mention (or its particle / article) is the top earlier source
    assert f["mention"] >= 0.9 * f["n"] and f["others"] >= 0.9 * f["n"] and f["last"] >= 0.9 * f["n"]
    # the route (the stronger of the strongest-first and the greedy run) is not empty on 135 / 144 of these cuts
    # (33 / 36 of those checked here); strongest-first alone: 128 / 144. Its knock-out changes the answer on
    # 134 / 135, as many random blocks on 0 / 135
    assert f["routed"] >= 0.9 * f["route_n"]
    assert f["route_changes"] >= 0.8 * f["routed"] and f["random_changes"] <= 0.3 * f["routed"]


def test_the_route_on_cuts_it_was_not_tuned_on():
    """The route's design (two searches, the stronger run) was chosen on the cuts above; here the distractor cuts
    with a second sentence about another object before them, every one routed. Measured: not empty on 67 / 72
    (strongest-first alone 62 / 72); the route's knock-out changes the answer on 66 / 67, as many random blocks
    on 0 / 67."""
    f = _figures(ToyK3(device="cpu"), route_every=1, cases=[(True, c) for c in two_distractor_cuts()])
    print("\ntwo distractor sentences:", f)
    assert f["right"] == f["n"] == 72
    assert f["routed"] >= 0.9 * f["route_n"]
    assert f["route_changes"] >= 0.8 * f["routed"] and f["random_changes"] <= 0.3 * f["routed"]


def test_figures_with_random_weights():
    f = _figures(ToyK3(device="cpu", weights="random"), route_every=8)
    print("\nrandom:", f)  # reported, not asserted: random weights copy nothing
    assert f["n"] == 144
