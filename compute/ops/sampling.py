"""Temperature / top-p sampling with Hugging Face generation semantics (docs/spec/k3-math.md §5)."""
from __future__ import annotations

import numpy as np


def top_p_probs(logits, temperature: float = 1.0, top_p: float = 1.0):
    """Next-token probabilities after temperature and nucleus (top-p) filtering.

    logits [..., V] (numpy array or torch tensor) → probs [..., V] (same library and dtype). As Hugging Face's TemperatureLogitsWarper followed by
    TopPLogitsWarper: logits / T; sort ascending; cum = cumsum(softmax(sorted)); drop tokens with
    cum <= 1 - top_p, always keeping the most probable one; softmax over what is left.
    temperature <= 0 means greedy: a one-hot on argmax (first index on ties).
    """
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if isinstance(logits, np.ndarray):
        return _top_p_probs_np(logits, temperature, top_p)
    import torch  # a torch tensor was passed: torch is there

    if temperature <= 0.0:
        idx = logits.argmax(-1, keepdim=True)
        return torch.zeros_like(logits).scatter_(-1, idx, 1.0)
    scores = logits / temperature
    sorted_logits, sorted_idx = torch.sort(scores, dim=-1, descending=False, stable=True)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    remove_sorted = cum <= (1.0 - top_p)
    remove_sorted[..., -1] = False  # min_tokens_to_keep = 1
    remove = remove_sorted.scatter(-1, sorted_idx, remove_sorted)
    return scores.masked_fill(remove, float("-inf")).softmax(-1)


def _top_p_probs_np(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """top_p_probs in numpy (the engine's sampling: no torch needed); the same steps as the torch branch."""
    if temperature <= 0.0:
        out = np.zeros_like(logits)
        np.put_along_axis(out, logits.argmax(-1)[..., None], 1.0, -1)
        return out
    scores = logits / temperature
    order = np.argsort(scores, -1, kind="stable")  # ascending, ties in index order (torch.sort stable=True)
    sorted_logits = np.take_along_axis(scores, order, -1)
    cum = np.cumsum(_softmax(sorted_logits), -1)
    remove_sorted = cum <= (1.0 - top_p)
    remove_sorted[..., -1] = False  # min_tokens_to_keep = 1
    remove = np.empty_like(remove_sorted)
    np.put_along_axis(remove, order, remove_sorted, -1)
    return _softmax(np.where(remove, -np.inf, scores))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sample_index(probs: np.ndarray, u: float) -> int:
    """Inverse-CDF draw: the first index whose cumulative probability exceeds u ∈ [0, 1). probs [V]."""
    cdf = np.cumsum(np.asarray(probs, dtype=np.float64))
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    i = min(i, len(cdf) - 1)
    while probs[i] <= 0 and i > 0:  # never land on a filtered token through rounding
        i -= 1
    return i


def pass_uniforms(sample_seed: int, n: int) -> np.ndarray:
    """The uniform draw of each of n passes: fixed by sample_seed, independent of the probabilities (what the
    engine and compute.training.train's generate draw with)."""
    return np.random.default_rng(int(sample_seed)).random(n)


def sample_logits(last_logits, knobs, u: float) -> tuple[np.ndarray, int]:
    """(probabilities after knobs.temperature / knobs.top_p (float64, numpy), the vocab row drawn with u)."""
    probs = top_p_probs(np.asarray(last_logits, dtype=np.float64), knobs.temperature, knobs.top_p)
    return probs, sample_index(probs, float(u))
