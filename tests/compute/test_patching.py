"""Causal explanations (docs/spec/k3-math.md §11-§13): activation patching, the batched re-runs it stands on,
total effects and the causal route, resample sources. Checked against independent re-runs through the engine's
own layer loop (ToyK3.forward with hooks), not against the code under test. The figures over every
repeated-object cut run with K3_SURVEY=1 (tests/compute/test_patching_cuts.py)."""
from __future__ import annotations

import numpy as np
import pytest

from compute.engine import ToyK3
from compute.explain import Explanation
from compute.explain.causal_route import contrast
from compute.explain.counterfactual import propose, repeated_object_cuts
from compute.explain.knockout import prefill
from compute.explain.rerun import Variant, rerun, state_before, twin64

PROMPT = "아이가 상자를 집었다. 그리고"  # predicts ' 상자', the earlier mention at position 2


@pytest.fixture(scope="module")
def m():
    return ToyK3(device="cpu")


@pytest.fixture(scope="module")
def ex(m):
    return Explanation.of_prompt(m, PROMPT)


def _forward64(m, ids, hooks=None):
    """Logits [T, V] of the float64 twin's own layer loop (ToyK3.forward), with hooks."""
    tw = twin64(m)
    _, _, lg = tw.forward(list(ids), 0, ex_knobs(), None, hooks)
    return np.asarray(lg, np.float64)


def ex_knobs():
    from compute.trace import Knobs

    return Knobs(temperature=0.0)


def test_a_rerun_that_changes_nothing_is_its_base(m, ex):
    tw = twin64(m)
    run = prefill(tw, ex.ids, ex.knobs)
    bs = m.config.attn_res_block_size
    vs = [Variant(li, *state_before(run, li, bs)) for li in (0, 1, 12, 13, 50, 92, 93)]
    lg = rerun(m, vs, ex.knobs, ex.position, run)
    assert np.abs(lg - np.asarray(run.final["lm_head"][ex.position])).max() < 1e-9


def test_residual_patching_against_the_engine_loop(m, ex):
    pt = ex.patch(layers=[0, 93])
    assert pt.scores.shape == (94, 8) and np.isnan(pt.scores[1]).all()
    assert "' 상자'" in pt.swap and pt.corrupted != pt.clean and len(m.encode_prompt(pt.corrupted)) == 8
    assert pt.metric.count("\n") == 0 and "restored fraction" in pt.metric
    # independent: the clean embedding row of the mention put into the corrupted run, the engine's own loop
    ids_c = [i for _, i in m.encode_prompt(pt.corrupted)]
    emb_clean = np.asarray(twin64(m).embed_ids(ex.ids))
    lg_clean, lg_corr = _forward64(m, ex.ids)[-1], _forward64(m, ids_c)[-1]
    a, b = ex.word_index, [pc for pc, _ in m.vocab].index(pt.corrupted_word)

    def hook(e):
        e = np.array(e)
        e[2] = emb_clean[2]
        return e

    lg_p = _forward64(m, ids_c, {"embedding": hook})[-1]
    ld = lambda lg: lg[a] - lg[b]  # noqa: E731
    want = (ld(lg_p) - ld(lg_corr)) / (ld(lg_clean) - ld(lg_corr))
    assert abs(pt.scores[0, 2] - want) < 1e-6
    # the trained toy copies the mention: its embedding restores the answer, no other earlier position does
    assert pt.scores[0, 2] >= 0.9 and max(np.delete(pt.scores[0, :-1], 2)) <= 0.1
    assert pt.scores[0, 0] == pt.scores[0, 1] == 0.0  # before the swap nothing differs
    assert abs(pt.scores[93, -1] - 1.0) < 1e-9  # the whole state at the last position: the clean output
    assert pt.top(1)[0][0] in ((93, 7), (0, 2))


