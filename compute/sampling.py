"""Temperature / top-p sampling with Hugging Face generation semantics (spec/k3-math.md §5)."""
from __future__ import annotations

import numpy as np
import torch


def top_p_probs(logits: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0) -> torch.Tensor:
    """Next-token probabilities after temperature and nucleus (top-p) filtering.

    logits [..., V] → probs [..., V] (same dtype). As Hugging Face's TemperatureLogitsWarper followed by
    TopPLogitsWarper: logits / T; sort ascending; cum = cumsum(softmax(sorted)); drop tokens with
    cum <= 1 - top_p, always keeping the most probable one; softmax over what is left.
    temperature <= 0 means greedy: a one-hot on argmax (first index on ties).
    """
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
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


def sample_index(probs: np.ndarray, u: float) -> int:
    """Inverse-CDF draw: the first index whose cumulative probability exceeds u ∈ [0, 1). probs [V]."""
    cdf = np.cumsum(np.asarray(probs, dtype=np.float64))
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    i = min(i, len(cdf) - 1)
    while probs[i] <= 0 and i > 0:  # never land on a filtered token through rounding
        i -= 1
    return i
