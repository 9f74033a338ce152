"""Path patching for the toy K3 (docs/spec/k3-math.md §12): the effect of one sender on the answer only THROUGH
chosen receivers, exact in float64 on compute.explain.rerun's twin.

A clean and a corrupted prompt of the same token count run side by side (as `patch`, compute.explain.patching).
The sender — a block (layer ℓ's mixer or FFN) or one head of a mixer — takes its clean output in the corrupted
run (a head: the mixer output changes by (o_h,clean − o_h,corrupted) W_o,h), but only the receivers see it:

- every block that is not a receiver keeps its corrupted output (frozen);
- a receiver block (layer, "mixer" | "ffn") re-computes its output from its input, where its input reads the
  sender's clean output and the current outputs of all other blocks (receivers earlier in depth included);
- the receiver "logits" (the final AttnRes mix, the final norm and the LM head at the explained position) reads
  the sender's clean output; without it the final readout reads the sender's corrupted output (and still the
  receivers' new outputs).

So the measured paths are exactly those sender → receivers (→ later receivers) → answer. receivers="logits":
the sender's direct path (its output straight into the final readout, the readout's mix weights and norm
re-evaluated); receivers = every later block and "logits": ordinary activation patching of the sender at every
position. Several senders patched together (a list): each takes its clean output, and the receivers see them
all — receivers="logits" measures their direct paths together (the Route page's control: as many random blocks
together). The metric is `patch`'s: the restored fraction of the logit difference (clean answer − the corrupted
run's answer; corrupted run 0, clean run 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compute.dims import OpArgs
from compute.explain.patch_pair import PatchPair, Restored, pair_of
from compute.explain.patching import head_deltas
from compute.explain.rerun import _mix, state_before
from compute.ops.kda import kda_layer
from compute.ops.mla import mla_layer
from compute.ops.moe import dense_mlp, latent_moe
from compute.ops.norms import rms_norm

__all__ = ["PathPatching", "path_patch", "direct_path_grid"]

PARTS = ("mixer", "ffn")


@dataclass
class PathPatching(Restored):
    """The result of `path_patch` (one sender, or several patched together) or `direct_path_grid` (every block as
    sender); the shared fields: compute.explain.patch_pair.Restored (sites = "paths"). scores: [1] for one
    sender, [L, 2] (mixer, FFN) for the grid; senders: the sender of each score (several patched together: the
    tuple of them); receivers: "logits" or the receiver list. `top(n)`: [(sender, score)], largest first
    (layers 1-based)."""

    senders: list = field(default_factory=list)
    receivers: object = "logits"

    @property
    def score(self) -> float:
        """The single sender's score (ValueError for a grid)."""
        if self.scores.size != 1:
            raise ValueError("a grid has one score per sender: use .scores or .top(n)")
        return float(self.scores.reshape(-1)[0])

    def _site(self, i: int) -> tuple:
        return tuple(self.senders[i])


def _pair(ex, corrupted) -> PatchPair:
    return pair_of(ex, corrupted, "path-patch")


def _result(ex, pair: PatchPair, scores, senders, receivers) -> PathPatching:
    return PathPatching("paths", np.asarray(scores, np.float64), "".join(ex.pieces), pair.text_c, pair.pa, pair.pb,
                        pair.metric("path patching: ", " through the receivers only"), pair.swap, senders, receivers)


