"""Exact batched re-runs from a layer up (docs/spec/k3-math.md §11): the engine's operators in float64 on many
variants of one run at once, each starting from the state a base run had before its start layer.

Every causal experiment of compute.explain (patching, block / head / expert knock-outs, the causal route)
changes something at one layer ℓ and re-runs layers ℓ..L. Below ℓ nothing changed, so the re-run starts from
the base run's own state before layer ℓ (the AttnRes partial p and the stored blocks R at every position, taken
from its trace) and runs only the layers above. The variants of one experiment are stacked on a batch axis
(compute.ops.kda / compute.ops.mla take [B, T, D]; the FFN and AttnRes run on the B·T rows) and join the batch at their
start layer, so a grid of ~1,000 variants costs one pass over the layers, not 1,000.

Precision: everything runs in float64 on a float64 twin of the engine (`twin64`: the same weights, the
operators' layer loop), and the base runs the experiments compare against are that twin's prefills — the toy
amplifies float32 rounding over 93 layers (compute.engine's docstring), so a float32 variant would differ from
its float32 base by more than many effects. In float64 a variant that changes nothing equals its base to ~1e-9.

Speed (issue 39 item 8): with numba the two costly blocks run compiled on the variants' rows — the latent MoE
(compute.compiled._moe_rows_nb) and KDA (compute.compiled._fused_nb_kernels.kda_rows on a float64 pass of the twin's
weights: the recurrent form, equal to compute.ops.kda's chunked one to float64 rounding) — and a grid's variants run
as two halves on two threads.
"""
from __future__ import annotations

import copy
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from compute.compiled import fused_nb_layout as layout
from compute.ops.attnres import attn_res
from compute.dims import OpArgs
from compute.ops.kda import kda_layer
from compute.ops.mla import mla_layer
from compute.ops.moe import dense_mlp, latent_moe
from compute.ops.norms import rms_norm

__all__ = ["twin64", "Variant", "state_before", "rerun", "ATTNRES_EPS"]

ATTNRES_EPS = 1e-6
_TWINS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def twin64(model):
    """A float64 engine with `model`'s weights running the operators' layer loop on numpy (built once per engine:
    ~0.3 s; no weights file is read again)."""
    tw = _TWINS.get(model)
    if tw is None:
        if model.dtype == np.float64 and model.backend == "numpy" and getattr(model, "_pass", None) is None:
            tw = model
        else:
            from compute.device import resolve_device

            tw = copy.copy(model)
            tw.dtype = np.dtype(np.float64)
            tw.backend, tw._torch, tw._want_compiled, tw.kernels = "numpy", None, False, "operators"
            tw.device = resolve_device("cpu")
            tw._to_device()
        _TWINS[model] = tw
    return tw


@dataclass
class Variant:
    """One re-run: starts at 0-based layer `start` (0..L; L = only the final mix) from the state (p [T, D],
    R [C, T, D]: the AttnRes partial and stored blocks before that layer; C = 0 without AttnRes) and replaces,
    at its start layer only: 'mixer' -> the mixer output [T, D]; 'ffn' -> the FFN output [T, D];
    'source' -> (c, R_c [T, D]) a stored block after the layer's store. Positions before `first` must equal the
    base run's (causality keeps them so in every layer: their FFN is taken from the base run, not re-run)."""

    start: int
    p: np.ndarray
    R: np.ndarray
    mixer: np.ndarray | None = None
    ffn: np.ndarray | None = None
    source: tuple | None = None
    first: int = 0  # the first position that differs from the base run (earlier ones stay as they were)
    zero: frozenset = frozenset()  # (0-based layer, "mixer" | "ffn") zeroed at every position, at any layer ≥ start
    tag: object = field(default=None)
    trace: list | None = None  # a list: the re-run appends its residual after each layer it runs ([T, D] each)
    parent: "Variant | None" = None  # with p, R None: start from this variant's state at `start` (a variant of the
    # same re-run starting at or below `start`; the re-run then runs as one group on one thread)


