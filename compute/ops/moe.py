"""Router, Quantile Balancing, SiTU-GLU and the Stable Latent MoE (docs/spec/k3-math.md §3)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from compute.ops.norms import rms_norm
from compute.ops.xp import ops

if TYPE_CHECKING:
    from compute.dims import OpArgs

__all__ = ["route", "quantile_balance", "situ_glu", "silu_glu", "max_load_ratio", "latent_moe", "dense_mlp",
           "softmax_router"]


def situ_glu(g: torch.Tensor, u: torch.Tensor, beta1: float = 4.0, beta2: float = 25.0) -> torch.Tensor:
    """SiTU-GLU(g, u) = [β₁·tanh(g/β₁)·sigmoid(g)] · [β₂·tanh(u/β₂)]. Elementwise; bounded by β₁·β₂."""
    o = ops(g)
    return o.tanh(g / o.const(beta1, g)) * o.sigmoid(g) * o.tanh(u / o.const(beta2, u)) * o.const(beta1 * beta2, g)


def silu_glu(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """SwiGLU(g, u) = SiLU(g) · u (Kimi Linear, K2, DeepSeek-V3)."""
    return ops(g).silu(g) * u


def route(logits: torch.Tensor, bias: torch.Tensor | None, top_k: int, routed_scaling_factor: float = 1.0,
          n_group: int = 1, topk_group: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """DeepSeek-V3 sigmoid gate (noaux_tc).

    logits [T, E] (before the sigmoid); bias [E] e_score_correction_bias (None = no bias), used for the
    selection only. s = sigmoid(logits); with n_group > 1 each group scores the sum of its top-2 biased scores
    (its max without a bias) and only the best `topk_group` groups stay eligible; idx = topk(s + b, k);
    w = s[idx] / (Σ s[idx] + 1e-20) · routed_scaling_factor. Returns (weights [T, k], indices [T, k]).
    """
    w, idx, _ = _route(logits, bias, top_k, routed_scaling_factor, n_group, topk_group)
    return w, idx


def _route(logits, bias, top_k, routed_scaling_factor=1.0, n_group=1, topk_group=1):
    """`route` that also returns the sigmoid scores s [T, E]."""
    o = ops(logits)
    s = o.sigmoid(logits)
    sel = _nan_to_neg_inf(s if bias is None else s + bias)
    if n_group > 1:
        sel = _group_limit(sel, bias is not None, n_group, topk_group)
    idx = o.topk_idx(sel, top_k)
    w = o.gather(s, idx)
    w = w / (o.sum_keep(w) + o.const(1e-20, w))
    return (w if routed_scaling_factor == 1.0 else w * routed_scaling_factor), idx, s


def _nan_to_neg_inf(sel):
    """sel with every NaN (a damaged weight's score) as -inf: the top-k then picks deterministically (such an expert
    only when fewer than k have a number), as the compiled kernel does (numpy's partition would
    rank NaN first, torch.topk too)."""
    if isinstance(sel, np.ndarray):
        return np.where(np.isnan(sel), -np.inf, sel) if np.isnan(sel).any() else sel
    if not bool(sel.sum().isnan()):  # no NaN (a sum of numbers is a number or ±inf): the same values, one op less
        return sel
    return sel.masked_fill(sel.isnan(), float("-inf"))


def _group_limit(sel: torch.Tensor, biased: bool, n_group: int, topk_group: int) -> torch.Tensor:
    """DeepSeek-V3 group limiting: sel [T, E] with the experts outside the best `topk_group` of `n_group`
    groups set to −inf. A group scores the sum of its top-2 biased scores (its max without a bias); a group of
    one expert (n_group = E) scores that expert's biased score."""
    T, E = sel.shape
    o = ops(sel)
    grouped = sel.reshape(T, n_group, E // n_group)
    if isinstance(sel, np.ndarray):
        m = E // n_group
        gscore = (np.partition(grouped, m - min(2, m), -1)[..., m - min(2, m):].sum(-1) if biased
                  else grouped.max(-1))
        keep = o.topk_idx(gscore, topk_group)
        drop = np.ones((T, n_group), bool)
        drop[np.arange(T)[:, None], keep] = False
        return np.where(drop[..., None], -np.inf, grouped).reshape(T, E)
    import torch

    gscore = grouped.topk(min(2, E // n_group), -1)[0].sum(-1) if biased else grouped.amax(-1)
    keep = gscore.topk(topk_group, -1)[1]
    drop = torch.ones(T, n_group, dtype=torch.bool, device=sel.device).scatter_(1, keep, False)
    return grouped.masked_fill(drop.unsqueeze(-1), float("-inf")).view(T, E)


def softmax_router(h: torch.Tensor, W_router: torch.Tensor, top_k: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """The seed's logical-router teaching example (older softmax form, labelled as such):
    r = h W_router, p = softmax(r), selected = TopK(p, k). h [T, D], W_router [D, E]. Returns (p, idx)."""
    o = ops(h)
    p = o.softmax(h @ W_router, -1)
    return p, o.topk_idx(p, top_k)


def quantile_balance(scores: torch.Tensor, bias: torch.Tensor, top_k: int) -> torch.Tensor:
    """Aux-loss-free Quantile Balancing: the bias for the NEXT batch.

    scores [m, n] unbiased sigmoid scores; bias [n]. α_i = (k+1)-th largest of (s_ij + b_j) over j;
    margins s_ij − α_i; b_j' = −(q+1)-th largest margin of expert j over the tokens, q = ⌊m·k/n⌋, so every
    expert gets the bias that gives it its fair share of tokens. Returns new bias [n].
    """
    m, n = scores.shape
    if not 0 < top_k < n:
        raise ValueError(f"top_k must be in 1..{n - 1}")
    q = min(int(math.floor(m * top_k / n)), m - 1)
    if isinstance(scores, np.ndarray):
        alpha = np.partition(scores + bias, n - top_k - 1, -1)[:, n - top_k - 1:n - top_k]  # [m, 1]
        margins = scores - alpha  # [m, n]
        from compute.compiled import fast_select  # the same value, in one pass over the tokens (when numba is here)

        kth = fast_select.kth_largest_cols(margins, q)
        return -(np.partition(margins, m - q - 1, 0)[m - q - 1] if kth is None else kth)
    alpha = (scores + bias).topk(top_k + 1, -1)[0][:, -1:]  # [m, 1]
    margins = scores - alpha  # [m, n]
    return -margins.topk(q + 1, 0)[0][-1]


def max_load_ratio(indices: torch.Tensor, n_experts: int) -> float:
    """max over experts of (tokens routed to it) / (ideal m·k/n). indices [m, k]."""
    flat = np.asarray(indices).reshape(-1) if isinstance(indices, np.ndarray) else indices.reshape(-1).cpu().numpy()
    load = np.bincount(flat, minlength=n_experts).astype(np.float64)
    return float(load.max() / (flat.size / n_experts))


def _act(g: torch.Tensor, u: torch.Tensor, act: str, beta1: float, beta2: float) -> torch.Tensor:
    return situ_glu(g, u, beta1, beta2) if act == "situ_glu" else silu_glu(g, u)


def dense_mlp(x: torch.Tensor, w: dict, args: OpArgs) -> tuple[torch.Tensor, dict]:
    """Dense GLU MLP: down(act(x W_gate, x W_up)). x [T, D]; w 'gate' [D, I], 'up' [D, I], 'down' [I, D];
    args (compute.dims.OpArgs): the activation (act, beta1, beta2)."""
    act, beta1, beta2 = args.act, args.beta1, args.beta2
    g = x @ w["gate"]
    u = x @ w["up"]
    a = situ_glu(g, u, beta1, beta2) if act == "situ_glu" else silu_glu(g, u)
    y = a @ w["down"]
    return y, {"mlp.gate": g, "mlp.up": u, "mlp.act": a, "mlp.down": y}


def latent_moe(x: torch.Tensor, w: dict, args: OpArgs, bias: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """Stable Latent MoE with shared experts, experts vectorised (gathered weights, batched matmul).

    x [T, D] (RMSNorm'd). w: 'router' [D, E]; 'down' [D, L] (None for a non-latent MoE: experts act on x);
    'w13' [E, L, 2F] (gate | up of each expert); 'w2' [E, F, L]; 'norm' [L] (None: no "Stable" norm);
    'up' [L, D] (None for non-latent); 'shared13' [D, 2F_s]; 'shared2' [F_s, D] (None: no shared experts).
    s = sigmoid(x W_r); (w, idx) = route(...); z = x W_down; E_j(z) = W2_j act(W1_j z, W3_j z);
    r = RMSNorm(Σ_j w_j E_j(z)); y = r W_up + Shared(x). Returns (y [T, D], tensors).
    args (compute.dims.OpArgs): top_k, routed_scaling_factor, n_group, topk_group, the activation, ε.
    """
    top_k, routed_scaling_factor, n_group, topk_group = args.top_k, args.routed_scaling_factor, args.n_group, \
        args.topk_group
    act, beta1, beta2, eps = args.act, args.beta1, args.beta2, args.eps
    logits = x @ w["router"]
    weights, idx, s = _route(logits, bias, top_k, routed_scaling_factor, n_group, topk_group)
    z = x if w["down"] is None else x @ w["down"]
    h = (z[:, None, None, :] @ w["w13"][idx])[..., 0, :]  # [T, k, 2F]: gathered experts, one batched matmul
    F_ = h.shape[-1] // 2
    a = _act(h[..., :F_], h[..., F_:], act, beta1, beta2)
    experts = (a[..., None, :] @ w["w2"][idx])[..., 0, :]  # [T, k, L]
    mix = (weights[:, None] @ experts)[:, 0]  # [T, L]
    r = mix if w["norm"] is None else rms_norm(mix, w["norm"], eps)
    up = r if w["up"] is None else r @ w["up"]
    if w["shared13"] is not None:
        hs = x @ w["shared13"]
        Fs = hs.shape[-1] // 2
        shared = _act(hs[:, :Fs], hs[:, Fs:], act, beta1, beta2) @ w["shared2"]
    else:
        shared = ops(up).zeros(up.shape, up)
    y = up + shared
    tensors = {"moe.router.logits": logits, "moe.router": s, "moe.bias": bias,
               "moe.topk_idx": idx, "moe.topk_weight": weights, "moe.down": z, "moe.experts": experts,
               "moe.mix": mix, "moe.norm": r, "moe.up": up, "moe.shared": shared}
    return y, tensors