def _sender(ex, su: PatchPair, sender) -> tuple[int, str, int | None, np.ndarray]:
    """(0-based layer, part, head or None, δ [T, D] = the sender's clean − corrupted output)."""
    L = len(su.corr.layers)
    if not isinstance(sender, (tuple, list)) or len(sender) not in (2, 3):
        raise ValueError(f"sender must be (layer, 'mixer' | 'ffn') or (layer, 'mixer', head), got {sender!r}")
    ly, part = sender[0], sender[1]
    if isinstance(ly, (bool, np.bool_)) or not isinstance(ly, (int, np.integer)) or not 1 <= ly <= L:
        raise ValueError(f"the sender's layer must be 1..{L}, got {ly!r}")
    if part not in PARTS:
        raise ValueError(f"the sender's part must be 'mixer' or 'ffn', got {part!r}")
    li = int(ly) - 1
    if len(sender) == 3:
        if part != "mixer":
            raise ValueError("a head sender is (layer, 'mixer', head)")
        deltas = head_deltas(su.tw, su.clean, su.corr, li)
        h = sender[2]
        if isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)) or not 0 <= h < len(deltas):
            raise ValueError(f"layer {ly}'s heads are 0..{len(deltas) - 1}, got {h!r}")
        return li, part, int(h), deltas[int(h)]
    key = f"{part}.out"
    d = (np.asarray(su.clean.layers[li].tensors[key], np.float64)
         - np.asarray(su.corr.layers[li].tensors[key], np.float64))
    return li, part, None, d


def _receivers(receivers, L: int) -> tuple[bool, set]:
    """(the logits are a receiver, {(0-based layer, part)})."""
    if isinstance(receivers, str):
        if receivers != "logits":
            raise ValueError(f"receivers must be 'logits' or a list of (layer, part) and 'logits', got {receivers!r}")
        return True, set()
    if not hasattr(receivers, "__iter__"):
        raise ValueError(f"receivers must be 'logits' or a list of (layer, part) and 'logits', got {receivers!r}")
    logits, blocks = False, set()
    for r in receivers:
        if isinstance(r, str) and r == "logits":
            logits = True
            continue
        if (not isinstance(r, (tuple, list)) or len(r) != 2 or isinstance(r[0], (bool, np.bool_))
                or not isinstance(r[0], (int, np.integer)) or not 1 <= r[0] <= L or r[1] not in PARTS):
            raise ValueError(f"a receiver must be 'logits' or (layer 1..{L}, 'mixer' | 'ffn'), got {r!r}")
        blocks.add((int(r[0]) - 1, r[1]))
    if not logits and not blocks:
        raise ValueError("give at least one receiver")
    return logits, blocks


def path_patch(ex, corrupted: str | None = None, *, sender, receivers="logits") -> PathPatching:
    """Path patching of one sender through `receivers` (see the module docstring); sender may also be a list of
    senders, patched together (each block or head once; a block and one of its own heads overlap). ValueError
    (one line) on a bad argument."""
    su = _pair(ex, corrupted)
    L = len(su.corr.layers)
    group = isinstance(sender, (tuple, list)) and len(sender) > 0 and isinstance(sender[0], (tuple, list))
    deltas: dict = {}  # (0-based layer, part) -> the senders' summed δ
    sent: set = set()
    for one in (sender if group else [sender]):
        li, part, head, delta = _sender(ex, su, one)
        if (li, part, head) in sent or (li, part, None) in sent or (head is None and (li, part) in deltas):
            raise ValueError(f"sender {tuple(one)!r} is given twice or overlaps another sender")
        sent.add((li, part, head))
        deltas[(li, part)] = deltas[(li, part)] + delta if (li, part) in deltas else delta
    to_logits, recv = _receivers(receivers, L)
    lg = _run(ex, su, deltas, to_logits, recv)
    rec = "logits" if isinstance(receivers, str) else list(receivers)
    return _result(ex, su, [su.score(lg)], [tuple(tuple(x) for x in sender) if group else tuple(sender)], rec)