def test_block_patching_against_the_engine_loop(m, ex):
    pt = ex.patch(sites="blocks")
    assert pt.scores.shape == (93, 2, 8)
    ids_c = [i for _, i in m.encode_prompt(pt.corrupted)]
    tw = twin64(m)
    clean = prefill(tw, ex.ids, ex.knobs)
    a, b = ex.word_index, [pc for pc, _ in m.vocab].index(pt.corrupted_word)
    lg_clean, lg_corr = _forward64(m, ex.ids)[-1], _forward64(m, ids_c)[-1]
    ld = lambda lg: lg[a] - lg[b]  # noqa: E731
    for (ly, part, pos) in [(3, 0, 7), (10, 1, 2)]:
        key = "mixer" if part == 0 else "ffn"
        val = np.asarray(clean.layers[ly - 1].tensors[key + ".out"], np.float64)[pos]

        def hook(li, y, t, ly=ly, pos=pos, val=val):
            if li != ly - 1:
                return y
            y = np.array(y)
            y[pos] = val
            return y

        lg = _forward64(m, ids_c, {key: hook})[-1]
        want = (ld(lg) - ld(lg_corr)) / (ld(lg_clean) - ld(lg_corr))
        assert abs(pt.scores[ly - 1, part, pos] - want) < 1e-6, (ly, part, pos)
    (ly, part, pos), s = pt.top(1)[0]
    assert 1 <= ly <= 93 and s == np.nanmax(pt.scores)


def test_head_expert_and_source_grids(m, ex):
    h = ex.patch(sites="heads")
    assert h.scores.shape == (93, 2) and np.isfinite(h.scores).all()
    src = ex.patch(sites="sources")
    assert src.scores.shape == (8,) and src.scores[0] > 0.9  # the embedding as an AttnRes source carries it
    e = ex.patch(sites="experts")
    assert e.scores.shape == (92, 896) and e.shared.shape == (92,)
    assert 16 <= np.isfinite(e.scores).sum(1).min() and np.isfinite(e.scores).sum(1).max() <= 32
    assert all(2 <= ly <= 93 for (ly, _), _ in e.top(3))


def test_kda_state_patching(m, ex):
    st = ex.patch(sites="kda_state")
    kda = [li for li, k in enumerate(m.config.mixer_types) if k == "kda"]
    assert st.scores.shape == (93, 8) and np.isnan(np.delete(st.scores, kda, 0)).all()
    s = st.scores[kda]
    assert np.isfinite(s).all() and (s[:, :2] == 0).all() and (s[:, -1] == 0).all()  # same states / reaches nothing
    assert s[:, 2:7].max() > 0.05  # the states after the mention carry some of it forward
    (ly, pos), top = st.top(1)[0]
    assert ly - 1 in kda and 2 <= pos <= 6 and top == np.nanmax(st.scores)


def test_patch_arguments(m, ex):
    for bad in ("5", -1, 1.5, True):
        with pytest.raises(ValueError):
            ex.patch(layers=[0]).top(bad)
    for kw in ({"sites": "everything"}, {"sites": 3}, {"layers": [94]}, {"layers": "0"},
               {"sites": "heads", "layers": [0]}):
        with pytest.raises(ValueError) as err:
            ex.patch(**kw)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="same count"):
        ex.patch("로봇이 컵을")
    out = Explanation.of_prompt(m, "Kimi K3 reads the")
    with pytest.raises(ValueError, match="outside the toy language"):
        out.patch()
    p = out.patch("Kimi K3 reads a", layers=[0])  # given by the caller: used as it is
    assert p.corrupted == "Kimi K3 reads a" and p.swap == ""
    with pytest.raises(ValueError, match="knock-outs"):
        ex.knockout(tokens=[0]).patch()


def test_proposals_swap_the_mention_for_another_of_its_role():
    cuts = repeated_object_cuts()
    assert len(cuts) == 72 and len(repeated_object_cuts(distractor=True)) == 72
    from compute.language.tokenizer import ToyTokenizer

    tk = ToyTokenizer()
    for prompt, answer, _ in cuts[::7] + repeated_object_cuts(True)[::9]:
        pieces = tk.split(prompt)
        pr = propose(pieces)
        assert pr.old == answer and pr.new != answer and len(pr.pieces) == len(pieces)
        assert [i for i, (x, y) in enumerate(zip(pieces, pr.pieces)) if x != y] == [pr.position]


