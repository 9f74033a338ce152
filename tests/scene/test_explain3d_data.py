"""Data for the 3D explanation (features I1/I3): the lens column and the lit route, from the trained toy's
Explanation at the default prompt (values from compute, not constants)."""
from __future__ import annotations

import pytest

from app import api
from scene.lens_column import column_words
from scene.route_glow import block_values, lit_blocks


@pytest.fixture(scope="module")
def ex():
    return api.explain("아이가 상자를 집었다. 그리고")


def test_lens_column_words_are_the_lens_top_words(ex):
    ranks = ex.lens_rank(ex.word)
    col = column_words((e.layer, e.top[0][0], e.top[0][1], r) for e, r in zip(ex.lens, ranks))
    assert [c.text for c in col] == [e.top[0][0] for e in ex.lens]
    assert [c.layer for c in col] == list(range(len(ex.lens)))
    assert [c.is_answer for c in col] == [r == 1 for r in ranks]
    assert [c.text for c in col if c.is_answer] == [ex.word] * sum(r == 1 for r in ranks)
    firsts = [c.layer for c in col if c.is_first]
    assert firsts == [ranks.index(1)] and not col[0].is_answer


def test_route_lights_exactly_blocks_over_threshold(ex):
    vals = block_values(ex.blocks)
    assert abs(sum(vals.values()) + ex.rest - ex.logit) < 1e-4
    mags = sorted(abs(v) for v in vals.values())
    lo, hi = mags[len(mags) // 2], mags[-3]
    lit_lo, lit_hi = lit_blocks(ex.blocks, lo), lit_blocks(ex.blocks, hi)
    assert set(lit_lo) == {k for k, v in vals.items() if abs(v) >= lo}
    assert set(lit_hi) == {k for k, v in vals.items() if abs(v) >= hi} and len(lit_hi) >= 3
    assert set(lit_hi) < set(lit_lo)  # moving the threshold changes the set
    assert all(s == (1 if vals[k] >= 0 else -1) for k, s in lit_lo.items())
    with pytest.raises(ValueError):
        lit_blocks(ex.blocks, -1.0)