def _run(ex, su: PatchPair, deltas: dict, to_logits: bool, recv: set) -> np.ndarray:
    """The logits [V] at the explained position: two states side by side — `cur` with the senders' corrupted
    outputs, `snd` with their clean ones (deltas: (0-based layer, part) -> clean − corrupted) — and the same other outputs (corrupted, or re-computed for receivers
    from `snd`)."""
    tw, corr, knobs = su.tw, su.corr, ex.knobs
    cfg, eps = tw.config, tw.config.rms_norm_eps
    bs = cfg.attn_res_block_size
    args = OpArgs.of(cfg, tw.dims)
    bias_off = tw._bias_offset(knobs)
    T = su.t + 1
    pos = np.arange(T)
    emb = np.asarray(corr.embedding, np.float64)
    st = {k: [emb.copy(), np.zeros((0, T, emb.shape[1]))] for k in ("cur", "snd")}  # name -> [P, R]

    def read(name, prefix, w):  # the mixed input of a reader
        P, R = st[name]
        return _mix(R[:, None], prefix[None], w)[0] if bs and R.shape[0] else prefix

    for li in range(len(corr.layers)):
        w = tw.layers[li]
        tn = corr.layers[li].tensors
        pre = {}
        for k in st:
            P, R = st[k]
            x = _mix(R[:, None], P[None], w["w_attn"])[0] if bs and R.shape[0] else P
            if bs and li % bs == 0:
                st[k][1] = np.concatenate([R, P[None]])
                pre[k] = None
            else:
                pre[k] = P
            st[k].append(x)
        a = np.asarray(tn["mixer.out"], np.float64)
        if (li, "mixer") in recv:
            xn = rms_norm(st["snd"][2], w["norm_mixer"], eps)
            a = (kda_layer(xn, w["kda"], args, alpha=knobs.alpha, beta_override=knobs.beta, chunk_size=max(T, 1))[0]
                 if "kda" in w else mla_layer(xn, w["mla"], args, pos)[0])
        outs = {"cur": a, "snd": a + deltas[(li, "mixer")] if (li, "mixer") in deltas else a}
        for k in st:
            pre[k] = outs[k] if pre[k] is None else pre[k] + outs[k]
            st[k].pop()
        f = np.asarray(tn["ffn.out"], np.float64)
        if (li, "ffn") in recv:
            x2 = read("snd", pre["snd"], w["w_mlp"]) if bs else pre["snd"]
            xn2 = rms_norm(x2, w["norm_ffn"], eps)
            if "mlp" in w:
                f = dense_mlp(xn2, w["mlp"], args)[0]
            else:
                mw = w["moe"]
                f = latent_moe(xn2, mw, args, mw["bias"] if bias_off is None else mw["bias"] + bias_off)[0]
        outs = {"cur": f, "snd": f + deltas[(li, "ffn")] if (li, "ffn") in deltas else f}
        for k in st:
            st[k][0] = pre[k] + outs[k]
    P, R = st["snd" if to_logits else "cur"]
    h = _mix(R[:, None, su.t:su.t + 1], P[None, su.t:su.t + 1], tw.w_out)[0, 0] if bs and R.shape[0] else P[su.t]
    return rms_norm(h, tw.final_norm, eps) @ tw.lm_head


def direct_path_grid(ex, corrupted: str | None = None) -> PathPatching:
    """Every block as sender, receiver "logits": scores [L, 2] (mixer, FFN) — each block's direct path to the
    answer (the final readout re-evaluated with that block's clean output and every other block corrupted)."""
    su = _pair(ex, corrupted)
    corr, tw, t = su.corr, su.tw, su.t
    bs = ex.model.config.attn_res_block_size
    L = len(corr.layers)
    p, R = state_before(corr, L, bs)  # the final readout's candidates: stored blocks R, the last block's partial p
    rows_p, rows_R, senders = [], [], []
    for li in range(L):
        for part in PARTS:
            key = f"{part}.out"
            d = (np.asarray(su.clean.layers[li].tensors[key][t], np.float64)
                 - np.asarray(corr.layers[li].tensors[key][t], np.float64))
            pp, RR = p[t].copy(), R[:, t].copy()
            c = li // bs + 1 if bs else 0
            if bs and c < RR.shape[0]:
                RR[c] += d  # a finished block's stored sum
            else:
                pp += d  # the last block's running partial (or the single stream without AttnRes)
            rows_p.append(pp)
            rows_R.append(RR)
            senders.append((li + 1, part))
    P = np.stack(rows_p)[:, None]  # [N, 1, D]
    if bs and R.shape[0]:
        h = _mix(np.stack(rows_R, 1)[:, :, None], P, tw.w_out)[:, 0]
    else:
        h = P[:, 0]
    lg = rms_norm(h, tw.final_norm, tw.config.rms_norm_eps) @ tw.lm_head
    return _result(ex, su, su.score(lg).reshape(L, 2), senders, "logits")
