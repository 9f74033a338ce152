"""Plain data for the logit-lens column beside the 3D layer stack (feature I1, issue 21).

Fed with plain tuples (no compute/ or app/ types): `entries` is one (layer, top_word, top_prob, word_rank) per
lens reading, layer 0 = the embedding, 1..L after layer ℓ. `column_words` turns them into what the column
places: the top word at each layer, its probability (for colour/size) and whether the explained word is rank 1
there and whether that is the first layer where it is (the highlighted turn from noise into the answer).
The GL/QPainter drawing is not built yet; this module is the data it will draw.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["ColumnWord", "column_words", "first_rank_one"]


class ColumnWord(NamedTuple):
    layer: int
    text: str
    prob: float
    is_answer: bool   # the explained word is the lens's rank 1 at this layer
    is_first: bool    # ... and this is the first such layer


def first_rank_one(ranks) -> int | None:
    """Index of the first reading where the explained word is rank 1, or None."""
    for i, r in enumerate(ranks):
        if int(r) == 1:
            return i
    return None


def column_words(entries) -> list[ColumnWord]:
    """entries: iterable of (layer, top_word, top_prob, word_rank). Probabilities are clipped to [0, 1]."""
    rows = [(int(l), str(w), min(1.0, max(0.0, float(p))), int(r)) for l, w, p, r in entries]
    first = first_rank_one([r for *_, r in rows])
    return [ColumnWord(l, w, p, r == 1, i == first) for i, (l, w, p, r) in enumerate(rows)]
