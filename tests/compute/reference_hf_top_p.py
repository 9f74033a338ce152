"""Plain reference of Hugging Face transformers' TemperatureLogitsWarper + TopPLogitsWarper
(src/transformers/generation/logits_process.py; Apache-2.0), min_tokens_to_keep = 1:

    scores = scores / temperature
    sorted ascending; cumulative = cumsum(softmax(sorted))
    remove sorted positions with cumulative <= 1 - top_p, but never the last (most probable) one
    masked scores -> -inf; probabilities = softmax

Re-written for one row with Python lists and math.exp so it shares no code with compute/ops/sampling.py.
"""
from __future__ import annotations

import math


def _softmax(xs):
    m = max(x for x in xs if x != -math.inf)
    e = [0.0 if x == -math.inf else math.exp(x - m) for x in xs]
    s = sum(e)
    return [x / s for x in e]


def hf_top_p_probs(logits, temperature=1.0, top_p=1.0):
    """logits: list of floats (one row). Returns the list of probabilities."""
    scores = [float(x) / temperature for x in logits]
    order = sorted(range(len(scores)), key=lambda i: scores[i])  # ascending, stable
    sp = _softmax([scores[i] for i in order])
    cum = 0.0
    remove = set()
    for pos, i in enumerate(order):
        cum += sp[pos]
        if cum <= 1.0 - top_p and pos != len(order) - 1:
            remove.add(i)
    return _softmax([-math.inf if i in remove else s for i, s in enumerate(scores)])
