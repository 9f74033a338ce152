"""Quantile Balancing simulator (compute.teaching.qb_sim): Qt-free.

Oracles are independent numpy transcriptions of docs/spec/k3-math.md §3 (selection = top-k of s + b, the QB rule
written from the spec text), not the engine's torch code.
"""
import numpy as np
import pytest

from compute.teaching.qb_sim import QBSimulator


def np_loads(logits: np.ndarray, bias: np.ndarray, k: int) -> np.ndarray:
    """Tokens per expert when every token takes the k largest sigmoid(logit) + bias."""
    biased = 1.0 / (1.0 + np.exp(-logits)) + bias
    idx = np.argsort(-biased, axis=1, kind="stable")[:, :k]
    return np.bincount(idx.ravel(), minlength=logits.shape[1])


def np_quantile_balance(s: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """b_j' = -((q+1)-th largest over tokens of s_ij - alpha_i), alpha_i = (k+1)-th largest of s_i + b,
    q = floor(m k / n) -- a loop over experts, written from the spec's words."""
    m, n = s.shape
    alpha = np.array([np.sort(s[i] + b)[::-1][k] for i in range(m)])
    q = (m * k) // n
    out = np.empty(n)
    for j in range(n):
        margins = np.sort(s[:, j] - alpha)[::-1]
        out[j] = -margins[q]
    return out


def test_skewed_start_then_below_1_2_within_5_updates():
    sim = QBSimulator()  # 896 experts, top-16, 4,088 tokens (q = 73 exactly), skewed
    assert sim.ideal == pytest.approx(4088 * 16 / 896) == pytest.approx(73.0)
    assert sim.before.max_over_ideal > 4.0, "the router must start visibly skewed"
    ratios = [sim.update().max_over_ideal for _ in range(5)]
    assert min(ratios) < 1.2
    assert ratios[-1] < 1.2
    assert np.all(np.diff(sim.imbalance_curve()[:3]) < 0), "the first updates must reduce the imbalance"


def test_loads_match_numpy_topk_and_conserve_slots():
    # fresh batches: the QB bias puts exact ties on the batch it was computed from (s + b = alpha for the
    # token at the quantile), where torch and numpy may break ties differently; on a new batch there are none
    sim = QBSimulator(n_tokens=560, seed=3, fresh_batches=True)
    for _ in range(2):
        sim.update()
    rec = sim.current
    assert rec.load.sum() == 560 * 16
    np.testing.assert_array_equal(rec.load, np_loads(sim.logits, rec.bias, 16))
    same = QBSimulator(n_tokens=560, seed=3)
    np.testing.assert_array_equal(same.before.load, np_loads(same.logits, np.zeros(896), 16))
    same.update()
    assert same.current.load.sum() == 560 * 16


def test_bias_update_equals_spec_transcription():
    sim = QBSimulator(n_tokens=448, seed=5)
    sim.update()
    ref1 = np_quantile_balance(sim.scores, np.zeros(896), 16)
    np.testing.assert_allclose(sim.current.bias, ref1, rtol=0, atol=1e-12)
    b1 = sim.current.bias.copy()
    sim.update()
    np.testing.assert_allclose(sim.current.bias, np_quantile_balance(sim.scores, b1, 16), rtol=0, atol=1e-12)


def test_hand_example_small():
    """4 tokens, 4 experts, top-1: q = 1, so every expert's bias lets exactly its 2nd-best margin in."""
    sim = QBSimulator(n_experts=4, top_k=1, n_tokens=4, d_features=2, skew=0.0, seed=1)
    s = sim.scores
    sim.update()
    alpha = np.sort(s, axis=1)[:, -2]  # 2nd largest (k+1 = 2) with zero bias
    expected = -np.sort(s - alpha[:, None], axis=0)[-2]  # 2nd largest margin per expert (q + 1 = 2)
    np.testing.assert_allclose(sim.current.bias, expected, atol=1e-12)


def test_fresh_batches_draw_new_tokens_and_still_balance():
    sim = QBSimulator(fresh_batches=True, n_tokens=8176)
    first = sim.logits.copy()
    for _ in range(4):
        sim.update()
    assert not np.array_equal(first, sim.logits)
    assert sim.current.max_over_ideal < 0.5 * sim.before.max_over_ideal


@pytest.mark.parametrize("kwargs", [dict(top_k=0), dict(top_k=896), dict(n_tokens=0)])
def test_bad_sizes_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        QBSimulator(**kwargs)


def _with_curve(values):
    """A small simulator whose history reads `values` as max-load/ideal for updates 0, 1, 2, ..."""
    from compute.teaching.qb_sim import QBRecord

    sim = QBSimulator(n_experts=8, top_k=2, n_tokens=40)
    sim.history = [QBRecord(t, np.zeros(8), np.zeros(8, dtype=int), v) for t, v in enumerate(values)]
    return sim


def test_the_stop_rule_on_hand_made_curves():
    assert _with_curve([7.0]).stop_reason() is None  # nothing done yet
    assert _with_curve([7.0, 1.5, 1.3, 1.2]).stop_reason() is None  # still improving, window not full
    stop = _with_curve([7.0, 1.5, 1.019]).stop_reason()
    assert (stop.reason, stop.value, stop.updates) == ("target", 1.019, 2)
    # best 1.05 at update 2, then five updates none of which beats it by 0.001: levelled off, at the best
    # value seen (1.0495, a gain too small to count)
    stop = _with_curve([7.0, 1.2, 1.05, 1.06, 1.05, 1.0505, 1.07, 1.0495]).stop_reason()
    assert (stop.reason, stop.value, stop.updates) == ("levelled", 1.0495, 7)
    # one of the last five still improves on the earlier best by more than 0.001: go on
    assert _with_curve([7.0, 1.2, 1.05, 1.06, 1.05, 1.0505, 1.07, 1.048]).stop_reason() is None


@pytest.mark.parametrize("fresh", [False, True])
def test_updating_until_the_rule_fires_stops_where_the_balance_levels_off(fresh):
    """The default skewed batch never gets max-load/ideal under 1.02 (whole tokens, ties at the quantile):
    the run stops once five updates in a row have not improved on the best, and names that best."""
    sim = QBSimulator(fresh_batches=fresh)
    while sim.stop_reason() is None:
        assert len(sim.history) < 60, "the balance never levelled off"
        sim.update()
    stop = sim.stop_reason()
    curve = [r.max_over_ideal for r in sim.history]
    assert stop.reason == "levelled" and stop.updates == len(curve) - 1
    assert stop.value == min(curve[1:]) and stop.value > 1.02
    assert min(curve[-5:]) > min(curve[1:-5]) - 1e-3  # the last five updates gained nothing
    assert min(curve[-6:-1]) <= min(curve[1:-6]) - 1e-3 or len(curve) == 7  # and one update earlier they had


def test_a_balanced_enough_batch_stops_at_the_target():
    sim = QBSimulator(n_experts=64, top_k=4, n_tokens=16000)  # q = 1000 tokens: the ratio moves in 0.001 steps
    while sim.stop_reason() is None:
        assert len(sim.history) < 60
        sim.update()
    stop = sim.stop_reason()
    assert stop.reason == "target" and stop.value == sim.current.max_over_ideal < 1.02
