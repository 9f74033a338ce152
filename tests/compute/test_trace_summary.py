"""Trace.summary() and the compact reprs: what a notebook prints is a few lines, not every array."""
import pytest

from compute.engine import ToyK3
from compute.trace import Knobs


@pytest.fixture(scope="module")
def trace():
    return ToyK3(device="cpu", weights="random").run("로봇이 컵을 집었다", max_new_tokens=3,
                                                     knobs=Knobs(temperature=0.7, expert_bias={17: 2.0}))


def test_repr_is_one_short_line(trace):
    text = repr(trace)
    assert "\n" not in text and len(text) < 300
    assert "kimi-k3" in text and "random weights" in text and "로봇이 컵을 집었다" in text
    assert len(repr(trace.passes[0])) < 300 and len(repr(trace.passes[0].layers[5])) < 200
    assert len(str([trace])) < 300  # a list holding a trace prints its repr too


def test_summary_says_what_ran_in_a_few_dozen_lines(trace):
    text = trace.summary()
    lines = text.splitlines()
    assert len(lines) <= 40 and max(len(line) for line in lines) < 400
    assert "kimi-k3" in lines[0] and "random weights" in lines[0]
    assert "'로봇이 컵을 집었다'" in text and repr(trace.generated_text) in text
    assert "temperature=0.7" in text and "{17: +2}" in text
    assert "69 kda + 24 mla" in text and "1 dense + 92 moe" in text
    assert text.count(" prefill ") == 1 and text.count(" decode ") == 2
    first = trace.passes[0]
    piece = trace.vocab[int(first.final["sampled"])][0]
    p = float(first.final["probs"][int(first.final["sampled"])])
    assert f"sampled {piece!r} (p={p:.3f})" in text


def test_summary_caps_long_traces(trace):
    from dataclasses import replace

    many = replace(trace, passes=trace.passes * 10, tokens=trace.tokens * 10)
    lines = many.summary().splitlines()
    assert len(lines) <= 40 and "more passes" in lines[-1]
    assert "more)" in many.summary()  # the token list is cut too