def state_before(run, li: int, bs: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(p [T, D], R [C, T, D]) of a PassTrace before 0-based layer li (li = L: after the last layer): p = the
    residual after layer li−1 (the embedding at li = 0), R = the embedding and each finished block's sum stored
    before li (what compute.ops.attnres.BlockAttnRes holds there)."""
    emb = np.asarray(run.embedding, dtype=np.float64)
    p = emb if li == 0 else np.asarray(run.layers[li - 1].tensors["residual"], dtype=np.float64)
    if not bs:
        return p, np.zeros((0,) + p.shape)
    R = [emb] + [np.asarray(run.layers[c * bs - 1].tensors["residual"], dtype=np.float64)
                 for c in range(1, len(range(0, li, bs)))]
    return p, np.stack(R) if li > 0 else np.zeros((0,) + p.shape)


SPLIT_MIN = 64  # from this many variants, two threads each run half of them (every other one by start layer)


def rerun(model, variants: list[Variant], knobs, position: int, base, chunk: int = 16384,
          threads: int = 2, split_min: int = SPLIT_MIN) -> np.ndarray:
    """Logits [len(variants), V] at `position` of every variant (float64, the twin's operators). base: the twin's
    PassTrace the variants start from (its FFN outputs serve the positions before each variant's `first`).
    Variants are run in groups of at most `chunk` rows of tokens per layer (memory bound). threads=2 (from
    SPLIT_MIN variants): two threads each run every other variant in start order — each variant's rows are
    independent of the others' (numpy and the compiled MoE rows release the GIL), so the layers' numpy work
    runs on both cores too, not only the MoE (split_min: a caller whose batches are small but many, the
    greedy route's steps, splits smaller ones)."""
    if not variants:
        return np.zeros((0, len(model.vocab)))
    tw = twin64(model)
    T = next(v.p for v in variants if v.p is not None).shape[0]
    per = max(1, chunk // max(T, 1))
    order = sorted(range(len(variants)), key=lambda i: variants[i].start)
    out = np.zeros((len(variants), len(tw.vocab)))
    forks = any(v.parent is not None for v in variants)  # a fork needs its parent in its group: one group
    per = len(order) if forks else per
    halves = [order[0::2], order[1::2]] if threads > 1 and len(order) >= split_min and not forks else [order]

    def work(part: list[int]) -> None:
        for g in range(0, len(part), per):  # by start layer: a group's late starters join it late
            idx = part[g:g + per]
            out[idx] = _run_group(tw, [variants[i] for i in idx], knobs, position, base, len(halves) == 1)

    if len(halves) == 1:
        work(order)
        return out
    err: list[BaseException] = []

    def second():
        try:
            work(halves[1])
        except BaseException as e:  # re-raised below, not lost in the thread
            err.append(e)

    t = threading.Thread(target=second, daemon=True)
    t.start()
    try:
        work(halves[0])
    finally:
        t.join()
    if err:
        raise err[0]
    return out


def _run_group(tw, vs: list[Variant], knobs, position: int, base, split_moe: bool = True) -> np.ndarray:
    cfg, d = tw.config, tw.dims
    bs = cfg.attn_res_block_size
    eps = cfg.rms_norm_eps
    L = len(tw.layers)
    T, D = next(v.p for v in vs if v.p is not None).shape
    bias_off = tw._bias_offset(knobs)
    args = OpArgs.of(cfg, d)
    pos = np.arange(T)
    fast = _fast_moe(tw)
    kfast = _fast_kda(tw)
    joins: dict[int, list[int]] = {}
    for i, v in enumerate(vs):
        joins.setdefault(v.start, []).append(i)
    rows: list[int] = []  # variant index of each active batch row
    firsts = np.zeros(0, np.intp)
    zeroed = {}  # (layer, part) -> rows that zero it
    traced: list[tuple[int, list]] = []  # (batch row, the variant's trace list) of the variants that keep one
    row_of: dict[int, int] = {}  # id(variant) -> its batch row (a fork's parent)
    for i, v in enumerate(vs):
        for key in v.zero:
            zeroed.setdefault(key, []).append(i)
    P = np.zeros((0, T, D))
    R = None  # [C, N, T, D]
    for li in range(L + 1):
        new = joins.get(li, [])
        if new:
            traced += [(len(rows) + j, vs[i].trace) for j, i in enumerate(new) if vs[i].trace is not None]
            ps, Rs = _joining(vs, new, P, R, row_of)
            row_of.update((id(vs[i]), len(rows) + j) for j, i in enumerate(new))
            rows += new
            firsts = np.concatenate([firsts, [vs[i].first for i in new]])
            P = np.concatenate([P, np.stack(ps)])
            Rn = np.stack(Rs, 1)  # [C, n, T, D]
            R = Rn if R is None or R.shape[1] == 0 else np.concatenate([R, Rn], 1)
        if li == L or not rows:
            continue
        w = tw.layers[li]
        N = len(rows)
        at = len(rows) - len(new)  # rows from here joined at this layer
        if bs:
            x = _mix(R, P, w["w_attn"]) if R.shape[0] else P
            if li % bs == 0:
                R = np.concatenate([R, P[None]]) if R.shape[0] else P[None].copy()
                prefix = None
            else:
                prefix = P
            for j, i in enumerate(new):
                if vs[i].source is not None:
                    c, val = vs[i].source
                    R = R.copy()
                    R[c, at + j] = val
        else:
            x, prefix = P, P
        xn = rms_norm(x, w["norm_mixer"], eps)
        if "kda" in w and kfast is not None:
            a = _kda_rows(kfast, li, np.ascontiguousarray(xn), knobs)
        elif "kda" in w:
            a = kda_layer(xn, w["kda"], args, alpha=knobs.alpha, beta_override=knobs.beta, chunk_size=max(T, 1))[0]
        else:
            a = mla_layer(xn, w["mla"], args, pos)[0]
        for j, i in enumerate(new):
            if vs[i].mixer is not None:
                a[at + j] = vs[i].mixer
        if (li, "mixer") in zeroed:
            a[[r for r, i in enumerate(rows) if i in zeroed[(li, "mixer")]]] = 0.0
        prefix = a if prefix is None else prefix + a
        x2 = _mix(R, prefix, w["w_mlp"]) if bs else prefix
        dirty = pos[None, :] >= firsts[:, None]  # [N, T]: the rows that may differ from the base run
        if li == L - 1 and not traced:  # the last layer's FFN matters only where the logits are read
            dirty &= pos[None, :] == position
        f = np.array(np.broadcast_to(np.asarray(base.layers[li].tensors["ffn.out"], np.float64), (N, T, D)))
        xn2 = rms_norm(x2[dirty], w["norm_ffn"], eps)
        if "mlp" in w:
            f[dirty] = dense_mlp(xn2, w["mlp"], args)[0]
        elif xn2.shape[0]:
            mw = w["moe"]
            bias = mw["bias"] if bias_off is None else mw["bias"] + bias_off
            if fast is not None:
                f[dirty] = _moe_rows(fast, np.ascontiguousarray(xn2), split_moe, (
                    mw["router"], np.ascontiguousarray(bias, np.float64), mw["down"], mw["w13"], mw["w2"], mw["norm"],
                    mw["up"], mw["shared13"], mw["shared2"], cfg.num_experts_per_tok,
                    float(cfg.routed_scaling_factor), float(cfg.situ_glu_beta1), float(cfg.situ_glu_beta2),
                    float(eps)))
            else:
                f[dirty] = latent_moe(xn2, mw, args, bias)[0]
        for j, i in enumerate(new):
            if vs[i].ffn is not None:
                f[at + j] = vs[i].ffn
        if (li, "ffn") in zeroed:
            f[[r for r, i in enumerate(rows) if i in zeroed[(li, "ffn")]]] = 0.0
        P = prefix + f
        for r, tr in traced:
            tr.append(P[r].copy())
    h = _mix(R[:, :, position:position + 1], P[:, position:position + 1], tw.w_out)[:, 0] if bs and R.shape[0] \
        else P[:, position]
    logits = rms_norm(h, tw.final_norm, eps) @ tw.lm_head
    out = np.zeros((len(vs), logits.shape[-1]))
    out[rows] = logits
    return out


def _joining(vs: list, new: list[int], P: np.ndarray, R, row_of: dict) -> tuple[list, list]:
    """The states (p [T, D], R [C, T, D]) of the variants joining the batch at this layer: their own, or for a
    fork its parent's now — the parent's batch row (joined earlier), or its own start state (joining now)."""
    ps, Rs = [], []
    for i in new:
        v = vs[i]
        while v.parent is not None and id(v.parent) not in row_of and v.p is None:
            v = v.parent  # the parent joins at this layer too: its start state is the state now
        if v.p is None:
            r = row_of[id(v.parent)]
            ps.append(P[r].copy())
            Rs.append(R[:, r].copy())
        else:
            ps.append(v.p)
            Rs.append(v.R)
    return ps, Rs


def _moe_rows(fast, x: np.ndarray, split: bool, args: tuple) -> np.ndarray:
    """fast(x, *args, out) on the rows of x [N, D], split over two threads when there are many and `split` (the
    compiled rows release the GIL; each row is independent, so the result is the same)."""
    y = np.empty_like(x)
    if x.shape[0] < 64 or not split:
        fast(x, *args, y)
        return y
    h = x.shape[0] // 2
    err: list[BaseException] = []

    def second():
        try:
            fast(x[h:], *args, y[h:])
        except BaseException as e:  # re-raised below, not lost in the thread
            err.append(e)

    t = threading.Thread(target=second, daemon=True)
    t.start()
    fast(x[:h], *args, y[:h])
    t.join()
    if err:
        raise err[0]
    return y


def _fast_moe(tw):
    """compute.compiled._moe_rows_nb.moe_rows when numba runs here and the MoE has K3's form (sigmoid router in one
    group, latent down / norm / up, shared experts, SiTU-GLU); None otherwise (the numpy operator runs)."""
    cfg = tw.config
    moe = [w["moe"] for w in tw.layers if "moe" in w]
    if (not moe or cfg.hidden_act != "situ_glu" or cfg.n_group != 1 or moe[0]["down"] is None
            or moe[0]["norm"] is None or moe[0]["up"] is None or moe[0]["shared13"] is None):
        return None
    from compute import fused_nb

    if not fused_nb.available():
        return None
    from compute.compiled._moe_rows_nb import moe_rows

    return moe_rows


_KDA64: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _fast_kda(tw):
    """(the compiled kernels, a float64 compute.fused_nb.CompiledPass of the twin's weights, {layer: its KDA slot})
    when numba runs here and the config has the compiled pass's form; None otherwise (compute.ops.kda's operator runs).
    Built once per twin (no compile: the kernel loads from numba's disk cache on first use)."""
    if tw in _KDA64:
        return _KDA64[tw]
    from compute import fused_nb

    got = None
    if fused_nb.supported(tw.config) and fused_nb.available():
        from compute.compiled.fused import FusedPlans

        plans = FusedPlans(tw.config, tw.dims, tw.layers, tw.w_out, np.dtype(np.float64), tw.final_norm)
        cp = fused_nb.CompiledPass(plans, tw.layers, tw.lm_head, tw.config, tw.dims)
        got = (cp.kern, cp, {li: i for i, li in enumerate(cp.kda)})
    _KDA64[tw] = got
    return got


def _kda_rows(kfast, li: int, xn: np.ndarray, knobs) -> np.ndarray:
    """KDA layer li on the variants' normed inputs xn [N, T, D] from position 0, compiled (the formulas of
    compute.ops.kda.kda_layer in the recurrent form, equal to its chunked one to float64 rounding)."""
    kern, cp, slot = kfast
    a, b = knobs.alpha, knobs.beta
    inp = layout.PassInputs(xn[0], a is not None, 0.0 if a is None else float(a), b is not None,
                            0.0 if b is None else float(b), cp.ebias, cp.tail0, cp.S00, False, cp.ckv00, cp.kr00)
    out = np.empty_like(xn)
    kern.kda_rows(xn, cp.kw, slot[li], inp, out)
    return out


def _mix(R: np.ndarray, p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """AttnRes(p, R; w) on stacked variants: R [C, N, T, D], p [N, T, D] -> [N, T, D]."""
    N, T, D = p.shape
    return attn_res(p.reshape(N * T, D), R.reshape(R.shape[0], N * T, D), w, ATTNRES_EPS).reshape(N, T, D)
