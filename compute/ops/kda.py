"""Kimi Delta Attention (docs/spec/k3-math.md §1).

Layouts follow fla-org/flash-linear-attention `fla/ops/kda/naive.py`: q, k [B,T,H,K], v [B,T,H,V],
g [B,T,H,K] (log decay, g <= 0), beta [B,T,H], state S [B,H,K,V]. Everything works in float32 and float64
on any device.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from compute.ops.norms import l2_norm, rms_norm
from compute.ops.parts import const, part
from compute.ops.xp import ops

if TYPE_CHECKING:
    from compute.dims import OpArgs

__all__ = ["kda_recurrent", "kda_chunked", "kda_step", "kda_gate", "short_conv", "l2_norm", "kda_layer"]


def kda_gate(f: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor,
             lower_bound: float | None = -5.0) -> torch.Tensor:
    """Log decay g from the gate pre-activation f = W_fb W_fa x.

    K3 (lower-bound form): g = lower_bound · sigmoid(exp(A_log[h]) · (f + dt_bias)) ∈ (lower_bound, 0).
    Kimi Linear (lower_bound=None): g = −exp(A_log[h]) · softplus(f + dt_bias).
    f [..., H, K], A_log [H], dt_bias [H, K] → g [..., H, K].
    """
    o = ops(f)
    a = o.exp(A_log)[:, None]  # [H, 1]
    if lower_bound is None:
        return -a * o.softplus(f + dt_bias)
    return o.const(lower_bound, f) * o.sigmoid(a * (f + dt_bias))


def short_conv(x: torch.Tensor, weight: torch.Tensor, cache: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal depthwise convolution (no activation): y_t[c] = Σ_j weight[c, j] · x_{t-K+1+j}[c].

    x [T, C]; weight [C, K]; cache [K-1, C] = the K-1 inputs before x (None = zeros, i.e. zero left pad).
    Returns (y [T, C], new cache [K-1, C] = the last K-1 inputs).
    """
    K = weight.shape[1]
    o = ops(x)
    if cache is None:
        cache = o.zeros((K - 1, x.shape[1]), x)
    xp = o.cat([cache, x], 0)  # [T+K-1, C]
    win = o.windows(xp, K)  # [T, C, K]
    y = o.sum(win * weight, -1)
    return y, xp[xp.shape[0] - (K - 1):]


def kda_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                  scale: float | None = None, initial_state: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """The KDA recurrence, token by token.

    S' = Diag(exp g_t) S; u_t = β_t (v_t − S'ᵀ k_t); S_t = S' + k_t u_tᵀ; o_t = S_tᵀ (scale · q_t).
    q, k [B,T,H,K]; v [B,T,H,V]; g [B,T,H,K]; beta [B,T,H]; initial_state [B,H,K,V] (None = zeros);
    scale defaults to K^-1/2. Returns (o [B,T,H,V], final state [B,H,K,V]).
    """
    B, T, H, K = q.shape
    V = v.shape[-1]
    if scale is None:
        scale = K ** -0.5
    o_ = ops(q)
    S = o_.zeros((B, H, K, V), q) if initial_state is None else o_.cast(initial_state, q)
    alpha = o_.exp(g)[..., None]  # [B,T,H,K,1]
    qs = (q * scale)[..., None, :]  # [B,T,H,1,K]
    kr = k[..., None, :]  # [B,T,H,1,K] (row) for Sᵀk
    kc = k[..., None]  # [B,T,H,K,1] (column) for k uᵀ
    bt = beta[..., None, None]  # [B,T,H,1,1]
    vr = v[..., None, :]  # [B,T,H,1,V]
    outs = []
    for t in range(T):
        S = S * alpha[:, t]  # forget: Diag(α) S
        u = bt[:, t] * (vr[:, t] - kr[:, t] @ S)  # [B,H,1,V] the delta
        S = S + kc[:, t] * u  # write k uᵀ
        outs.append(qs[:, t] @ S)  # read after the update, [B,H,1,V]
    o = o_.stack(outs, 1)  # [B,T,H,1,V]
    return o.reshape(B, T, H, V), S


