"""Knock-out experiments: ablate tokens, blocks or experts and re-run the engine (ToyK3.forward's hooks).

- a token (0-based position): its embedding row is replaced — "zero": by zeros; "mean": by the mean embedding
  row of the toy vocabulary. The position stays in the sequence (the short conv and the memories still see a
  token there, one that carries no identity).
- a block (1-based layer, "mixer" | "ffn"): its output at every position is replaced — "zero": by zeros;
  "mean": by its mean over the run's positions (with one position that is the output itself).
- an expert (expert id, at one 1-based layer or at every MoE layer): its output E_j(z) inside the mix is
  replaced wherever the router selected it — "zero": by zeros (the other experts keep their weights; the latent
  norm is re-evaluated, as a re-run would); "mean": by the mean of E_j(z_t) over all the run's positions.
- an AttnRes source (c = 0: the embedding, c = j: the stored sum of block j's layers; K3's Block Attention
  Residuals, docs/spec/k3-math.md §4): the candidate R_c is replaced in every later AttnRes mix — "zero": by
  zeros (its score becomes 0, it adds nothing to the mix); "mean": by its mean over the run's positions. The
  residual stream itself runs on; only what the pseudo-queries read changes. The last block's running sum is
  the current partial of every mix, not a stored source.

The prefill re-runs over the same tokens (0..position); the compiled pass is kept when only tokens are
knocked out (an embedding hook), the layer loop runs otherwise.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from compute.engine_io import pass_to_numpy
from compute.ops.moe import silu_glu, situ_glu
from compute.ops.norms import rms_norm
from compute.ops.parts import _np
from compute.trace import Knobs

__all__ = ["Ablation", "make_ablation", "prefill", "needs_loop", "hooks_for", "stored_sources", "ABLATION_MODES",
           "BLOCK_PARTS"]

ABLATION_MODES = ("zero", "mean")
BLOCK_PARTS = ("mixer", "ffn")


@dataclass(frozen=True)
class Ablation:
    """What to knock out. tokens: 0-based positions; blocks: (1-based layer, "mixer" | "ffn");
    experts: (1-based layer or None = every MoE layer, expert id); mode: "zero" | "mean"."""

    tokens: tuple[int, ...] = ()
    blocks: tuple[tuple[int, str], ...] = ()
    experts: tuple[tuple[int | None, int], ...] = ()
    mode: str = "zero"
    sources: tuple[int, ...] = ()  # AttnRes candidates: 0 = the embedding, j = block j's stored sum

    @property
    def empty(self) -> bool:
        return not (self.tokens or self.blocks or self.experts or self.sources)

    def merged(self, other: "Ablation") -> "Ablation":
        """This ablation and `other` together (other's mode)."""
        return Ablation(tuple(dict.fromkeys(self.tokens + other.tokens)),
                        tuple(dict.fromkeys(self.blocks + other.blocks)),
                        tuple(dict.fromkeys(self.experts + other.experts)), other.mode,
                        tuple(dict.fromkeys(self.sources + other.sources)))

    def describe(self) -> str:
        """One line: "zero ablation: tokens 2; blocks 37 mixer; experts 517 (every MoE layer)"."""
        parts = []
        if self.tokens:
            parts.append("tokens " + ", ".join(str(p) for p in self.tokens))
        if self.blocks:
            parts.append("blocks " + ", ".join(f"{ly} {pt}" for ly, pt in self.blocks))
        if self.experts:
            parts.append("experts " + ", ".join(f"{e} (every MoE layer)" if ly is None else f"{e} at layer {ly}"
                                                 for ly, e in self.experts))
        if self.sources:
            parts.append("AttnRes sources " + ", ".join("0 (embedding)" if c == 0 else f"{c} (block {c})"
                                                        for c in self.sources))
        return f"{self.mode} ablation: " + ("; ".join(parts) if parts else "nothing")


def _int(v, what: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, got {v!r}")
    return int(v)


MAX_ITEMS = 100_000  # more knock-outs than any run has tokens, blocks, experts or sources


def _items(v, what: str) -> list:
    if v is None:
        return []
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        raise ValueError(f"{what} must be a list, got {v!r}")
    out = list(itertools.islice(v, MAX_ITEMS + 1))  # an endless iterable (itertools.count()) stops here
    if len(out) > MAX_ITEMS:
        raise ValueError(f"{what}: more than {MAX_ITEMS} items")
    return out


def stored_sources(config) -> int:
    """How many AttnRes candidates a forward pass stores (the embedding and every finished block but the last:
    the last block's sum is the partial); 0 without Block Attention Residuals."""
    bs = config.attn_res_block_size
    return len(range(0, config.num_hidden_layers, bs)) if bs else 0


def make_ablation(model, n_tokens: int, tokens=None, blocks=None, experts=None, mode: str = "zero",
                  sources=None) -> Ablation:
    """A checked Ablation (ValueError with one line on a bad item). n_tokens: the run's length (positions
    0..n_tokens-1). blocks: (layer, part) pairs; experts: ids (every MoE layer) or (layer, id) pairs; sources:
    AttnRes candidates 0..stored_sources(config)-1 (0 = the embedding, j = block j's stored sum)."""
    if mode not in ABLATION_MODES:
        raise ValueError(f"mode must be one of {', '.join(ABLATION_MODES)}, got {mode!r}")
    cfg = model.config
    L, E = cfg.num_hidden_layers, cfg.n_routed_experts
    toks = []
    for p in _items(tokens, "tokens"):
        p = _int(p, "a token position")
        if not 0 <= p < n_tokens:
            raise ValueError(f"token position {p} is outside 0..{n_tokens - 1} (the positions up to the explained one)")
        toks.append(p)
    bl = []
    for b in _items(blocks, "blocks"):
        if not isinstance(b, (tuple, list)) or len(b) != 2:
            raise ValueError(f"a block is (layer, part), e.g. (37, 'mixer'), got {b!r}")
        ly, part = _int(b[0], "a block's layer"), b[1]
        if not 1 <= ly <= L:
            raise ValueError(f"block layer {ly} is outside 1..{L}")
        if part not in BLOCK_PARTS:
            raise ValueError(f"a block's part must be 'mixer' or 'ffn', got {part!r}")
        bl.append((ly, part))
    ex = []
    for e in _items(experts, "experts"):
        if isinstance(e, (tuple, list)):
            if len(e) != 2:
                raise ValueError(f"an expert is an id or (layer, id), got {e!r}")
            ly, eid = _int(e[0], "an expert's layer"), _int(e[1], "an expert id")
            if not 1 <= ly <= L:
                raise ValueError(f"expert layer {ly} is outside 1..{L}")
            if cfg.ffn_types[ly - 1] != "moe":
                raise ValueError(f"layer {ly} has a dense MLP, no experts")
        else:
            ly, eid = None, _int(e, "an expert id")
        if not 0 <= eid < E:
            raise ValueError(f"expert id {eid} is outside 0..{E - 1}")
        ex.append((ly, eid))
    src = []
    n_src = stored_sources(cfg)
    for c in _items(sources, "sources"):
        c = _int(c, "an AttnRes source")
        if not n_src:
            raise ValueError(f"{cfg.name} has no Block Attention Residuals: no AttnRes source to knock out")
        if not 0 <= c < n_src:
            raise ValueError(f"AttnRes source {c} is outside 0..{n_src - 1} (0 = the embedding, j = block j's sum; "
                             f"the last block is the running partial)")
        src.append(c)
    return Ablation(tuple(dict.fromkeys(toks)), tuple(dict.fromkeys(bl)), tuple(dict.fromkeys(ex)), mode,
                    tuple(dict.fromkeys(src)))


def hooks_for(model, ab: Ablation | None) -> dict | None:
    """ToyK3.forward hooks that carry out the ablation (None for none)."""
    if ab is None or ab.empty:
        return None
    hooks: dict = {}
    mean = ab.mode == "mean"
    if ab.tokens:
        pos = list(ab.tokens)
        fill = np.asarray(model.embedding64, dtype=np.float64).mean(0) if mean else None

        def embedding(emb):
            e = _np(emb).astype(np.float64, copy=True)
            e[pos] = 0.0 if fill is None else fill
            return model._arr(e)

        hooks["embedding"] = embedding
    mixers = {ly - 1 for ly, pt in ab.blocks if pt == "mixer"}
    ffns = {ly - 1 for ly, pt in ab.blocks if pt == "ffn"}
    experts: dict[int, set[int]] = {}
    for ly, e in ab.experts:
        for li in ([ly - 1] if ly is not None else
                   [i for i, f in enumerate(model.config.ffn_types) if f == "moe"]):
            experts.setdefault(li, set()).add(e)

    def replaced(y):
        a = _np(y).astype(np.float64)
        return model._arr(np.broadcast_to(a.mean(0), a.shape) if mean else np.zeros_like(a))

    if mixers:
        hooks["mixer"] = lambda li, a, t: replaced(a) if li in mixers else a
    if ab.sources:
        gone = set(ab.sources)
        bs = model.config.attn_res_block_size

        def attnres(li, res):
            if li % bs:
                return  # nothing was stored at this layer
            c = li // bs  # the candidate stored now: the embedding at layer 0, block j's sum at its end
            if c in gone:
                res.replace_stored(c, replaced(res.stored[c]))

        hooks["attnres"] = attnres
    if ffns or experts:
        def ffn(li, y, t):
            if li in ffns:
                return replaced(y)
            if li in experts:
                return _without_experts(model, li, t, experts[li], mean, y)
            return y

        hooks["ffn"] = ffn
    return hooks


def _without_experts(model, li: int, t: dict, gone: set[int], mean: bool, y):
    """Layer li's MoE output with the experts `gone` ablated (from the layer's own trace tensors); y when the
    router selected none of them."""
    cfg = model.config
    w = model._layers64[li]["moe"]
    idx = np.asarray(_np(t["moe.topk_idx"]))
    sel = np.isin(idx, list(gone))
    if not sel.any():
        return y
    ex = _np(t["moe.experts"]).astype(np.float64, copy=True)  # [T, k, L]
    if mean:
        z = _np(t["moe.down"]).astype(np.float64) if w["down"] is not None else _np(t["norm.ffn"]).astype(np.float64)
        for e in gone:
            h = z @ w["w13"][e]
            F = h.shape[-1] // 2
            act = (situ_glu(h[:, :F], h[:, F:], cfg.situ_glu_beta1, cfg.situ_glu_beta2) if cfg.hidden_act == "situ_glu"
                   else silu_glu(h[:, :F], h[:, F:]))
            ex[idx == e] = (act @ w["w2"][e]).mean(0)
    else:
        ex[sel] = 0.0
    wt = _np(t["moe.topk_weight"]).astype(np.float64)
    mix = np.einsum("tk,tkl->tl", wt, ex)
    r = mix if w["norm"] is None else rms_norm(mix, w["norm"], cfg.rms_norm_eps)
    up = r if w["up"] is None else r @ w["up"]
    shared = _np(t["moe.shared"]).astype(np.float64)
    return model._arr(up + shared)


def needs_loop(ab: Ablation | None) -> bool:
    """Whether the ablation needs the engine's layer loop (blocks, experts or AttnRes sources: layer hooks)."""
    return ab is not None and bool(ab.blocks or ab.experts or ab.sources)


def prefill(model, ids: list[int], knobs: Knobs | None = None, ablation: Ablation | None = None,
            loop: bool = False):
    """One prefill over `ids` from position 0 (with the ablation's hooks) → a PassTrace (numpy).
    loop=True runs the engine's layer loop even without layer hooks (a no-op mixer hook): a baseline on the
    same kernels as a block / expert knock-out (the compiled pass rounds float32 differently, and the toy
    amplifies such differences)."""
    knobs = knobs if knobs is not None else Knobs(temperature=0.0)
    hooks = hooks_for(model, ablation)
    if loop and (hooks is None or not ({"mixer", "ffn", "attnres"} & hooks.keys())):
        hooks = dict(hooks or {}, mixer=_same)
    cp = getattr(model, "_pass", None)
    if cp is not None and (hooks is None or hooks.keys() == {"embedding"}):
        # the compiled pass, as ToyK3.forward runs it, with the layers' views cut on first access (ToyK3.run's
        # path): a knock-out that only needs the logits does not pay for ~3,300 views
        emb = model.embed_ids(list(ids))
        if hooks is not None:
            emb = hooks["embedding"](emb)
        ps, _ = cp.pass_trace(emb, np.arange(len(ids)), knobs, None, model._bias_offset(knobs), "prefill",
                              model.config)
        model.layer_calls += len(ps.layers)
        return ps
    data, _, _ = model.forward(list(ids), 0, knobs, None, hooks)
    return pass_to_numpy(data, model.config, "prefill")


def _same(li, a, t):
    return a
