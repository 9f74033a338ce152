"""Counterfactual activation patching (causal tracing) for the toy K3 (docs/spec/k3-math.md §11).

A clean prompt and a corrupted one of the same token count run side by side (float64, compute.explain.rerun's
twin). One value of the clean run is put into the corrupted run, the layers above re-run exactly, and the
restored fraction is

    score = (LD(patched) − LD(corrupted)) / (LD(clean) − LD(corrupted)),   LD = logit[clean answer] − logit[b]

at the explained position, b = the corrupted run's answer (its runner-up when it predicts the clean answer
too): 0 = nothing restored, 1 = the clean run's difference. Sites ("sites=" of `patch`, scores' shapes):

- "residual" [L+1, T]: the whole residual state after layer ℓ at position t — with Block AttnRes the running
  partial p_ℓ AND every stored block R_ℓ at t (what any later layer can read of position t); row 0 = the
  embedding. At (L, explained position) the final mix reads only the clean state: 1 exactly.
- "blocks" [L, 2, T]: layer ℓ's mixer (0) or FFN (1) output at position t.
- "heads" [L, H]: one KDA or MLA head's output (after its norm and gate, before W_o) at every position.
- "experts" [M, E] (M = MoE layers in order): one routed expert's weighted output in the latent mix at every
  position (the latent norm re-evaluated); measured for the experts either run selects at the explained
  position, NaN for the others. `shared` [M]: the shared experts' output.
- "sources" [S]: AttnRes candidate c (0 = the embedding, j = block j's stored sum) in every later mix.
- "kda_state" [L, T]: a KDA layer's delta-rule state S_t after position t, carried forward: the layer's positions
  after t re-run from the clean S_t with the corrupted run's own inputs (and short-conv tail); NaN on MLA layers,
  0 at the last position (its state reaches nothing).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from compute.dims import OpArgs
from compute.explain.knockout import stored_sources
from compute.explain.patch_pair import Restored, corrupted_ids, pair_of
from compute.explain.rerun import Variant, rerun, state_before

__all__ = ["Patching", "patch", "SITES", "corrupted_ids"]

SITES = ("residual", "blocks", "heads", "experts", "sources", "kda_state")


@dataclass
class Patching(Restored):
    """The result of `patch` (the shared fields: compute.explain.patch_pair.Restored). scores: numpy, shape by
    `sites` (see the module docstring); shared: "experts" only, the shared experts' scores; axes: the sites' axis
    names; moe_layers: "experts" only, the 1-based layer of each row. `top(n)`: [((index along each axis),
    score)], largest first — layers 1-based as the app counts, row 0 of "residual" = the embedding; NaN sites
    left out."""

    shared: np.ndarray | None = None
    axes: tuple[str, ...] = field(default_factory=tuple)
    moe_layers: tuple[int, ...] = ()  # "experts": the 1-based layer of each row

    def _site(self, i: int) -> tuple:
        idx = list(np.unravel_index(i, self.scores.shape))
        if self.sites in ("blocks", "heads", "kda_state"):
            idx[0] += 1
        elif self.sites == "experts":
            idx[0] = self.moe_layers[idx[0]]
        return tuple(int(x) for x in idx)

    def _repr_png_(self) -> bytes:
        """Jupyter: the scores as a heat map (compute/notebook.py)."""
        from compute.notebook import patching_png

        return patching_png(self)

    def _repr_html_(self) -> str:
        """Jupyter: the heat map and a table (prompts, answers, metric, strongest sites), texts escaped."""
        from compute.notebook import patching_html

        return patching_html(self)

    def decided_at(self, threshold: float = 0.5) -> int | None:
        """("residual" only) The first layer from which patching the explained position's residual alone
        restores ≥ threshold at every later layer: where the answer has moved to the last position (None if
        never)."""
        if self.sites != "residual":
            raise ValueError("decided_at needs sites='residual'")
        col = self.scores[:, -1]
        ok = col >= threshold
        for ly in range(len(col)):
            if ok[ly:].all():
                return ly
        return None


def patch(ex, corrupted: str | None = None, sites: str = "residual", layers=None) -> Patching:
    """Patch the clean run of Explanation `ex` into the corrupted one at every site of `sites`; see the module
    docstring. layers ("residual" only): the rows to compute (0 = the embedding … L), the others NaN (default
    all). ValueError (one line) on a bad argument, an explanation with knock-outs, or a corrupted prompt that
    leaves the logit difference unchanged."""
    if not isinstance(sites, str) or sites not in SITES:
        raise ValueError(f"sites must be one of {', '.join(SITES)}, got {sites!r}")
    L = len(ex.run.layers)
    if layers is not None:
        if sites != "residual":
            raise ValueError("layers= selects rows of the residual grid: sites='residual' only")
        layers = _layer_rows(layers, L)
    pair = pair_of(ex, corrupted, "patch")
    model, knobs, t = ex.model, ex.knobs, ex.position
    tw, clean, corr = pair.tw, pair.clean, pair.corr
    variants, where, shape = (_state_variants(model, tw, clean, corr, t, knobs) if sites == "kda_state" else
                              _variants(model, tw, sites, clean, corr, t, layers))
    scores = np.zeros(shape)
    if layers is not None:
        scores[[r for r in range(L + 1) if r not in layers]] = np.nan
    shared = None
    if sites == "experts":
        scores[:] = np.nan
        shared = np.zeros(shape[0])
    if sites == "kda_state":
        scores[[li for li in range(L) if model.config.mixer_types[li] != "kda"]] = np.nan
    if variants:
        sc = pair.score(rerun(model, variants, knobs, t, corr))
        for (idx, s) in zip(where, sc.tolist()):
            if idx[0] == "shared":
                shared[idx[1]] = s
            else:
                scores[idx] = s
    axes = {"residual": ("layer", "position"), "blocks": ("layer", "part", "position"), "heads": ("layer", "head"),
            "experts": ("moe layer", "expert"), "sources": ("source",), "kda_state": ("layer", "position")}[sites]
    moe = tuple(li + 1 for li, f in enumerate(model.config.ffn_types) if f == "moe") if sites == "experts" else ()
    return Patching(sites, scores, "".join(ex.pieces), pair.text_c, pair.pa, pair.pb, pair.metric(), pair.swap, shared,
                    axes, moe)


def _layer_rows(layers, L: int) -> set[int]:
    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
        raise ValueError(f"layers must be a list of layer numbers 0..{L}, got {layers!r}")
    rows = set()
    for x in itertools.islice(layers, L + 2):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or not 0 <= x <= L:
            raise ValueError(f"layers must be layer numbers 0..{L} (0 = the embedding), got {x!r}")
        rows.add(int(x))
    return rows


def _variants(model, tw, sites: str, clean, corr, t: int, layers=None):
    """(variants, their score indices, the scores' shape)."""
    cfg = model.config
    bs = cfg.attn_res_block_size
    L = len(clean.layers)
    T = t + 1
    vs, where = [], []
    if sites == "residual":
        for ly in range(L + 1):
            if layers is not None and ly not in layers:
                continue
            pk, Rk = state_before(clean, ly, bs)
            pc, Rc = state_before(corr, ly, bs)
            for pos in range(T):
                if np.array_equal(pk[pos], pc[pos]) and np.array_equal(Rk[:, pos], Rc[:, pos]):
                    continue  # the same state: score 0
                p2, R2 = pc.copy(), Rc.copy()
                p2[pos], R2[:, pos] = pk[pos], Rk[:, pos]
                vs.append(Variant(ly, p2, R2, first=pos))
                where.append((ly, pos))
        return vs, where, (L + 1, T)
    if sites == "blocks":
        for li in range(L):
            p0, R0 = state_before(corr, li, bs)
            for part, key in ((0, "mixer.out"), (1, "ffn.out")):
                vk = np.asarray(clean.layers[li].tensors[key], np.float64)
                vc = np.asarray(corr.layers[li].tensors[key], np.float64)
                for pos in range(T):
                    if np.array_equal(vk[pos], vc[pos]):
                        continue
                    o = vc.copy()
                    o[pos] = vk[pos]
                    vs.append(Variant(li, p0, R0, **{"mixer" if part == 0 else "ffn": o}, first=pos))
                    where.append((li, part, pos))
        return vs, where, (L, 2, T)
    if sites == "heads":
        H = max(model.dims.kda_heads, model.dims.mla_heads)
        for li in range(L):
            p0, R0 = state_before(corr, li, bs)
            for h, delta in enumerate(head_deltas(tw, clean, corr, li)):
                d = _first_diff(delta)
                if d is None:
                    continue
                o = np.asarray(corr.layers[li].tensors["mixer.out"], np.float64) + delta
                vs.append(Variant(li, p0, R0, mixer=o, first=d))
                where.append((li, h))
        return vs, where, (L, H)
    if sites == "experts":
        moe = [li for li in range(L) if cfg.ffn_types[li] == "moe"]
        for m, li in enumerate(moe):
            p0, R0 = state_before(corr, li, bs)
            tk, tc = clean.layers[li].tensors, corr.layers[li].tensors
            chosen = set(np.asarray(tk["moe.topk_idx"][t]).tolist()) | set(np.asarray(tc["moe.topk_idx"][t]).tolist())
            for e in sorted(chosen):
                o = moe_with(tw, li, tc, {e: tk})
                d = _first_diff(o - np.asarray(tc["ffn.out"], np.float64))
                if d is not None:
                    vs.append(Variant(li, p0, R0, ffn=o, first=d))
                    where.append((m, e))
            if "moe.shared" in tc:
                o = (np.asarray(tc["ffn.out"], np.float64) - np.asarray(tc["moe.shared"], np.float64)
                     + np.asarray(tk["moe.shared"], np.float64))
                d = _first_diff(o - np.asarray(tc["ffn.out"], np.float64))
                if d is not None:
                    vs.append(Variant(li, p0, R0, ffn=o, first=d))
                    where.append(("shared", m))
        return vs, where, (len(moe), cfg.n_routed_experts)
    n = stored_sources(cfg)
    for c in range(n):
        li = c * bs
        p0, R0 = state_before(corr, li, bs)
        Rk = state_before(clean, li + 1, bs)[1][c]
        d = _first_diff(Rk - state_before(corr, li + 1, bs)[1][c])
        if d is not None:
            vs.append(Variant(li, p0, R0, source=(c, Rk), first=d))
            where.append((c,))
    return vs, where, (n,)


def _first_diff(delta: np.ndarray) -> int | None:
    nz = np.flatnonzero(np.any(delta != 0, -1))
    return int(nz[0]) if nz.size else None


def head_deltas(tw, clean, corr, li: int) -> list[np.ndarray]:
    """Per head h of layer li: (clean head output − corrupted head output) W_o,h [T, D] — patching head h
    changes the mixer output by exactly this (corr=None: minus the clean head's output, a knock-out)."""
    w = tw.layers[li]
    kda = "kda" in w
    key = "kda.o_norm" if kda else "mla.o_gated"
    Wo = np.asarray(w["kda" if kda else "mla"]["o"], np.float64)
    H = tw.dims.kda_heads if kda else tw.dims.mla_heads
    ok = np.asarray(clean.layers[li].tensors[key], np.float64)
    oc = np.zeros_like(ok) if corr is None else np.asarray(corr.layers[li].tensors[key], np.float64)
    V = ok.shape[1] // H
    out = []
    for h in range(H):
        s = slice(h * V, (h + 1) * V)
        d = (ok[:, s] - oc[:, s]) @ Wo[s]
        out.append(d if corr is not None else -d)
    return out


def moe_with(tw, li: int, base: dict, swap: dict) -> np.ndarray:
    """Layer li's MoE output [T, D] from the trace tensors `base`, with expert e's weighted output w_e E_e(z) in
    the latent mix taken from trace tensors swap[e] (None: removed) at every position; the latent norm is
    re-evaluated, the shared experts kept."""
    cfg = tw.config
    w = tw.layers[li]["moe"]
    mix = np.asarray(base["moe.mix"], np.float64).copy() if "moe.mix" in base else None
    idx_b = np.asarray(base["moe.topk_idx"])
    wt_b = np.asarray(base["moe.topk_weight"], np.float64)
    ex_b = np.asarray(base["moe.experts"], np.float64)
    if mix is None:
        mix = np.einsum("tk,tkl->tl", wt_b, ex_b)
    for e, src in swap.items():
        mix -= np.einsum("tk,tkl->tl", wt_b * (idx_b == e), ex_b)
        if src is not None:
            idx_s = np.asarray(src["moe.topk_idx"])
            mix += np.einsum("tk,tkl->tl", np.asarray(src["moe.topk_weight"], np.float64) * (idx_s == e),
                             np.asarray(src["moe.experts"], np.float64))
    from compute.ops.norms import rms_norm

    r = mix if w["norm"] is None else rms_norm(mix, w["norm"], cfg.rms_norm_eps)
    up = r if w["up"] is None else r @ w["up"]
    return up + np.asarray(base["moe.shared"], np.float64)


def _state_variants(model, tw, clean, corr, t: int, knobs):
    """Variants of sites="kda_state": for each KDA layer and position p < t, the layer's output at positions > p
    re-run (compute.ops.kda.kda_layer with a cache) from the clean state after p and the corrupted conv tail."""
    from compute.ops.kda import kda_layer

    cfg, d = model.config, tw.dims
    args = OpArgs.of(cfg, d)
    bs = cfg.attn_res_block_size
    L, T = len(clean.layers), t + 1
    vs, where = [], []
    for li in range(L):
        if cfg.mixer_types[li] != "kda":
            continue
        w = tw.layers[li]["kda"]
        p0, R0 = state_before(corr, li, bs)
        xk = np.asarray(clean.layers[li].tensors["norm.mixer"], np.float64)
        xc = np.asarray(corr.layers[li].tensors["norm.mixer"], np.float64)
        out_c = np.asarray(corr.layers[li].tensors["mixer.out"], np.float64)
        for p in range(T - 1):
            kw = dict(alpha=knobs.alpha, beta_override=knobs.beta)
            ck = kda_layer(xk[:p + 1], w, args, **kw)[2]
            cc = kda_layer(xc[:p + 1], w, args, **kw)[2]
            if np.array_equal(ck["state"], cc["state"]):
                continue
            y = kda_layer(xc[p + 1:], w, args, cache={"conv": cc["conv"], "state": ck["state"]}, **kw)[0]
            o = out_c.copy()
            o[p + 1:] = y
            vs.append(Variant(li, p0, R0, mixer=o, first=p + 1))
            where.append((li, p))
    return vs, where, (L, T)
