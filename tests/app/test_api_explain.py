"""app.api.explain: the notebook API of "Why this word"."""
from __future__ import annotations

import numpy as np
import pytest

from app import api
from compute.engine import ToyK3

PROMPT = "아이가 상자를 집었다. 그리고"


@pytest.fixture(scope="module")
def ex():
    return api.explain(PROMPT)


def test_explain_default_position_and_word(ex):
    assert ex.position == 7 and ex.word == " 상자"
    assert ex.model.weights_name == "trained"
    assert abs(sum(v for _, _, v in ex.blocks) + ex.rest - ex.logit) < 1e-4
    assert len(ex.lens) == 94 and ex.lens[-1].top[0][0] == ex.word
    ranks = ex.lens_rank(" 상자")
    assert len(ranks) == 94 and ranks[-1] == 1 and ranks[0] > 1  # noise at the embedding, the answer at the end
    assert ex.attention(37).shape == (2, 8, 8) and ex.attention(4).shape == (2, 8, 8)
    pos, piece, effect = ex.sources[2]
    assert (pos, piece) == (2, " 상자") and effect > 0
    assert all(isinstance(l, int) and isinstance(p, str) and isinstance(v, float) for l, p, v in ex.blocks)


def test_explain_other_position_and_weights():
    e3 = api.explain(PROMPT, position=3)
    assert e3.position == 3 and len(e3.sources) == 4 and e3.attention(1).shape == (2, 4, 4)
    er = api.explain(PROMPT, weights="random")
    assert er.model.weights_name == "random"
    assert er.model is not api.explain(PROMPT).model


def test_explain_knockout_returns_an_explanation(ex):
    ko = ex.knockout(tokens=[2])
    assert ko.before is ex and ko.word != ex.word and ko.changed
    ko2 = ex.knockout(blocks=[(37, "mixer")], experts=[5])
    assert type(ko2) is type(ex) and ko2.ablation.blocks == ((37, "mixer"),) and ko2.ablation.experts == ((None, 5),)
    assert np.all(ko2.run.layers[36].tensors["mixer.out"] == 0)


def test_explain_with_a_model_instance_and_knobs():
    m = ToyK3(device="cpu", dtype="float64", weights="random")
    e = api.explain(PROMPT, model=m, weights="random", knobs={"alpha": 0.9})
    assert e.model is m and e.knobs.alpha == 0.9
    assert abs(e.rest) < 1e-9


@pytest.mark.parametrize("kwargs", [
    {"prompt": PROMPT, "weights": "best"},
    {"prompt": PROMPT, "position": 99},
    {"prompt": PROMPT, "position": 1.5},
    {"prompt": PROMPT, "model": "gpt-4"},
    {"prompt": PROMPT, "model": 3},
    {"prompt": ""},
    {"prompt": None},
    {"prompt": PROMPT, "knobs": {"alpha": 3}},
    {"prompt": PROMPT, "source_mode": "half"},
])
def test_explain_bad_arguments_raise_one_line(kwargs):
    prompt = kwargs.pop("prompt")
    with pytest.raises(ValueError) as e:
        api.explain(prompt, **kwargs)
    assert str(e.value) and "\n" not in str(e.value)


def test_explain_model_weights_mismatch():
    m = ToyK3(device="cpu", weights="random")
    with pytest.raises(ValueError, match="random weights"):
        api.explain(PROMPT, model=m)


def test_explain_causal_api(ex):
    pt = ex.patch(layers=[0])
    assert pt.scores.shape == (94, 8) and pt.clean == PROMPT and pt.corrupted != PROMPT and pt.metric
    assert pt.top(2)[0][0] == (0, 2)  # the clean embedding of the mention restores the answer
    assert ex.top_source().position == 2 and "resample" in ex.source_measure
    r = ex.causal_route(0.3)
    assert isinstance(r, list) and all(len(x) == 3 for x in r) and isinstance(r.note, str)


@pytest.mark.parametrize("kwargs", [
    {"device": "cuda:7"}, {"device": ["cpu"]}, {"device": 3},
    {"knobs": "alpha=0.5"}, {"model": type("Fake", (), {"forward": 1, "weights_name": "trained"})()},
])
def test_explain_checks_device_knobs_and_model_first(kwargs):
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError) as e:
        api.explain(PROMPT, **kwargs)
    assert "\n" not in str(e.value) and time.perf_counter() - t0 < 5


@pytest.mark.parametrize("knobs", [dict(alpha=1e308), dict(alpha=5), dict(top_p=-3), dict(temperature=-1e300),
                                   dict(beta=-0.5)])
def test_explain_checks_knobs_objects_as_run_does(knobs):
    from compute.trace import Knobs

    with pytest.raises(ValueError) as e:
        api.explain(PROMPT, knobs=Knobs(**knobs))
    assert "\n" not in str(e.value)


def test_explain_refuses_endless_and_huge_input_at_once(ex):
    import itertools
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError):
        ex.knockout(tokens=itertools.count())
    with pytest.raises(ValueError):
        api.explain("x" * 10 ** 6)
    for bad in ("5", -1, 2.0):
        with pytest.raises(ValueError):
            ex.top(bad)
    assert time.perf_counter() - t0 < 5
    assert len(ex.top(0)) == 0 and len(ex.top(3)) == 3
