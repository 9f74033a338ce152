"""compute.teaching.experiments against hand computations and independent re-implementations (no Qt)."""
import math

import numpy as np
import pytest

from compute.teaching import experiments as T


def test_kda_1d_seed_numbers():
    # Hand computation: S̄ = 0.9·0.3 = 0.27; err = 1 − 0.27 = 0.73; S_new = 0.27 + 0.5·0.73 = 0.635
    r = T.kda_step_1d(0.9, 0.5, 1.0)
    assert r.s_bar == pytest.approx(0.27, abs=1e-12)
    assert r.error == pytest.approx(0.73, abs=1e-12)
    assert r.s_new == pytest.approx(0.635, abs=1e-12)
    assert r.out == pytest.approx(0.635, abs=1e-12)


def test_kda_1d_matches_matrix_delta_rule():
    # The general rule S_t = (I − β k kᵀ) Diag(α) S + β k vᵀ with 1×1 matrices (fla naive.py form).
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b, v, s = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(-2, 2), rng.uniform(-1, 1)
        S = np.array([[s]]); k = np.array([[1.0]])
        S2 = (np.eye(1) - b * k @ k.T) @ np.diag([a]) @ S + b * k @ np.array([[v]])
        assert T.kda_step_1d(a, b, v, s).s_new == pytest.approx(S2[0, 0], abs=1e-12)


def test_kda_sequence_is_repeated_steps():
    v = T.kda_demo_inputs(0.8, 10)
    assert list(v[:5]) == [0.8] * 5 and list(v[5:]) == [0.0] * 5
    seq = T.kda_sequence_1d(0.9, 0.5, v)
    s = 0.3
    for t in range(10):
        s = 0.9 * s + 0.5 * (v[t] - 0.9 * s)
        assert seq[t] == pytest.approx(s, abs=1e-12)


def test_attnres_toy_weights_and_mix():
    vals = T.ATTNRES_BLOCKS
    r = T.attnres_toy(2.0, 3)
    e = math.exp(2.0)
    expect = np.array([1, 1, 1, e]) / (3 + e)
    np.testing.assert_allclose(r.weights, expect, atol=1e-12)
    assert r.mixed == pytest.approx(float(np.dot(expect, vals)), abs=1e-12)
    assert r.plain == pytest.approx(0.9 - 0.6 + 0.3 + 1.5, abs=1e-12)
    # strength 0: uniform mean
    assert T.attnres_toy(0.0, 1).mixed == pytest.approx(vals.mean(), abs=1e-12)
    with pytest.raises(ValueError):
        T.attnres_toy(1.0, 4)


def test_router_bias_selects_only_weights_from_unbiased():
    logits = T.moe_toy_logits("code")
    base = T.route_topk(logits, np.zeros(896))
    assert 17 not in base.idx and len(base.idx) == 16
    bias = np.zeros(896); bias[17] = 0.2
    r = T.route_topk(logits, bias)
    assert 17 in r.idx
    s = 1 / (1 + np.exp(-logits))
    # independent: selection by sorting biased scores, weights from unbiased renormalised
    sel = sorted(range(896), key=lambda j: -(s[j] + bias[j]))[:16]
    assert set(sel) == set(r.idx.tolist())
    np.testing.assert_allclose(r.weights, s[r.idx] / s[r.idx].sum(), atol=1e-12)
    assert r.weights.sum() == pytest.approx(1.0)
    # a constant bias on every expert changes nothing
    r2 = T.route_topk(logits, np.full(896, 3.0))
    assert set(r2.idx.tolist()) == set(base.idx.tolist())


def test_temperature_and_top_p_against_hand_rule():
    logits = T.SAMPLING_LOGITS
    for temp in (0.3, 0.7, 1.0, 1.8):
        p = np.exp(logits / temp); p /= p.sum()
        np.testing.assert_allclose(T.temperature_probs(logits, temp), p, atol=1e-12)
        for top_p in (0.1, 0.5, 0.8, 0.95, 1.0):
            # independent nucleus: keep the smallest prefix (descending) whose mass reaches top_p
            order = np.argsort(-p)
            keep, mass = [], 0.0
            for j in order:
                keep.append(j); mass += p[j]
                if mass >= top_p - 1e-12:
                    break
            expect = np.zeros(5); expect[keep] = p[keep]; expect /= expect.sum()
            np.testing.assert_allclose(T.top_p_probs(logits, temp, top_p), expect, atol=1e-9)
    greedy = T.temperature_probs(logits, 0.0)
    assert greedy.tolist() == [1, 0, 0, 0, 0]


