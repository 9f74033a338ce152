"""Knobs: a non-finite or mistyped knob is a ValueError naming the knob, at construction and at run time."""
import math
import re

import numpy as np
import pytest

from compute.trace import Knobs

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("kwargs,name", [
    ({"temperature": NAN}, "temperature"), ({"temperature": INF}, "temperature"),
    ({"top_p": NAN}, "top_p"), ({"top_p": -INF}, "top_p"),
    ({"alpha": NAN}, "alpha"), ({"beta": INF}, "beta"),
    ({"expert_bias": {3: NAN}}, "expert_bias[3]"), ({"expert_bias": {17: -INF}}, "expert_bias[17]"),
    ({"expert_bias": {5: np.float32("nan")}}, "expert_bias[5]"),
])
def test_non_finite_knob(kwargs, name):
    with pytest.raises(ValueError, match="finite") as ei:
        Knobs(**kwargs)
    msg = str(ei.value)
    assert msg.startswith(name) and "\n" not in msg, msg


@pytest.mark.parametrize("kwargs,words", [
    ({"temperature": "1.0"}, "temperature must be a number"), ({"alpha": True}, "alpha must be a number"),
    ({"expert_bias": {"a": 1.0}}, "expert_bias: expert 'a' is not an integer"),
    ({"expert_bias": {2: None}}, "expert_bias[2]"), ({"expert_bias": [1.0]}, "expert_bias must be a dict"), ({"sample_seed": 1.5}, "sample_seed must be an integer"),
])
def test_mistyped_knob(kwargs, words):
    with pytest.raises(ValueError, match="^" + re.escape(words)):
        Knobs(**kwargs)


def test_good_knobs_pass():
    k = Knobs(alpha=0.5, beta=None, temperature=np.float64(0.7), top_p=1, expert_bias={np.int64(3): 2},
              sample_seed=np.int64(4))
    assert k.temperature == 0.7


@pytest.fixture(scope="module")
def model():
    from compute.engine import ToyK3
    return ToyK3(device="cpu")


def test_knob_set_after_construction_is_checked_at_run(model):
    k = Knobs()
    k.temperature = NAN
    with pytest.raises(ValueError, match="temperature must be a finite number"):
        model.run("the model", 1, k)
    k = Knobs(expert_bias={7: 1.0})
    k.expert_bias[7] = INF
    with pytest.raises(ValueError, match=r"expert_bias\[7\]"):
        model.run("the model", 1, k)


def test_resample_checks_knobs(model):
    tr = model.run("the model", 2, Knobs(temperature=0.8))
    k = Knobs(temperature=0.8)
    k.top_p = NAN
    with pytest.raises(ValueError, match="top_p"):
        model.resample(tr, k)


def test_tiny_temperature_is_rejected_small_one_runs(model):
    """logits / 1e-320 overflows to inf and the probabilities become NaN: refused with the range."""
    with pytest.raises(ValueError, match=r"temperature must be 0 \(greedy\) or in"):
        model.run("the model", 1, Knobs(temperature=1e-320))
    tr = model.run("the model", 1, Knobs(temperature=1e-6))
    probs = tr.passes[0].final["probs"]
    assert np.isfinite(probs).all() and math.isclose(probs.sum(), 1.0)


def test_huge_expert_bias_is_rejected(model):
    """1e300 becomes inf in float32: refused with the range."""
    with pytest.raises(ValueError, match="outside"):
        model.run("the model", 1, Knobs(expert_bias={3: 1e300}))
