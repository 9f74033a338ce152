"""Plain reference of DeepSeek-V3's MoE gate (deepseek-ai/DeepSeek-V3, `inference/model.py`, class Gate,
method forward; MIT license), sigmoid scoring with e_score_correction_bias:

    scores = sigmoid(x W^T); original = scores; scores = scores + bias (if any)
    if n_groups > 1: group score = sum of the top-2 scores in each group (max if there is no bias);
                     keep the best topk_groups groups, set the others to -inf
    indices = topk(scores, topk); weights = original[indices]; weights /= weights.sum(); weights *= route_scale

Re-written per token with Python sorting (no torch.topk) so that it shares no code with compute/ops/moe.py.
Ties are broken towards the lower index (as stable sorting does); tests use tie-free random inputs.
"""
from __future__ import annotations

import math

import numpy as np


def dsv3_gate(logits, bias, topk, route_scale=1.0, n_groups=1, topk_groups=1):
    """logits [T, E] (x W^T), bias [E] or None. Returns (weights [T, topk], indices [T, topk]) numpy."""
    logits = np.asarray(logits, dtype=np.float64)
    T, E = logits.shape
    W = np.zeros((T, topk))
    I = np.zeros((T, topk), dtype=np.int64)
    for t in range(T):
        original = [1.0 / (1.0 + math.exp(-z)) for z in logits[t]]
        scores = [s + (0.0 if bias is None else float(bias[e])) for e, s in enumerate(original)]
        if n_groups > 1:
            size = E // n_groups
            gscores = []
            for gi in range(n_groups):
                members = sorted(scores[gi * size:(gi + 1) * size], reverse=True)
                gscores.append(members[0] if bias is None else members[0] + members[1])
            keep = sorted(range(n_groups), key=lambda gi: -gscores[gi])[:topk_groups]
            scores = [s if (e // size) in keep else -math.inf for e, s in enumerate(scores)]
        order = sorted(range(E), key=lambda e: -scores[e])[:topk]
        w = [original[e] for e in order]
        tot = sum(w)
        W[t] = [x / tot * route_scale for x in w]
        I[t] = order
    return W, I
