"""The logit-lens column beside the 3D layer stack (feature I1).

Fed with plain tuples (no compute/ or app/ types): `entries` is one (layer, top_word, top_prob, word_rank,
word_prob) per lens reading, layer 0 = the embedding, 1..L = the residual mix after layer ℓ (what layer ℓ+1
reads; docs/spec/k3-math.md §9). What the column draws:

* a strip of small boxes, one per reading, beside the stack's slabs (the embedding's beside the embedding), lit
  by the explained word's probability at that reading: dark where the lens does not see it, bright where it
  is the answer already (`strip_boxes`, `strip_colours`);
* the lens' top word at the readings where it changes (and at the embedding, the first layer from which the
  explained word is rank 1 for good, and the last layer) as labels left of the strip (`label_candidates`):
  the column of words that turns from noise into the answer; then, where the AttnRes brackets' names leave
  room, the other readings' words. The label placer drops what does not fit.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from scene.layout import SLAB_D, SLAB_H, SLAB_W, STACK_X, Layout

__all__ = ["ColumnWord", "column_words", "first_rank_one", "settled_rank_one", "strip_boxes", "strip_colours",
           "label_candidates", "STRIP_X", "LENS_PRIORITY"]

STRIP_X = STACK_X - SLAB_W / 2 - 0.95  # left of the AttnRes brackets (at -SLAB_W/2 - 0.45)
STRIP_W, STRIP_D = 0.34, 0.34
LENS_PRIORITY = 2.6  # after the panel's block names (2) and the stack cap's (2.5), before the AttnRes brackets' (3)
FILL_PRIORITY = 3.5  # the other readings: after the AttnRes brackets' names (3), before the stack's numbers (4)
_DARK = np.array([0.16, 0.18, 0.22])
_LIT = np.array([0.98, 0.82, 0.30])  # the explained word's probability -> amber


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


def settled_rank_one(ranks) -> int | None:
    """Index of the first reading from which the explained word stays rank 1 to the end, or None."""
    ranks = [int(r) for r in ranks]
    first = None
    for i in range(len(ranks) - 1, -1, -1):
        if ranks[i] != 1:
            break
        first = i
    return first


def column_words(entries) -> list[ColumnWord]:
    """entries: iterable of (layer, top_word, top_prob, word_rank[, word_prob]). Probabilities are clipped to
    [0, 1]."""
    rows = [(int(e[0]), str(e[1]), min(1.0, max(0.0, float(e[2]))), int(e[3])) for e in entries]
    first = first_rank_one([r for *_, r in rows])
    return [ColumnWord(l, w, p, r == 1, i == first) for i, (l, w, p, r) in enumerate(rows)]


def _anchor_z(layout: Layout, layer: int) -> float | None:
    """z of the centre of the slab of a 1-based layer (0: the embedding), None when the layout has no such block."""
    b = layout.by_id.get("embedding" if layer == 0 else f"L{layer}/stack.layer")
    return None if b is None else float(b.center[2])


def strip_boxes(layout: Layout, layers) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Centres [n, 3] and sizes [n, 3] of the strip's boxes for these readings (layer numbers), and the layers
    they belong to (readings whose layer the layout lacks are left out)."""
    centres, kept = [], []
    for layer in layers:
        z = _anchor_z(layout, int(layer))
        if z is None:
            continue
        centres.append((STRIP_X, -SLAB_D / 2 + 0.2, z))
        kept.append(int(layer))
    n = len(centres)
    sizes = np.tile(np.array([STRIP_W, STRIP_D, SLAB_H], np.float32), (n, 1))
    return np.asarray(centres, np.float32).reshape(n, 3), sizes, kept


def strip_colours(word_probs) -> np.ndarray:
    """[n, 4] RGBA of the strip's boxes: dark at probability 0, amber at 1 (a square-root ramp, so that the
    first few percent already show)."""
    p = np.clip(np.nan_to_num(np.asarray(word_probs, np.float64)), 0.0, 1.0)
    t = np.sqrt(p)[:, None]
    rgb = _DARK + t * (_LIT - _DARK)
    return np.concatenate([rgb, np.ones((len(p), 1))], axis=1).astype(np.float32)


def shown_readings(words: list[ColumnWord], settled: int | None) -> list[int]:
    """Indices of the readings that get a word label, most important first: the last layer, the first layer
    from which the answer stays rank 1, the embedding, then every reading whose top word differs from the one
    before it."""
    if not words:
        return []
    order = [len(words) - 1]
    if settled is not None:
        order.append(settled)
    order.append(0)
    order += [i for i in range(1, len(words)) if words[i].text != words[i - 1].text]
    return _unique(order)


def filler_readings(n: int) -> list[int]:
    """Every reading, coarse to fine (every 12th, then every 6th, 3rd, each): where there is room between the
    other labels the column shows more of its words."""
    return _unique([i for step in (12, 6, 3, 1) for i in range(0, n, step)])


def _unique(order) -> list[int]:
    seen, out = set(), []
    for i in order:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def label_candidates(layout: Layout, entries, piece_text=lambda s: s) -> list[tuple]:
    """The word labels of the column as the label placer's candidates: (priority, anchor, name, shape, role,
    id, where) with id "lens/<layer>", placed left of the strip; the answer's words in the output colour."""
    words = column_words(entries)
    settled = settled_rank_one([e[3] for e in entries])
    out = []
    key = shown_readings(words, settled)
    fill = [i for i in filler_readings(len(words)) if i not in set(key)]
    for rank, i in enumerate(key + fill):
        w = words[i]
        z = _anchor_z(layout, w.layer)
        if z is None:
            continue
        anchor = np.array([STRIP_X - STRIP_W / 2 - 0.05, -SLAB_D / 2 + 0.2, z])
        name = ("▶ " if i == settled else "") + f"{w.layer} {piece_text(w.text)}"
        pri = LENS_PRIORITY if rank < len(key) else FILL_PRIORITY
        out.append((pri + rank * 1e-3, anchor, name, f"{w.prob:.2f}", "output" if w.is_answer else "text",
                    f"lens/{w.layer}", "left"))
    return out
