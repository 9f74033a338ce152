"""Which words a head or an expert writes for and against (the vocabulary projection of its output; the LLM
Transparency Tool's per-head view), at the explained position.

A head's output there is o_h W_o,h (o_h after its norm and gate); an expert's is its weighted output in the
latent mix through the latent norm (its scale frozen) and W_up — the vectors of compute.explain.contributions.
Each is read as the direct contributions read a block: times its block's final AttnRes mix weight a_c, through
the final norm with its scale 1/rms(h) frozen, and the LM head: a logit change per word [V]. Direct effects, not
causal ones (the head's or expert's total effect is compute.explain.causal_route's).
"""
from __future__ import annotations

import numpy as np

__all__ = ["head_words", "expert_words", "words_of"]


def words_of(ex, vec: np.ndarray, k: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(the k words vector `vec` [D] (already times a_c) promotes most, the k it suppresses most) with logit changes."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    r = ex.route
    eff = (vec * r.final_norm * r.scale) @ r.lm_head
    order = np.argsort(-eff, kind="stable")
    v = ex.model.vocab
    return ([(v[j][0], float(eff[j])) for j in order[:k]], [(v[j][0], float(eff[j])) for j in order[::-1][:k]])


def _mix_weight(ex, li: int) -> float:
    bs = ex.model.config.attn_res_block_size
    fa = ex.run.final.get("final.attnres")
    if not bs or fa is None:
        return 1.0
    return float(np.asarray(fa[ex.position], np.float64)[li // bs + 1])


def head_words(ex, li: int, head: int, k: int = 5):
    """(promoted, suppressed) of head `head` of 0-based layer li."""
    lt = ex.run.layers[li]
    kda = lt.mixer == "kda"
    H = ex.model.dims.kda_heads if kda else ex.model.dims.mla_heads
    if isinstance(head, (bool, np.bool_)) or not isinstance(head, (int, np.integer)) or not 0 <= head < H:
        raise ValueError(f"head must be an integer in 0..{H - 1}, got {head!r}")
    o = np.asarray(lt.tensors["kda.o_norm" if kda else "mla.o_gated"][ex.position], np.float64)
    Wo = np.asarray(ex.model._layers64[li]["kda" if kda else "mla"]["o"], np.float64)
    V = o.shape[0] // H
    s = slice(head * V, (head + 1) * V)
    return words_of(ex, (o[s] @ Wo[s]) * _mix_weight(ex, li), k)


def expert_words(ex, li: int, expert, k: int = 5):
    """(promoted, suppressed) of routed expert `expert` (an id) or "shared" at 0-based MoE layer li."""
    name = "shared" if expert == "shared" else None
    if name is None:
        if isinstance(expert, (bool, np.bool_)) or not isinstance(expert, (int, np.integer)):
            raise ValueError(f"expert must be an expert id or 'shared', got {expert!r}")
        name = f"expert {int(expert)}"
    for i, c in enumerate(ex.route.blocks):
        if c.layer == li + 1 and c.part == name:
            return words_of(ex, ex.route.vectors[i], k)
    raise ValueError(f"layer {li + 1} has no {name} at position {ex.position} (not a MoE layer, or the router did not "
                     f"choose it there)")