def test_causal_route_and_total_effects(m, ex):
    r = ex.causal_route()
    assert r.threshold == 0.3 and len(r.effects) == 186 and r.note.count("\n") == 0
    top = max(r.effects.values())
    assert all(e >= 0.3 * top for *_, e in r.candidates) and (not r or r.candidates == list(r))
    # independent: the largest block's knock-out through the twin's own layer loop (ToyK3.forward hooks)
    (ly, pt), eff = max(r.effects.items(), key=lambda kv: kv[1])
    c0 = contrast(_forward64(m, ex.ids)[-1], ex.word_index)

    def knocked(blocks):
        zero = {(b - 1, p) for b, p in blocks}
        hooks = {k: (lambda li, y, t, k=k: np.zeros_like(y) if (li, k) in zero else y) for k in ("mixer", "ffn")}
        return contrast(_forward64(m, ex.ids, hooks)[-1], ex.word_index)

    assert abs(eff - (c0 - knocked([(ly, pt)])) / c0) < 1e-6
    if r:  # a run whose knock-out together changes the answer, and no shorter prefix of it does
        assert knocked(r.blocks) < 0 and (len(r) == 1 or knocked(r.blocks[:-1]) > 0)
        assert ex.knockout(blocks=r.blocks).ablation.blocks == tuple(r.blocks)
        assert r.search in ("strongest", "greedy") and all(e >= 0.3 * top for *_, e in r)
        if r.search == "greedy":  # each effect: the margin its knock-out removes on top of the blocks before it
            for k in range(1, len(r)):
                want = (knocked(r.blocks[:k]) - knocked(r.blocks[:k + 1])) / c0
                assert abs(r[k][2] - want) < 1e-6
        else:  # strongest first: the blocks' effects alone, largest first
            assert [e for *_, e in r] == sorted((e for *_, e in r), reverse=True)
            assert all(abs(e - r.effects[(ly, pt)]) < 1e-12 for ly, pt, e in r)
    else:
        assert r.spread and r.note.startswith("spread out")
    one = Explanation.of_prompt(m, "로봇이 컵을 집었다. 그리고").causal_route()  # one block flips it alone
    assert len(one) == 1 and one[0][2] >= 1 and not one.spread
    high = ex.causal_route(1.0)  # only the largest block, which does not change the answer alone
    assert eff < 1 and list(high) == [] and high.spread and high.note.startswith("spread out")
    for bad in (0, -1, "0.3", None, 1.5, True):
        with pytest.raises(ValueError):
            ex.causal_route(bad)
    he = ex.head_effects
    assert he.shape == (93, 2) and np.isfinite(he).all()
    promoted, suppressed = ex.head_words(4, 1, k=3)
    assert len(promoted) == len(suppressed) == 3 and promoted[0][1] >= suppressed[0][1]
    with pytest.raises(ValueError):
        ex.head_words(4, 2)
    assert ex.expert_words(4, "shared")[0]


def test_sources_name_the_mention_and_their_measure(m, ex):
    assert ex.source_mode == "resample" and ex.source_metric == "contrast"
    assert "resample ablation" in ex.source_measure and "strongest competitor" in ex.source_measure
    assert ex.top_source().position == 2 and ex.top_source(earlier_only=False).position in (2, 7)
    assert len(ex.sources) == 8 and len(ex.source_answers) == 8
    # the re-runs resume from the prefix's states: equal to full re-runs through the engine's own forward
    ez = Explanation.of_prompt(m, PROMPT, source_mode="mean", source_metric="logit")
    from compute.explain.resample import _full, replacement_rows

    for j in (0, 5):
        row = replacement_rows(m, ez.pieces[j], "mean")[0]
        assert abs(ez.sources[j].effect - (ez.logit - _full(ez, j, row)[ez.word_index])) < 1e-4
    with pytest.raises(ValueError):
        Explanation.of_prompt(m, PROMPT, source_mode="half")
    with pytest.raises(ValueError):
        Explanation.of_prompt(m, PROMPT, source_metric="prob")
    with pytest.raises(ValueError):
        ex.top_source(earlier_only="yes")
