"""Block Attention Residuals — K3's residual path (docs/spec/k3-math.md §4)."""
from __future__ import annotations

from dataclasses import dataclass

import math


from compute.ops.xp import ops


def attn_res_weights(partial: torch.Tensor, blocks: torch.Tensor | list[torch.Tensor], w: torch.Tensor,
                     eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """AttnRes with its softmax weights.

    partial p [T, D]; blocks R [N, T, D] (or a list of N [T, D]); w [D] the pseudo-query.
    V = [R_0 … R_{N-1}, p]; s_c = (V_c / sqrt(mean(V_c²) + eps)) · w; returns (Σ_c softmax(s)_c V_c [T, D],
    weights [T, N+1]). The mix uses the UN-normalised candidates.
    """
    o = ops(partial)
    if isinstance(blocks, (list, tuple)):
        V = o.stack([*blocks, partial])
    else:
        V = o.cat([blocks, partial[None]], 0)
    return _mix(V, w, eps)


def _mix(V: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """V [C, T, D] candidates → (Σ_c softmax_c(RMS-normalised V_c · w) V_c [T, D], weights [T, C])."""
    D = V.shape[-1]
    o = ops(V)
    s = (V * o.rsqrt(o.sum_keep(V * V) + o.const(D * eps, V))) @ (w * o.const(math.sqrt(D), w))  # [C, T]
    a = o.softmax(s, 0)
    return o.sum(a[..., None] * V, 0), a.T


def attn_res(partial: torch.Tensor, blocks: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """AttnRes(p, R; w) → mixed [T, D]. partial [T, D], blocks [N, T, D], w [D]."""
    return attn_res_weights(partial, blocks, w, eps)[0]


@dataclass
class BlockAttnRes:
    """The per-token bookkeeping of §4 for one forward pass (p, R, prefix).

    Usage per layer l: x, a_w = before_mixer(l, w_attn); x2, f_w = after_mixer(a, w_mlp); after_ffn(f);
    after the last layer: h, weights = final(w_out). `stored` is R (embedding first, then one partial sum per
    finished block of `block_size` layers).
    """

    block_size: int
    eps: float = 1e-6
    p: torch.Tensor | None = None
    prefix: torch.Tensor | None = None
    _R: torch.Tensor | None = None  # the stored blocks stacked [N, T, D]

    @property
    def stored(self) -> list[torch.Tensor]:
        """R as a list [embedding, b1, ...] (each [T, D])."""
        return [] if self._R is None else list(self._R)

    def start(self, embedding: torch.Tensor) -> None:
        self.p, self._R, self.prefix = embedding, None, None

    def _attn(self, partial: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return _mix(ops(partial).cat([self._R, partial[None]], 0), w, self.eps)

    def before_mixer(self, layer: int, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x = AttnRes(p, R; w) if R else p; store p at a block start. Returns (x, weights or None)."""
        if self._R is not None:
            x, wts = self._attn(self.p, w)
        else:
            x, wts = self.p, None
        if layer % self.block_size == 0:
            P = self.p[None]
            self._R = P if self._R is None else ops(P).cat([self._R, P], 0)
            self.prefix = None
        else:
            self.prefix = self.p
        return x, wts

    def after_mixer(self, a: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """prefix += a; x2 = AttnRes(prefix, R; w). Returns (x2, weights)."""
        self.prefix = a if self.prefix is None else self.prefix + a
        return self._attn(self.prefix, w)

    def after_ffn(self, f: torch.Tensor) -> torch.Tensor:
        """p = prefix + FFN output. Returns p."""
        self.p = self.prefix + f
        return self.p

    def final(self, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h = AttnRes(p, R; w_out) over len(R)+1 candidates. Returns (h, weights)."""
        return self._attn(self.p, w)

    def replace_stored(self, c: int, value: torch.Tensor) -> None:
        """Stored block c [T, D] becomes `value` in every later mix (an AttnRes source knock-out,
        compute.explain.knockout); the residual stream itself is not changed (R is built anew: its slices may be
        views of the stream, e.g. R_0 of the embedding)."""
        R = self._R
        self._R = ops(R).cat([R[:c], value[None], R[c + 1:]], 0)


class PlainResidual:
    """The plain residual path (configs without AttnRes) with BlockAttnRes's interface, so one layer loop
    serves both: x = p before the mixer, x2 = p + a before the FFN, p = x2 + f after it; no weights."""

    def start(self, embedding):
        self.p = embedding

    def before_mixer(self, layer: int, w) -> tuple:
        return self.p, None

    def after_mixer(self, a, w) -> tuple:
        self.x2 = self.p + a
        return self.x2, None

    def after_ffn(self, f):
        self.p = self.x2 + f
        return self.p

    def final(self, w) -> tuple:
        return self.p, None
