"""The fast paths of the causal explanations (issue 39 item 8) against references they do not use: the sources'
re-runs into kept buffers against one full re-run per replacement through ToyK3.forward with an embedding hook
(compute.explain.resample._full), the kept-buffer pass against CompiledPass._run, and the causal re-runs' compiled
MoE rows against compute.ops.moe.latent_moe. Prompts here are not the ones the speed was measured on."""
from __future__ import annotations

import numpy as np
import pytest

from compute import fused_nb
from compute.engine import ToyK3
from compute.explain import Explanation
from compute.explain import resample as rs
from compute.explain._pass_reuse import ReusedPass

pytestmark = pytest.mark.skipif(not fused_nb.available(), reason="the compiled kernels need numba")


@pytest.fixture(scope="module")
def m():
    return ToyK3(device="cpu", compiled=True)


def _long_prompt(m) -> str:
    from compute.language import task

    pieces: list[str] = []
    for d in task.all_documents()[3::7]:  # not bench/engine.py's documents (every fifth from 0)
        pieces += d.pieces
        if len(pieces) >= 30:
            break
    return "".join(pieces[:30])


CASES = [("로봇이 공을 집었다. 그리고", None), ("the robot picks up the cup. it places the", None),
         ("Kimi K3 reads the next token", None), ("오늘은 비가 많이 온다", None),
         ("로봇이 공을 집었다. 그리고", dict(tokens=[1])), ("the robot picks up the cup. it places the", dict(tokens=[2, 5], mode="mean")),
         ("LONG", None)]


@pytest.mark.parametrize("prompt,ko", CASES)
def test_sources_equal_full_reruns(m, prompt, ko):
    assert m._pass is not None
    ex = Explanation.of_prompt(m, _long_prompt(m) if prompt == "LONG" else prompt)
    if ko is not None:
        ex = ex.knockout(**ko)
        assert ex.ablation is not None and not ex._loop
    for mode in ("resample", "zero"):
        eff, words = rs.source_effects(ex, mode)
        ref_eff, ref_words = rs.source_effects(
            ex, mode, runner=lambda jobs: [rs._full(ex, j, row) for j, row in jobs])
        assert len(eff) == len(ex.ids) == ex.position + 1
        # float32 logits: the cached-prefix pass is the same arithmetic as a full prefill
        np.testing.assert_allclose(eff, ref_eff, rtol=0, atol=1e-4)
        assert words == ref_words


def test_sources_keep_the_explanations_knockout(m):
    ex = Explanation.of_prompt(m, "로봇이 공을 집었다. 그리고")
    ko = ex.knockout(tokens=[2])
    a, b = rs.source_effects(ex)[0], rs.source_effects(ko)[0]
    assert not np.allclose(a, b, atol=1e-3)  # the knock-out is on in the re-runs (compared in full above)
    # the base measure is the knocked-out run's: a replacement of an already zeroed row is measured from there
    lg = ko.logits
    assert abs(b[2] - (rs._measure(lg, ko.word_index, "contrast") - np.mean(
        [rs._measure(rs._full(ko, 2, row), ko.word_index, "contrast")
         for row in rs.replacement_rows(m, ko.pieces[2], "resample")]))) < 1e-4


def test_reused_pass_equals_a_fresh_compiled_pass(m):
    cp = m._pass
    ex = Explanation.of_prompt(m, _long_prompt(m))
    emb = np.asarray(m.embed_ids(ex.ids))
    knobs, bias = ex.knobs, m._bias_offset(ex.knobs)
    caches = cp._run(emb[:5], knobs, None, bias).caches()
    rp = ReusedPass(cp)
    for start, cache in ((5, caches), (0, None), (5, caches), (28, cp._run(emb[:28], knobs, None, bias).caches())):
        e = np.ascontiguousarray(emb[start:])  # long, short and long again: stale buffer contents must not matter
        want = cp._run(e, knobs, cache, bias).final()["lm_head"][-1]
        np.testing.assert_array_equal(rp.last_logits(e, knobs, cache, bias), want)


