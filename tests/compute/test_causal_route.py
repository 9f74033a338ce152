"""The causal route's two searches (compute/explain/causal_route.py, docs/spec/k3-math.md §12), checked against
knock-outs through the float64 twin's own layer loop (ToyK3.forward with hooks, not the batched re-runs the
route uses). The slider's contract (the route at any threshold cut from the one at 1 %) is checked in
tests/app/test_route_threshold_cut.py."""
from __future__ import annotations

import numpy as np
import pytest

from compute.engine import ToyK3
from compute.explain import Explanation
from compute.explain.causal_route import contrast
from compute.explain.rerun import twin64
from compute.trace import Knobs

GREEDY = "the robot picks up the cup. it puts the"  # the greedy run (3 blocks) is stronger than strongest-first


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


def test_the_greedy_steps_stream_equals_a_knocked_out_prefill(m):
    """The greedy steps start each batch from the residual stream their chosen candidate's re-run kept (no full
    prefill per step): that stream equals the twin's own layer loop with the blocks zeroed (ToyK3.forward's
    hooks), at every layer."""
    from compute.explain.causal_route import _Stream, _base, _knocked_stream
    from compute.explain.knockout import make_ablation, prefill

    ex = Explanation.of_prompt(m, GREEDY)
    tw, run, _, _ = _base(ex)
    blocks = [(5, "ffn"), (2, "mixer")]
    s1 = _knocked_stream(ex, run, _Stream.of(run), blocks[:1])
    s2 = _knocked_stream(ex, run, s1, blocks)  # on top of the first: from layer 2 up
    for got, bl in ((s1, blocks[:1]), (s2, blocks)):
        want = prefill(tw, ex.ids, ex.knobs, make_ablation(tw, len(ex.ids), blocks=bl))
        for li, ly in enumerate(want.layers):
            w = np.asarray(ly.tensors["residual"], np.float64)
            assert np.abs(got.layers[li].tensors["residual"] - w).max() <= 1e-9 * (1 + np.abs(w).max())
    assert np.abs(s1.layers[3].tensors["residual"] - run.layers[3].tensors["residual"]).max() == 0  # below 5
    assert np.abs(s1.layers[4].tensors["residual"] - run.layers[4].tensors["residual"]).max() > 1e-6


def test_the_prefix_runs_fork_and_still_equal_the_engine_loop(m):
    """The strongest-first search's prefix knock-outs (one batch; each prefix forks from an earlier prefix run
    at its last block's layer) against the twin's own layer loop, block orders that go down, up and down again
    (forks from the run before, from an earlier one, and from the clean run)."""
    from compute.explain.causal_route import _base, prefix_contrasts

    ex = Explanation.of_prompt(m, GREEDY)
    base = _base(ex)
    blocks = [(18, "ffn"), (1, "ffn"), (93, "ffn"), (90, "mixer"), (40, "mixer"), (40, "ffn"), (2, "mixer"),
              (60, "ffn")]
    got = prefix_contrasts(ex, blocks, base)
    want = [_knocked(m, ex, blocks[:k]) for k in range(1, len(blocks) + 1)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * max(1.0, abs(base[2])))
    assert len(set(np.round(got, 6))) == len(blocks)  # each prefix is a different knock-out