def test_sample_index_seeded_and_respects_cut():
    p = T.top_p_probs(T.SAMPLING_LOGITS, 1.0, 0.6)
    draws = {T.sample_index(p, s) for s in range(200)}
    assert draws <= set(np.flatnonzero(p).tolist())
    assert T.sample_index(p, 5) == T.sample_index(p, 5)


def test_attention_rows_sum_to_one_and_causal():
    x, wq, wk = T.attention_inputs()
    for h in range(T.ATTN_HEADS):
        q, k, a = T.attention_toy(h)
        np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)
        assert np.all(np.triu(a, 1) == 0)
        # independent: scores by loops
        qi = x @ wq[h]; ki = x @ wk
        for i in range(4):
            s = [sum(qi[i, d] * ki[j, d] for d in range(4)) / 2.0 for j in range(i + 1)]
            e = np.exp(np.array(s) - max(s))
            np.testing.assert_allclose(a[i, : i + 1], e / e.sum(), atol=1e-12)
    _, _, full = T.attention_toy(0, causal=False)
    np.testing.assert_allclose(full.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(full > 0)


def test_embedding_facts_and_tokenizer():
    assert T.embedding_row_bytes() == 14_336
    assert T.embedding_table_bytes() == 163_840 * 7_168 * 2
    assert T.utf8_bytes("컵") == [0xEC, 0xBB, 0xB5]
    r1, r2 = T.toy_embedding_row(42), T.toy_embedding_row(42)
    assert r1.shape == (8,) and np.array_equal(r1, r2) and not np.array_equal(r1, T.toy_embedding_row(43))


def test_serving_arithmetic():
    assert T.cost_per_turn(142_000, 444, 3.0, 15.0) == pytest.approx(0.426 + 0.00666, abs=1e-12)
    assert T.mla_cache_bytes_per_token() == 24 * 576 * 2
    assert T.kda_state_bytes() == 69 * 96 * 128 * 128 * 4
    assert T.speculative_expected_tokens(0.0, 4) == 1.0
    assert T.speculative_expected_tokens(1.0, 4) == 5.0
    a = 0.7
    assert T.speculative_expected_tokens(a, 3) == pytest.approx(1 + a + a ** 2 + a ** 3)
    with pytest.raises(ValueError):
        T.speculative_expected_tokens(1.5, 3)


def test_chunks_cover_tokens_in_order():
    pieces = [str(i) for i in range(23)]
    chunks = T.chunk_stream(pieces, seed=3)
    assert [i for c in chunks for i in c] == list(range(23))
    assert any(len(c) > 1 for c in chunks) and all(1 <= len(c) <= 3 for c in chunks)


def test_numpy_teaching_ops_agree_with_the_engine_ops():
    """The UI uses numpy versions (no torch at UI start-up); they must agree with the engine's torch ops."""
    torch = pytest.importorskip("torch")
    from compute.ops.moe import route
    from compute.ops.sampling import top_p_probs

    logits = T.SAMPLING_LOGITS
    for temp in (0.0, 0.25, 1.0, 1.7):
        for top_p in (0.05, 0.3, 0.9, 1.0):
            ref = top_p_probs(torch.tensor(logits, dtype=torch.float64), temp, top_p).numpy()
            np.testing.assert_allclose(T.top_p_probs(logits, temp, top_p), ref, atol=1e-12)
    for feature in T.MOE_FEATURES:
        lg = T.moe_toy_logits(feature)
        bias = np.zeros(896); bias[17] = 0.12; bias[5] = -0.2
        w_ref, idx_ref = route(torch.tensor(lg)[None], torch.tensor(bias), 16)
        r = T.route_topk(lg, bias)
        assert set(r.idx.tolist()) == set(idx_ref[0].tolist())
        order = np.argsort(r.idx)
        ref_order = np.argsort(idx_ref[0].numpy())
        np.testing.assert_allclose(r.weights[order], w_ref[0].numpy()[ref_order], atol=1e-12)
