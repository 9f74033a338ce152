"""Block Attention Residuals — K3's residual path (spec/k3-math.md §4)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


def attn_res_weights(partial: torch.Tensor, blocks: torch.Tensor | list[torch.Tensor], w: torch.Tensor,
                     eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """AttnRes with its softmax weights.

    partial p [T, D]; blocks R [N, T, D] (or a list of N [T, D]); w [D] the pseudo-query.
    V = [R_0 … R_{N-1}, p]; s_c = (V_c / sqrt(mean(V_c²) + eps)) · w; returns (Σ_c softmax(s)_c V_c [T, D],
    weights [T, N+1]). The mix uses the UN-normalised candidates.
    """
    if isinstance(blocks, (list, tuple)):
        V = torch.stack([*blocks, partial])
    else:
        V = torch.cat([blocks, partial.unsqueeze(0)], 0)
    s = (V * torch.rsqrt(V.pow(2).mean(-1, keepdim=True) + eps)) @ w  # [N+1, T]
    a = s.softmax(0)
    mixed = torch.einsum("ct,ctd->td", a, V)
    return mixed, a.T


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
    stored: list[torch.Tensor] = field(default_factory=list)
    prefix: torch.Tensor | None = None

    def start(self, embedding: torch.Tensor) -> None:
        self.p, self.stored, self.prefix = embedding, [], None

    def before_mixer(self, layer: int, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x = AttnRes(p, R; w) if R else p; store p at a block start. Returns (x, weights or None)."""
        if self.stored:
            x, wts = attn_res_weights(self.p, self.stored, w, self.eps)
        else:
            x, wts = self.p, None
        if layer % self.block_size == 0:
            self.stored.append(self.p)
            self.prefix = None
        else:
            self.prefix = self.p
        return x, wts

    def after_mixer(self, a: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """prefix += a; x2 = AttnRes(prefix, R; w). Returns (x2, weights)."""
        self.prefix = a if self.prefix is None else self.prefix + a
        return attn_res_weights(self.prefix, self.stored, w, self.eps)

    def after_ffn(self, f: torch.Tensor) -> torch.Tensor:
        """p = prefix + FFN output. Returns p."""
        self.p = self.prefix + f
        return self.p

    def final(self, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h = AttnRes(p, R; w_out) over len(R)+1 candidates. Returns (h, weights)."""
        return attn_res_weights(self.p, self.stored, w, self.eps)
