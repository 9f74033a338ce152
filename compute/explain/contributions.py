"""Direct contributions of every block to one logit (docs/spec/k3-math.md §9).

The final readout is logit_w = W_lm[:, w] · (final_norm ⊙ h / rms(h)) with h = AttnRes(p, R; w_out) =
Σ_c a_c V_c, where the candidates are the stored blocks R_0 = embedding, R_j = Σ_{ℓ in block j} (mixer_ℓ +
FFN_ℓ) and the last partial p (the last block's sum). With the final mix weights a_c and the final norm's
scale 1/rms(h) FROZEN at their actual values, the logit is linear in the block outputs:

    logit_w = Σ_blocks a_{c(block)} · (out_block · u),    u = final_norm ⊙ W_lm[:, w] / rms(h)

A MoE layer splits further, with its latent norm's scale frozen too: FFN = W_up (norm ⊙ Σ_j w_j E_j(z) /
rms(Σ_j w_j E_j)) + Shared(x), so each selected expert j contributes W_up(norm ⊙ w_j E_j / rms(mix)) and the
shared expert its output. `rest` = logit − Σ values is float rounding (the decomposition is exact in exact
arithmetic; ~1e-12 in float64, ~1e-5 in float32). These are DIRECT effects: how a block's output, as written,
moves the logit through the final readout — not what later layers make of it (knock-outs measure that).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from compute.explain._common import f64, rms_normalize

__all__ = ["Contribution", "Route", "direct_contributions", "DIRECT_LABEL"]

DIRECT_LABEL = ("direct effects (not causal): each block's output through the final readout, with the final "
                "AttnRes mix weights and the final norm's scale frozen")


class Contribution(NamedTuple):
    """(layer, part, value): layer 0 = the embedding, 1..L (1-based); part "embedding" | "mixer" | "ffn" (a dense
    MLP) | "expert N" (routed expert N, 0-based id) | "shared"; value = its direct contribution to the logit."""

    layer: int
    part: str
    value: float


@dataclass
class Route:
    """Every block's direct contribution to the logit of vocabulary row `word` at one position: DIRECT effects
    (not causal; `label`), with two quantities frozen at their actual values — the final AttnRes mix weights
    a_c and the final norm's scale 1/rms(h).

    blocks: the Contributions in layer order; vectors [n, D]: each block's output times its frozen final-mix
    weight a_c (so values = vectors @ u); scale: the frozen 1/rms(h); logit: the engine's logit; rest =
    logit − Σ values (rounding)."""

    word: int
    blocks: list[Contribution]
    vectors: np.ndarray
    u: np.ndarray
    scale: float
    logit: float
    rest: float
    final_norm: np.ndarray
    lm_head: np.ndarray
    label: str = DIRECT_LABEL

    def word_effects(self, i: int) -> np.ndarray:
        """The direct effect of block i (index into blocks) on EVERY logit [V] (same frozen scale): the words its
        output promotes (large) and suppresses (negative)."""
        return (self.vectors[i] * self.final_norm * self.scale) @ self.lm_head

    def totals(self) -> dict[tuple[int, str], float]:
        """{(layer, "embedding" | "mixer" | "ffn"): value}: experts and the shared expert summed into "ffn"."""
        out: dict[tuple[int, str], float] = {}
        for c in self.blocks:
            key = (c.layer, c.part if c.part in ("embedding", "mixer") else "ffn")
            out[key] = out.get(key, 0.0) + c.value
        return out


def direct_contributions(run, model, t: int, word: int) -> Route:
    """The Route of vocabulary row `word` at position t of `run` (a PassTrace of a prefill from position 0)."""
    cfg = model.config
    bs = cfg.attn_res_block_size
    eps = cfg.rms_norm_eps
    L = len(run.layers)
    emb = f64(run.embedding[t])
    fa = run.final.get("final.attnres")
    if bs and fa is not None:
        a = f64(fa[t])
        cand = [li // bs + 1 for li in range(L)]
        # the candidates as the engine stored them, to recompute h and its frozen scale
        V = [emb] + [f64(run.layers[li - 1].tensors["residual"][t]) for li in range(bs, L, bs)]
        V.append(f64(run.layers[-1].tensors["residual"][t]))
        h = np.einsum("c,cd->d", a, np.stack(V))
    else:
        a = np.ones(1)
        cand = [0] * L
        h = f64(run.layers[-1].tensors["residual"][t])
    scale = float(1.0 / np.sqrt(np.mean(h * h) + eps))
    fn, head = f64(model.final_norm64), f64(model.lm_head64)
    u = fn * head[:, word] * scale
    layers = run.layers
    ac = a[np.asarray(cand, dtype=np.intp)]  # [L] each layer's frozen final-mix weight
    mixers = np.stack([f64(lt.tensors["mixer.out"][t]) for lt in layers]) * ac[:, None]
    moe = [li for li, lt in enumerate(layers) if lt.ffn == "moe"]
    ffn_vecs: dict[int, tuple[list[str], np.ndarray]] = {}
    for li, lt in enumerate(layers):
        if lt.ffn != "moe":
            ffn_vecs[li] = (["ffn"], ac[li] * f64(lt.tensors["ffn.out"][t])[None])
    if moe:
        st = _moe_stack(model, moe)
        tn = [layers[li].tensors for li in moe]
        idx = np.stack([np.asarray(x["moe.topk_idx"][t]) for x in tn])  # [M, k]
        wt = np.stack([f64(x["moe.topk_weight"][t]) for x in tn])
        ex = np.stack([f64(x["moe.experts"][t]) for x in tn]) * wt[..., None]  # [M, k, Lat] weighted outputs
        if st["norm"] is not None:
            mix = np.stack([f64(x["moe.mix"][t]) for x in tn])
            ex = ex * (st["norm"] / np.sqrt(np.mean(mix * mix, -1, keepdims=True) + eps))[:, None, :]
        if st["up"] is not None:
            ex = np.einsum("mkl,mld->mkd", ex, st["up"])
        ex = ex * ac[moe][:, None, None]
        shared = st["shared"]
        if shared:
            sh = np.stack([f64(x["moe.shared"][t]) for x in tn]) * ac[moe][:, None]
        for j, li in enumerate(moe):
            names = [f"expert {e}" for e in idx[j].tolist()]
            vec = ex[j]
            if shared:
                names.append("shared")
                vec = np.concatenate([vec, sh[j:j + 1]])
            ffn_vecs[li] = (names, vec)
    vecs = [a[0] * emb[None]]
    blocks: list[tuple[int, str]] = [(0, "embedding")]
    for li in range(len(layers)):
        vecs.append(mixers[li:li + 1])
        blocks.append((li + 1, "mixer"))
        names, vec = ffn_vecs[li]
        vecs.append(vec)
        blocks.extend((li + 1, n) for n in names)
    vectors = np.concatenate(vecs)
    values = vectors @ u
    out = [Contribution(ly, part, v) for (ly, part), v in zip(blocks, values.tolist())]
    logit = float(run.final["lm_head"][t, word])
    return Route(word, out, vectors, u, scale, logit, logit - float(np.sum(values)), fn, head)


_STACKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # engine -> {moe layers: stacked weights}


def _moe_stack(model, moe: list[int]) -> dict:
    """The MoE layers' latent norm weights [M, Lat] and up projections [M, Lat, D] stacked (float64), cached per
    engine (weights never change after construction; the cache goes with the engine)."""
    per = _STACKS.setdefault(model, {})
    key = tuple(moe)
    st = per.get(key)
    if st is None:
        ws = [model._layers64[li]["moe"] for li in moe]
        st = per[key] = {"norm": None if ws[0]["norm"] is None else np.stack([f64(w["norm"]) for w in ws]),
                         "up": None if ws[0]["up"] is None else np.stack([f64(w["up"]) for w in ws]),
                         "shared": ws[0]["shared13"] is not None}
    return st
