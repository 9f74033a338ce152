"""Logit lens: the residual stream after every layer and after every mixer, read through the final norm and
the LM head (docs/spec/k3-math.md §8). It says from which layer the answer is READABLE there, not where it is
decided (patching says that: compute.explain.patching, Patching.decided_at).

With Block Attention Residuals there is no single residual stream: after layer ℓ the state is the running
partial sum p_ℓ of the current block plus the stored list R_ℓ = [embedding, b1, …] of finished blocks, and each
reader mixes them with its own pseudo-query. `mode="exit"` (the default) reads the state as the model's own
output would if it stopped there: h_ℓ = AttnRes(p_ℓ, R_ℓ; w_out), the final mix with the final pseudo-query,
then logits = W_lm RMSNorm(h_ℓ). After layer 93 this IS the engine's output. After the mixer of layer ℓ the
partial is p_{ℓ−1} + a_ℓ (a_ℓ alone at a block start, where p_{ℓ−1} has just been stored in R). `mode="read"`
instead takes what the next reader actually reads: after layer ℓ the input layer ℓ+1's mixer mixes
('attnres.mixer.out' of layer ℓ+1; after the last layer the final mix), after a mixer what its FFN reads
('attnres.ffn.out'). Without AttnRes (plain residual) both are the residual stream h_ℓ itself.
Layer 0 is the embedding (AttnRes over one candidate is that candidate). Probabilities at temperature 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compute.explain._common import ATTNRES_EPS, attn_res_mix, f64, rms_normalize

__all__ = ["LensEntry", "Lens", "logit_lens", "lens_states", "LENS_MODES"]

LENS_MODES = ("exit", "read")


@dataclass(frozen=True)
class LensEntry:
    """One lens reading. layer: 0 = the embedding, 1..L = after layer ℓ (1-based, as the app counts);
    part: "embedding" | "mixer" (after layer ℓ's mixer, before its FFN) | "layer" (after the whole layer);
    top: the most probable pieces with their probabilities; rank (1 = top) and prob of the explained word."""

    layer: int
    part: str
    top: tuple[tuple[str, float], ...]
    rank: int
    prob: float


@dataclass
class Lens:
    """The lens of one position: `entries` (L+1: the embedding, then after each layer), `mixers` (L: after each
    layer's mixer) and their logits [L+1, V] / [L, V] (rows as the entries)."""

    entries: list[LensEntry]
    mixers: list[LensEntry]
    logits: np.ndarray
    mixer_logits: np.ndarray
    mode: str

    def ranks(self, index: int, mixers: bool = False) -> list[int]:
        """1-based rank of vocabulary row `index` at every entry (or every mixer entry)."""
        lg = self.mixer_logits if mixers else self.logits
        return (1 + np.sum(lg > lg[:, index:index + 1], -1)).astype(int).tolist()

    def probs(self, index: int, mixers: bool = False) -> list[float]:
        """Probability of vocabulary row `index` at every entry (or every mixer entry)."""
        return _softmax(self.mixer_logits if mixers else self.logits)[:, index].tolist()


def lens_states(run, model, t: int, mode: str = "exit") -> tuple[np.ndarray, np.ndarray]:
    """(h after the embedding and each layer [L+1, D], h after each mixer [L, D]) at position t: the vectors
    the final norm would read (see the module docstring), float64."""
    if mode not in LENS_MODES:
        raise ValueError(f"lens mode must be one of {', '.join(LENS_MODES)}, got {mode!r}")
    bs = model.config.attn_res_block_size
    layers = run.layers
    emb = f64(run.embedding[t])
    if not bs:  # plain residual: the stream itself
        after = [emb] + [f64(lt.tensors["residual"][t]) for lt in layers]
        mix = [after[i] + f64(lt.tensors["mixer.out"][t]) for i, lt in enumerate(layers)]
        return np.stack(after), np.stack(mix)
    if mode == "read":
        after = [emb] + [f64(layers[i + 1].tensors["attnres.mixer.out"][t]) for i in range(len(layers) - 1)]
        last, _ = _exit_sets(run, t, bs)
        after.append(attn_res_mix([last[-1]], f64(model.w_out64), ATTNRES_EPS)[0])
        mix = [f64(lt.tensors["attnres.ffn.out"][t]) for lt in layers]
        return np.stack(after), np.stack(mix)
    sets_after, sets_mix = _exit_sets(run, t, bs)
    w = f64(model.w_out64)
    return attn_res_mix(sets_after, w, ATTNRES_EPS), attn_res_mix(sets_mix, w, ATTNRES_EPS)


def _exit_sets(run, t: int, bs: int) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """The candidate lists [R…, partial] after the embedding and each layer, and after each mixer (the bookkeeping
    of compute.ops.attnres.BlockAttnRes, replayed from the trace at position t)."""
    p = f64(run.embedding[t])
    R: list[np.ndarray] = []
    after, mix = [[p]], []
    for li, lt in enumerate(run.layers):
        if li % bs == 0:
            R = R + [p]
            prefix = None
        else:
            prefix = p
        a = f64(lt.tensors["mixer.out"][t])
        mix.append(R + [a if prefix is None else prefix + a])
        p = f64(lt.tensors["residual"][t])
        after.append(R + [p])
    return after, mix


def logit_lens(run, model, t: int, word: int, top: int = 3, mode: str = "exit") -> Lens:
    """The lens at position t for vocabulary row `word` (the explained piece): see LensEntry / Lens."""
    h_after, h_mix = lens_states(run, model, t, mode)
    fn, head = f64(model.final_norm64), f64(model.lm_head64)
    eps = model.config.rms_norm_eps
    lg_after = rms_normalize(h_after, eps) * fn @ head
    lg_mix = rms_normalize(h_mix, eps) * fn @ head
    pieces = [pc for pc, _ in model.vocab]

    def entries(lg, layer0, part_of):
        pr = _softmax(lg)
        order = np.argsort(-lg, -1, kind="stable")[:, :top]
        ranks = 1 + np.sum(lg > lg[:, word:word + 1], -1)
        return [LensEntry(layer0 + j, part_of(layer0 + j), tuple((pieces[i], float(pr[j, i])) for i in order[j]),
                          int(ranks[j]), float(pr[j, word])) for j in range(lg.shape[0])]

    return Lens(entries(lg_after, 0, lambda ly: "embedding" if ly == 0 else "layer"),
                entries(lg_mix, 1, lambda ly: "mixer"), lg_after, lg_mix, mode)


def _softmax(lg: np.ndarray) -> np.ndarray:
    e = np.exp(lg - lg.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)
