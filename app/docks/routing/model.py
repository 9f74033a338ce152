"""The routing dock's Qt-free teaching routers (R4): the seed's logical top-2 router and K3's sigmoid + bias rule
on the same logits, with the constructed numbers the toy tab shows (not K3 weights)."""
from __future__ import annotations

import numpy as np

CONDITIONS = ("robot", "language", "number", "code")
# constructed teaching numbers (not K3 weights): W_router [4 experts, 4 features], h per condition [4]
W_ROUTER = np.array([[1.2, -0.3, 0.2, 0.0],
                     [-0.2, 1.1, 0.1, 0.3],
                     [0.1, 0.2, 1.3, -0.4],
                     [0.0, 0.4, -0.3, 1.0]])
H = {"robot": np.array([1.0, 0.6, -0.2, 0.1]),
     "language": np.array([0.2, 1.0, 0.1, 0.6]),
     "number": np.array([-0.1, 0.3, 1.0, 0.2]),
     "code": np.array([0.1, -0.2, 0.5, 1.1])}
TOP_K = 2


def logical_router(h: np.ndarray, W: np.ndarray, k: int = TOP_K) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seed's teaching router. h [D], W [E, D] -> (r [E] = W·h, p [E] = softmax(r), idx [k] top-k of p)."""
    r = W @ h
    z = np.exp(r - r.max())
    p = z / z.sum()
    idx = np.argsort(-p, kind="stable")[:k]
    return r, p, idx


def k3_router(r: np.ndarray, bias: np.ndarray, k: int = TOP_K) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K3's rule on the same logits. r [E], bias [E] -> (s [E] = sigmoid(r), idx [k] top-k of s + b,
    w [k] = s[idx] / Σ s[idx])."""
    s = 1.0 / (1.0 + np.exp(-r))
    idx = np.argsort(-(s + bias), kind="stable")[:k]
    w = s[idx] / s[idx].sum()
    return s, idx, w
