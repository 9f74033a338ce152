"""compute.compiled.fast_select's compiled selection loops against numpy / torch as references: the same answers on random
rows, on rows full of equal values and with ±inf, and None where they must not answer (a NaN, k out of range)."""
import numpy as np
import pytest

from compute.compiled import fast_select
from compute import fused_nb

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not fused_nb.enabled(), reason="numba is not installed")


def _rows(rng, T, E, levels=None, dtype=np.float32):
    x = rng.standard_normal((T, E))
    if levels:  # few distinct values: many ties, at the k-th place and among the winners
        x = np.round(x * levels) / levels
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("T,E,k", [(160, 896, 16), (7, 256, 8), (3, 17, 16), (5, 9, 1)])
def test_topk_rows_is_the_k_largest_largest_first_and_flags_exactly_the_tied_rows(T, E, k, dtype):
    rng = np.random.default_rng(T * E + k)
    for levels in (None, 3, 20):
        x = _rows(rng, T, E, levels, dtype)
        idx, tied = fast_select.topk_rows(x, k)
        top = -np.sort(-x, -1)[:, :k + 1]
        want_tied = (top[:, :-1] == top[:, 1:]).any(-1)
        np.testing.assert_array_equal(tied, want_tied)
        np.testing.assert_array_equal(np.take_along_axis(x, idx, -1), top[:, :k])  # the k largest values, in order
        assert all(len(set(r)) == k for r in idx.tolist())
        free = ~tied  # where the answer is unique: the same indices as torch.topk and a stable sort
        ref = np.argsort(-x, -1, kind="stable")[:, :k]
        np.testing.assert_array_equal(idx[free], ref[free])
        np.testing.assert_array_equal(idx[free], torch.from_numpy(x).topk(k, -1)[1].numpy()[free])


def test_topk_rows_takes_infinities_and_refuses_nan_and_bad_k():
    x = np.array([[np.inf, 1.0, -np.inf, 2.0, 0.5]], np.float32)
    idx, tied = fast_select.topk_rows(x, 3)
    assert idx.tolist() == [[0, 3, 1]] and not tied[0]
    assert fast_select.topk_rows(np.array([[1.0, np.nan, 0.0]], np.float32), 1) is None
    assert fast_select.topk_rows(x, 0) is None and fast_select.topk_rows(x, 5) is None
    assert fast_select.topk_rows(np.arange(10).reshape(2, 5), 2) is None


@pytest.mark.parametrize("levels", [None, 4, 50])
@pytest.mark.parametrize("m,n", [(160, 896), (3, 5), (64, 7)])
def test_kth_largest_cols_is_what_np_partition_holds(m, n, levels):
    rng = np.random.default_rng(m + n)
    a = _rows(rng, m, n, levels)
    a[0, 0] = np.inf
    a[-1, -1] = -np.inf
    for j in sorted({0, 1, 2, min(m, 64) - 1}):
        if j >= m:
            continue
        np.testing.assert_array_equal(fast_select.kth_largest_cols(a, j), np.partition(a, m - j - 1, 0)[m - j - 1])
    assert fast_select.kth_largest_cols(a, min(m, 64)) is None
    a[1, 1] = np.nan
    assert fast_select.kth_largest_cols(a, 0) is None


def test_torch_topk_idx_gives_torch_topk_answer_also_on_ties():
    """TorchOps.topk_idx answers the rows with equal values by torch.topk itself: the same indices in the same
    order as torch.topk everywhere (what keeps CPU training bit for bit with its recorded losses)."""
    from compute.ops.xp_torch import TorchOps

    rng = np.random.default_rng(5)
    for levels in (None, 2, 10, 100):
        x = torch.from_numpy(_rows(rng, 160, 896, levels)).requires_grad_(True)
        assert torch.equal(TorchOps.topk_idx(x, 16), x.detach().topk(16, -1)[1])
    x = torch.tensor([[1.0, float("nan"), 0.0, 2.0]])
    assert torch.equal(TorchOps.topk_idx(x, 2), x.topk(2, -1)[1])  # a NaN: torch.topk answers


def test_no_numba_env_leaves_the_selection_to_the_caller(monkeypatch):
    monkeypatch.setattr(fast_select, "_LOOPS", None)
    monkeypatch.setenv("K3_NO_NUMBA", "1")
    x = np.ones((2, 5), np.float32)
    assert fast_select.topk_rows(x, 2) is None and fast_select.kth_largest_cols(x, 0) is None


def test_the_kernel_warm_up_compiles_the_selection_loops_for_both_dtypes(monkeypatch, tmp_path):
    """The expert dock's Quantile Balancing calls kth_largest_cols on the UI thread (float64) and training calls
    both loops (float32): warm_cache (the first start's child process) fills numba's cache with them too, so that
    neither compiles where a person waits."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fused_nb, "_warm_pass", lambda dt: np.dtype(dt).name)  # the pass kernel: tested elsewhere
    seen = []
    for name in ("topk_rows", "kth_largest_cols"):
        real = getattr(fast_select, name)
        monkeypatch.setattr(fast_select, name,
                            lambda x, k, real=real, name=name: seen.append((name, x.dtype.name)) or real(x, k))
    fused_nb.warm_cache(("float32",))
    assert sorted(seen) == [("kth_largest_cols", "float32"), ("kth_largest_cols", "float64"),
                            ("topk_rows", "float32"), ("topk_rows", "float64")]
    assert fused_nb.cache_ready("float32")