def test_moe_rows_against_the_operator(m):
    from compute.dims import OpArgs
    from compute.compiled._moe_rows_nb import exp_into, moe_rows
    from compute.explain.rerun import twin64
    from compute.ops.moe import latent_moe

    tw = twin64(m)
    cfg = tw.config
    rng = np.random.default_rng(7)
    layers = [li for li, w in enumerate(tw.layers) if "moe" in w]
    for li in (layers[0], layers[len(layers) // 2], layers[-1]):
        mw = tw.layers[li]["moe"]
        x = np.concatenate([rng.standard_normal((200, 8)), 30 * rng.standard_normal((20, 8)), np.zeros((1, 8)),
                            1e-9 * rng.standard_normal((5, 8))])
        out = np.empty_like(x)
        moe_rows(x, mw["router"], np.ascontiguousarray(mw["bias"], np.float64), mw["down"], mw["w13"], mw["w2"],
                 mw["norm"], mw["up"], mw["shared13"], mw["shared2"], cfg.num_experts_per_tok,
                 float(cfg.routed_scaling_factor), float(cfg.situ_glu_beta1), float(cfg.situ_glu_beta2),
                 float(cfg.rms_norm_eps), out)
        ref = latent_moe(x, mw, OpArgs.of(cfg, tw.dims), mw["bias"])[0]
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)
    z = np.concatenate([rng.uniform(-700, 700, 5000), rng.standard_normal(5000), [0.0, -0.0, 1e-300, np.nan]])
    got = np.empty_like(z)
    exp_into(z, got, np.empty(z.shape, np.int64))
    np.testing.assert_allclose(got[:-1], np.exp(z[:-1]), rtol=4e-16, atol=0)
    assert np.isnan(got[-1])


def test_the_routers_one_division_sigmoid_against_numpy():
    """moe_rows' router sigmoid (sigmoid_neg_into: exp's rational form folded into one division) against
    1 / (1 + numpy's exp): within 3 ulp over the range exp covers (measured: 2), ~1e-308 beyond it (exp_into's
    clamp), NaN kept."""
    from compute.compiled._moe_rows_nb import sigmoid_neg_into

    rng = np.random.default_rng(3)
    v = np.concatenate([rng.uniform(-700, 700, 20000), 5 * rng.standard_normal(20000), [0.0, -0.0, 1e-300],
                        [750.0, np.inf, -750.0, -np.inf, np.nan]])
    got = np.empty_like(v)
    sigmoid_neg_into(v, got, np.empty_like(v), np.empty(v.shape, np.int64))
    with np.errstate(over="ignore"):
        want = 1.0 / (1.0 + np.exp(v[:-5]))
    np.testing.assert_allclose(got[:-5], want, rtol=3 * np.finfo(float).eps, atol=0)
    assert 0 < got[-5] < 1e-300 and 0 < got[-4] < 1e-300 and got[-3] == got[-2] == 1.0 and np.isnan(got[-1])


def test_moe_rows_top_k_against_a_sort():
    """The causal re-runs' top-k (compute.compiled._moe_rows_nb._top_k) against numpy's stable sort: the k largest,
    largest first, ties lower index first — with many ties, -inf scores and k not dividing the group count."""
    from compute.compiled._moe_rows_nb import _top_k

    rng = np.random.default_rng(11)
    for it in range(600):
        E, k = (896, 16) if it % 3 else (int(rng.integers(5, 300)), int(rng.integers(1, 5)))
        k = min(k, E)
        s = rng.standard_normal(E)
        if it % 4 == 0:
            s = np.round(s, 1)  # many ties
        if it % 5 == 0:
            s[rng.integers(0, E, E // 3)] = -np.inf
        if it % 7 == 0:
            s[:] = 0.5  # all equal
        G = max(64, k) // k * k
        out = np.empty(k, np.int64)
        _top_k(s, k, np.empty(G), np.empty(E, np.int64), np.empty(E), np.empty(G, np.int64), np.empty(G), out)
        want = np.lexsort((np.arange(E), -s))[:k]
        assert out.tolist() == want.tolist(), (it, E, k)


@pytest.mark.parametrize("alpha,beta", [(None, None), (0.9, 0.3)])
def test_kda_rows_against_the_operator(m, alpha, beta):
    """The causal re-runs' compiled KDA (the kernels' kda_rows on a float64 pass of the twin's weights) against
    compute.ops.kda.kda_layer's chunked form on the same batch, with and without the α / β knobs."""
    from compute.dims import OpArgs
    from compute.explain.rerun import _fast_kda, _kda_rows, twin64
    from compute.ops.kda import kda_layer
    from compute.trace import Knobs

    tw = twin64(m)
    kfast = _fast_kda(tw)
    assert kfast is not None
    args = OpArgs.of(tw.config, tw.dims)
    knobs = Knobs(temperature=0.0, alpha=alpha, beta=beta)
    rng = np.random.default_rng(3)
    kda = [li for li, w in enumerate(tw.layers) if "kda" in w]
    for li in (kda[0], kda[len(kda) // 2], kda[-1]):
        xn = np.concatenate([rng.standard_normal((4, 9, 8)), 20 * rng.standard_normal((1, 9, 8))])
        got = _kda_rows(kfast, li, xn, knobs)
        want = kda_layer(xn, tw.layers[li]["kda"], args, alpha=alpha, beta_override=beta, chunk_size=9)[0]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_a_failing_prefix_pass_raises_instead_of_hanging(m, monkeypatch):
    """The prefixes' states are computed on a thread while the re-runs start: an error there reaches the caller."""
    ex = Explanation.of_prompt(m, "the robot picks up the cup. it places the")
    cp = m._pass
    real, calls = cp._run, []

    def flaky(emb, knobs, caches, bias):
        if emb.shape[0] == 1:  # a prefix pass (the re-runs go through ReusedPass, not _run)
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("prefix pass failed")
        return real(emb, knobs, caches, bias)

    monkeypatch.setattr(cp, "_run", flaky)
    with pytest.raises(RuntimeError, match="prefix pass failed"):
        rs.source_effects(ex, "zero")
