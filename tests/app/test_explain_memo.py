"""The explanation service remembers its last results per engine (app/engine/explain_service.py: remembered /
remember): a request asked again is answered with a copy at once, equal to what a fresh computation gives; a
copy handed out can be changed without changing what is kept; another request, a result with an error, one past
the bound and an engine the cache dropped are computed again. Prompts other than the dock tests' default."""
from __future__ import annotations

import gc
from dataclasses import fields, replace

import numpy as np
import pytest

from app.engine import explain_service as service
from app.engine.explain_service import ExplainRequest, explain_result
from compute.config import load_default
from compute.trace import Knobs

PROMPTS = ["로봇이 공을 집었다. 그리고", "The cat took the ball. Then"]  # a held-out prompt of the toy language; not
OUTSIDE = "소년이 공을 던졌다. 그리고"  # outside the toy language (no corruption to patch with)


def _equal(a, b) -> bool:
    """Exact equality of results' contents, arrays included (the serial, timing and extras aside)."""
    def same(x, y):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            return np.array_equal(np.asarray(x), np.asarray(y))
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
        return x == y
    skip = {"serial", "seconds", "extra", "other"}
    return all(same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a) if f.name not in skip)


@pytest.fixture
def fresh(monkeypatch):
    """An empty engine cache and memo of the service's own (the module's are left as they were)."""
    monkeypatch.setattr(service, "ENGINES", {})
    monkeypatch.setattr(service, "_RESULTS", type(service._RESULTS)())
    return service


def _request(prompt: str, serial: int = 1, config=None, weights: str = "trained", **kw) -> ExplainRequest:
    config = config or load_default()
    tokens = tuple(service.engine_for(config, weights).encode_prompt(prompt))
    return ExplainRequest(serial, config, weights, tokens, len(tokens) - 1, Knobs(temperature=0.0), **kw)


def test_another_model_with_random_weights_is_remembered_apart_and_equal_to_a_fresh_run(fresh):
    """Not only K3's default: DeepSeek-V3's config (an MLA / MoE model without KDA) with random weights, asked the
    same tokens as K3's trained engine. Each engine answers from its own memo, and the copy equals a fresh run."""
    from compute.config import ModelConfig, available_configs

    other = ModelConfig.from_json(available_configs()["deepseek-v3"])
    k3 = explain_result(_request(PROMPTS[0]))
    first = explain_result(_request(PROMPTS[0], config=other, weights="random"))
    assert not first.extra.get("remembered") and not _equal(first, k3)  # not K3's result handed back
    again = explain_result(_request(PROMPTS[0], 2, config=other, weights="random"))
    assert again.extra["remembered"] is True and _equal(again, first) and len(fresh._RESULTS) == 2
    fresh._RESULTS.clear()
    assert _equal(explain_result(_request(PROMPTS[0], 3, config=other, weights="random")), first)


@pytest.mark.parametrize("prompt, causal", [(PROMPTS[0], True), (PROMPTS[1], False)])
def test_a_request_asked_again_is_a_remembered_copy_equal_to_a_fresh_run(fresh, prompt, causal):
    first = explain_result(_request(prompt, 1, causal=causal))
    assert not first.extra.get("remembered") and first.sources and bool(first.causal) == causal
    assert not causal or ("route" in first.causal and "patch" in first.causal)
    again = explain_result(_request(prompt, 2, causal=causal))
    assert again.extra["remembered"] is True and again is not first and again.serial == 2
    assert again.seconds == pytest.approx(first.seconds)  # the time it took to compute, not the look-up's
    assert _equal(again, first)
    fresh._RESULTS.clear()  # nothing remembered: computed again, the same numbers
    recomputed = explain_result(_request(prompt, 3, causal=causal))
    assert not recomputed.extra.get("remembered") and _equal(recomputed, again)


def test_a_copy_handed_out_can_be_changed_without_changing_what_is_kept(fresh):
    first = explain_result(_request(PROMPTS[0]))
    kept_sources, kept_row = list(first.sources), first.attention[0].copy()
    first.sources.clear()
    first.attention[0][...] = 0.0
    again = explain_result(_request(PROMPTS[0], 2))
    again.lens_prob[0] = -1.0
    third = explain_result(_request(PROMPTS[0], 3))
    assert third.sources == kept_sources and np.array_equal(third.attention[0], kept_row)
    assert third.lens_prob[0] != -1.0


def test_another_request_is_computed_not_remembered(fresh):
    base = _request(PROMPTS[1])
    explain_result(base)
    for other in (replace(base, position=base.position - 1), replace(base, knobs=Knobs(temperature=0.7)),
                  replace(base, knockout=(("token", 1),)), replace(base, sources=False),
                  replace(base, word=5)):
        res = explain_result(other)
        assert not res.extra.get("remembered"), other
    assert explain_result(base).extra.get("remembered") is True


def test_a_result_with_an_error_is_not_kept_but_one_with_a_part_that_cannot_be_made_is(fresh):
    req = _request(OUTSIDE, causal=True)
    res = explain_result(req)
    assert "patch_error" in res.causal and "route" in res.causal
    assert explain_result(replace(req, serial=2)).extra.get("remembered") is True  # the same ValueError again
    engine = fresh.engine_for(req.config, "trained")
    fresh._RESULTS.clear()
    fresh.remember(engine, req, replace(res, error="boom"))
    assert fresh.remembered(engine, req) is None
    fresh.remember(engine, req, res)
    assert fresh.remembered(engine, req) is not None


def test_the_memo_is_bounded_and_goes_with_its_engine(fresh, monkeypatch):
    monkeypatch.setattr(fresh, "RESULTS_PER_ENGINE", 2)
    req = _request(PROMPTS[0])
    asked = [replace(req, position=req.position - k) for k in range(3)]
    for r in asked:
        explain_result(r)
    assert explain_result(asked[0]).extra.get("remembered") is None  # the oldest went past the bound
    assert explain_result(asked[2]).extra.get("remembered") is True
    assert len(fresh._RESULTS) == 1
    fresh.ENGINES.clear()  # the engine cache drops the engine (e.g. a fifth one came): its results go with it
    gc.collect()
    assert len(fresh._RESULTS) == 0
    assert not explain_result(asked[2]).extra.get("remembered")