def kda_step(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor,
             state: torch.Tensor | None = None, scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step of the recurrence for a single token (the O(D²)-per-head decode cost).

    q, k [H, K]; v [H, V]; alpha = exp(g) [H, K]; beta [H]; state [H, K, V] (None = zeros).
    Returns (o [H, V], new state [H, K, V]); equal to `kda_recurrent` with T = 1.
    """
    H, K = q.shape
    if scale is None:
        scale = K ** -0.5
    b = beta.reshape(H, 1, 1)
    if state is None:
        u = b * v[:, None]  # S' = 0: the delta is the whole value
        S = k[:, :, None] * u
    else:
        S = state * alpha[:, :, None]  # forget: Diag(α) S
        u = b * (v[:, None] - k[:, None] @ S)  # [H, 1, V] the delta
        S = S + k[:, :, None] * u  # write k uᵀ
    return (q[:, None] @ S).reshape(H, -1) * const(scale, q), S  # read after the update


def kda_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                scale: float | None = None, initial_state: torch.Tensor | None = None, chunk_size: int = 16
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunkwise (WY) form of KDA; equal to `kda_recurrent` up to rounding, for any T.

    Per chunk of C tokens (T is zero-padded to a multiple of C; padded tokens have k=0, β=0, g=0 and change
    nothing): Γ = cumsum(g); A_kk[r,c] = β_r Σ_i k_r k_c e^{Γ_r−Γ_c} (c<r); T = (I + A_kk)^{-1} Diag(β);
    W = T (e^Γ ⊙ K); U = T V; V' = U − W S; O = (Q ⊙ e^Γ) S + tril(A_qk) V' with
    A_qk[r,c] = Σ_i q_r k_c e^{Γ_r−Γ_c} (c ≤ r); S ← Diag(e^{Γ_last}) S + (e^{Γ_last−Γ} ⊙ K)ᵀ V'.
    Shapes as `kda_recurrent`. Returns (o [B,T,H,V], final state [B,H,K,V]).
    """
    B, T, H, K = q.shape
    V = v.shape[-1]
    C = int(chunk_size)
    if C < 1:
        raise ValueError("chunk_size must be >= 1")
    if scale is None:
        scale = K ** -0.5
    if T <= C:
        C = T  # one chunk of exactly T tokens: no padding needed
    o_ = ops(q)
    pad = (-T) % C
    if pad:
        q, k, v, g, beta = (o_.pad_time(x, pad) for x in (q, k, v, g, beta))
    N = (T + pad) // C
    # [B, H, N, C, *]
    q, k, v, g = (o_.permute(x.reshape(B, N, C, H, x.shape[-1]), (0, 3, 1, 2, 4)) for x in (q, k, v, g))
    beta = o_.permute(beta.reshape(B, N, C, H), (0, 3, 1, 2))
    q = q * scale
    Gam = g.cumsum(-2)  # [B,H,N,C,K]
    diff = Gam[..., :, None, :] - Gam[..., None, :, :]  # [B,H,N,C(r),C(c),K] = Γ_r − Γ_c
    above = o_.causal_mask(C, C, q)  # c > r
    decay = o_.exp(o_.masked_fill(diff, above[..., None], float("-inf")))  # 0 above the diagonal
    kd = k[..., None, :, :] * decay  # [B,H,N,r,c,K] = k_c[i] e^{Γ_r[i]−Γ_c[i]}
    A_kk = o_.tril(o_.sum(k[..., :, None, :] * kd, -1), -1) * beta[..., None]
    A_qk = o_.sum(q[..., :, None, :] * kd, -1)
    Tm = o_.solve_unit_lower(o_.eye(C, q) + A_kk, o_.diag_embed(beta))
    eG = o_.exp(Gam)
    W = Tm @ (eG * k)
    U = Tm @ v
    S = o_.zeros((B, H, K, V), q) if initial_state is None else o_.cast(initial_state, q)
    outs = []
    for n in range(N):
        Vp = U[:, :, n] - W[:, :, n] @ S
        outs.append((q[:, :, n] * eG[:, :, n]) @ S + A_qk[:, :, n] @ Vp)
        G_last = Gam[:, :, n, -1]  # [B,H,K]
        S = (o_.exp(G_last)[..., None] * S
             + (o_.exp(G_last[..., None, :] - Gam[:, :, n]) * k[:, :, n]).swapaxes(-1, -2) @ Vp)
    o = outs[0][:, :, None] if N == 1 else o_.stack(outs, 2)  # [B,H,N,C,V]
    o = o_.permute(o, (0, 2, 3, 1, 4)).reshape(B, N * C, H, V)[:, :T]
    return o, S


def kda_output(o: torch.Tensor, norm_w: torch.Tensor, gate: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Full-rank output gate: o_h ← RMSNorm(o_h) ⊙ w_norm ⊙ gate_h, gate = sigmoid(W_g x).

    o [T, H, V]; norm_w [V]; gate [T, H*V]. Returns the gated output [T, H*V].
    """
    T, H, V = o.shape
    return rms_norm(o, norm_w, eps).reshape(T, H * V) * gate


def kda_layer(x: torch.Tensor, w: dict, args: OpArgs, cache: dict | None = None, alpha: float | None = None,
              beta_override: float | None = None, chunk_size: int = 16) -> tuple[torch.Tensor, dict, dict]:
    """One KDA mixer on x = RMSNorm'd layer input [T, D], or a batch of sequences [B, T, D] (compute.training.train: each
    row from position 0, no cache; the depthwise conv takes the batch as extra channels, which is exact).

    w: 'in' [D, 3·H·K + K + H + H·V] fused (q|k|v|f_a|b|g), 'f_b' [K, H·K], 'conv' [3·H·K, ck],
    'A_log' [H], 'dt_bias' [H, K], 'o_norm' [V], 'o' [H·V, D].
    args: the model's record (compute.dims.OpArgs): H = kda_heads, K = kda_head_dim, the gate's lower bound, ε.
    cache: {'conv': [ck-1, 3·H·K], 'state': [H, K, V]} from earlier tokens (None at the start).
    alpha/beta_override: constants replacing exp(g) and β (the UI knobs). Returns (y [T, D], tensors, cache);
    tensors values are torch tensors or `Part`s of fused ones (see compute.ops.parts). A batch returns
    (y [B, T, D], {}, {'state': [B, H, K, V]}).
    """
    heads, head_dim, lower_bound, eps = args.kda_heads, args.kda_head_dim, args.kda_lower_bound, args.eps
    batched = len(x.shape) == 3
    if batched and cache is not None:
        raise ValueError("a batch of sequences starts at position 0: no cache")
    lead = tuple(x.shape[:-1])  # (T,) or (B, T)
    T = lead[-1]
    H, Kd = heads, head_dim
    HK = H * Kd
    xp = ops(x)
    z = x @ w["in"]
    if batched:  # [B, T, 3HK] → [T, B·3HK]: the conv is per channel, so the batch rides as channels
        B = lead[0]
        zc = xp.permute(z[..., : 3 * HK], (1, 0, 2)).reshape(T, B * 3 * HK)
        conv, conv_cache = short_conv(zc, xp.cat([w["conv"]] * B, 0))
        conv = xp.permute(conv.reshape(T, B, 3 * HK), (1, 0, 2))
    else:
        conv, conv_cache = short_conv(z[:, : 3 * HK], w["conv"], None if cache is None else cache["conv"])
    conv = xp.silu(conv)
    qkn = l2_norm(conv[..., : 2 * HK].reshape(*lead, 2 * H, Kd))  # q and k heads normalised together
    vc = conv[..., 2 * HK:].reshape(*lead, H, -1)
    f = z[..., 3 * HK: 3 * HK + Kd] @ w["f_b"]
    if alpha is None:
        g = kda_gate(f.reshape(*lead, H, Kd), w["A_log"], w["dt_bias"], lower_bound)
        a = xp.exp(g)
    else:
        a = xp.full((*lead, H, Kd), float(alpha), x)
        g = xp.log(xp.maximum(a, 1e-12))
    bg = xp.sigmoid(z[..., 3 * HK + Kd:])  # β = sigmoid(W_b x) | output gate sigmoid(W_g x): adjacent columns
    beta = bg[..., :H] if beta_override is None else xp.full((*lead, H), float(beta_override), x)
    gate = bg[..., H:]
    state0 = None if cache is None else cache["state"]
    if batched:
        o, S = kda_chunked(qkn[..., :H, :], qkn[..., H:, :], vc, g, beta, chunk_size=chunk_size)
        V = o.shape[-1]
        y = kda_output(o.reshape(-1, H, V), w["o_norm"], gate.reshape(-1, H * V), eps) @ w["o"]
        return y.reshape(*lead, -1), {}, {"state": S}
    if T == 1:
        qk1 = qkn.reshape(2 * H, Kd)
        o, S = kda_step(qk1[:H], qk1[H:], vc.reshape(H, -1), a.reshape(H, Kd), beta.reshape(H), state0)
        o = o.reshape(1, H, -1)
    else:
        o, S = kda_chunked(qkn[None, :, :H], qkn[None, :, H:], vc[None], g[None], beta[None],
                           chunk_size=chunk_size, initial_state=None if state0 is None else state0[None])
        o, S = o[0], S[0]
    o_norm = kda_output(o, w["o_norm"], gate, eps)
    y = o_norm @ w["o"]
    col = slice(None)
    tensors = {
        "kda.q_proj": part(z, (col, slice(0, HK))), "kda.k_proj": part(z, (col, slice(HK, 2 * HK))),
        "kda.v_proj": part(z, (col, slice(2 * HK, 3 * HK))),
        "kda.q_conv": part(conv, (col, slice(0, HK))), "kda.k_conv": part(conv, (col, slice(HK, 2 * HK))),
        "kda.v_conv": part(conv, (col, slice(2 * HK, None))),
        "kda.q_norm": part(qkn, (col, slice(0, H)), (T, HK)), "kda.k_norm": part(qkn, (col, slice(H, None)), (T, HK)),
        "kda.f": f, "kda.alpha": part(a, (), (T, HK)), "kda.beta": beta,
        "kda.state": S, "kda.o": part(o, (), (T, -1)), "kda.gate": gate, "kda.o_norm": o_norm,
        "kda.o_proj": y,
    }
    return y, tensors, {"conv": conv_cache, "state": S}
