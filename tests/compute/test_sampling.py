"""top_p_probs vs a plain transcription of Hugging Face's temperature + top-p warpers; edge cases."""
import numpy as np
import pytest
import torch

from compute.ops.sampling import sample_index, top_p_probs
from tests.compute.reference_hf_top_p import hf_top_p_probs


@pytest.mark.parametrize("temperature", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("top_p", [1.0, 0.95, 0.7, 0.3, 0.05])
def test_matches_hf(temperature, top_p):
    g = torch.Generator().manual_seed(int(temperature * 10 + top_p * 100))
    logits = torch.randn(64, generator=g, dtype=torch.float64) * 2
    got = top_p_probs(logits, temperature, top_p).numpy()
    np.testing.assert_allclose(got, hf_top_p_probs(logits.tolist(), temperature, top_p), rtol=1e-12, atol=1e-15)


def test_top_p_one_keeps_all():
    logits = torch.tensor([0.0, 1.0, 2.0, -3.0], dtype=torch.float64)
    np.testing.assert_allclose(top_p_probs(logits, 1.0, 1.0).numpy(), logits.softmax(-1).numpy())


def test_tiny_top_p_keeps_one():
    probs = top_p_probs(torch.tensor([0.0, 1.0, 2.0, 1.5], dtype=torch.float64), 1.0, 1e-9).numpy()
    np.testing.assert_array_equal(probs, [0.0, 0.0, 1.0, 0.0])


def test_ties():
    logits = torch.tensor([1.0, 1.0, 1.0, 1.0], dtype=torch.float64)
    got = top_p_probs(logits, 1.0, 0.5).numpy()
    ref = hf_top_p_probs(logits.tolist(), 1.0, 0.5)
    np.testing.assert_allclose(got, ref)
    assert (got > 0).sum() == 2 and got.sum() == pytest.approx(1.0)


def test_temperature_zero_is_greedy():
    logits = torch.tensor([0.1, 3.0, 3.0, -1.0], dtype=torch.float64)
    np.testing.assert_array_equal(top_p_probs(logits, 0.0, 0.9).numpy(), [0, 1, 0, 0])  # first on ties


def test_batched_rows():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 10, generator=g, dtype=torch.float64)
    got = top_p_probs(logits, 0.7, 0.6)
    for r in range(3):
        np.testing.assert_allclose(got[r].numpy(), hf_top_p_probs(logits[r].tolist(), 0.7, 0.6), rtol=1e-12)


@pytest.mark.parametrize("temperature", [0.0, 0.3, 1.0, 2.5])
@pytest.mark.parametrize("top_p", [1.0, 0.95, 0.7, 0.3, 0.05, 1e-9])
def test_numpy_matches_hf_and_torch(temperature, top_p):
    """The engine samples with numpy logits (no torch on the CPU path): the same probabilities as HF and as
    the torch branch, also with ties and in batched rows."""
    g = torch.Generator().manual_seed(int(temperature * 10 + top_p * 100) + 7)
    logits = torch.randn(3, 64, generator=g, dtype=torch.float64) * 2
    logits[1, :8] = logits[1, 8]  # ties
    got = top_p_probs(logits.numpy(), temperature, top_p)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, top_p_probs(logits, temperature, top_p).numpy(), rtol=1e-12, atol=1e-15)
    if temperature > 0:
        for r in range(3):
            np.testing.assert_allclose(got[r], hf_top_p_probs(logits[r].tolist(), temperature, top_p),
                                       rtol=1e-12, atol=1e-15)


def test_bad_top_p():
    with pytest.raises(ValueError):
        top_p_probs(torch.zeros(3), 1.0, 0.0)


def test_sample_index_inverse_cdf_and_never_filtered():
    probs = np.array([0.0, 0.25, 0.0, 0.75])
    assert sample_index(probs, 0.0) == 1
    assert sample_index(probs, 0.2499) == 1
    assert sample_index(probs, 0.25) == 3
    assert sample_index(probs, 0.999999) == 3
    for u in np.linspace(0, 0.999, 50):
        assert probs[sample_index(probs, u)] > 0
