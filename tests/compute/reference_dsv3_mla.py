"""Plain float64 reference of DeepSeek-V3's Multi-head Latent Attention (deepseek-ai/DeepSeek-V3,
`inference/model.py`: class MLA, method forward, with `precompute_freqs_cis` (no YaRN: seqlen <=
original_seq_len), `apply_rotary_emb` and RMSNorm; code licence MIT, the repository's LICENSE-CODE), plus the
sigmoid output gate of gated attention (Qwen3-Next in Hugging Face transformers,
`src/transformers/models/qwen3_next/modeling_qwen3_next.py`, Qwen3NextAttention.forward:
`attn_output = attn_output * torch.sigmoid(gate)` on the concatenated heads before o_proj; Apache-2.0), which
is K3's gated MLA (docs/spec/k3-math.md §2).

DeepSeek-V3's forward, as re-spelled here (weights in nn.Linear layout [out, in], y = x W^T):

    q = wq_b(q_norm(wq_a(x)))  viewed [s, H, nope + rope];  q_pe = rotary(q_pe)
    kv, k_pe = split(wkv_a(x), [kv_lora, rope]);  k_pe = rotary(k_pe)  (one head, shared)
    "naive":  k = [k_nope | k_pe], v  from wkv_b(kv_norm(kv));  caches k, v per head
    "absorb": caches kv_norm(kv) [kv_lora] and k_pe [rope] only (the latent cache); folds wkv_b into q and o
    scores = q·k * (nope + rope)^-1/2 (+ causal mask); softmax; o = scores · v;  y = wo(o.flatten())

The rotary embedding multiplies consecutive pairs (x_2i, x_2i+1), viewed as complex numbers, by
exp(i · pos · base^(-2i/rope)). Written with numpy loops and complex numbers, sharing no code with
compute/ops/mla.py. `rotate=False` is K3's NoPE (nothing rotated: freqs_cis = 1).
"""
from __future__ import annotations

import numpy as np


def rms_norm(x, weight, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def freqs_cis(rope: int, positions, base: float) -> np.ndarray:
    """[len(positions), rope/2] complex: exp(i · pos · base^(-2i/rope)) (torch.polar of precompute_freqs_cis)."""
    freqs = 1.0 / base ** (np.arange(0, rope, 2, dtype=np.float64) / rope)
    return np.exp(1j * np.outer(np.asarray(positions, dtype=np.float64), freqs))


def apply_rotary_emb(x, cis) -> np.ndarray:
    """x [s, ..., rope] real; cis [s, rope/2]: pairs as complex numbers, times cis, back to real pairs."""
    x = np.asarray(x, dtype=np.float64)
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * cis.reshape(cis.shape[0], *([1] * (x.ndim - 2)), cis.shape[1])
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


class DSV3MLA:
    """One MLA layer with DeepSeek-V3's caches; `forward(x, start_pos)` appends x's tokens to them."""

    def __init__(self, w: dict, heads: int, nope: int, rope: int, v_dim: int, kv_lora: int,
                 rotate: bool = False, base: float = 10000.0, impl: str = "absorb"):
        self.w, self.H, self.nope, self.rope, self.v, self.kv_lora = w, heads, nope, rope, v_dim, kv_lora
        self.rotate, self.base, self.impl = rotate, base, impl
        self.scale = (nope + rope) ** -0.5
        self.k_cache, self.v_cache, self.kv_cache, self.pe_cache = [], [], [], []  # one entry per token

    def forward(self, x, start_pos: int) -> np.ndarray:
        w, H, nope, rope = self.w, self.H, self.nope, self.rope
        x = np.asarray(x, dtype=np.float64)
        s = x.shape[0]
        cis = freqs_cis(rope, range(start_pos, start_pos + s), self.base) if self.rotate \
            else np.ones((s, rope // 2), dtype=complex)
        q = (rms_norm(x @ w["wq_a"].T, w["q_norm"]) @ w["wq_b"].T).reshape(s, H, nope + rope)
        q_nope, q_pe = q[..., :nope], apply_rotary_emb(q[..., nope:], cis)
        kv_all = x @ w["wkv_a"].T
        kv, k_pe = kv_all[:, :self.kv_lora], apply_rotary_emb(kv_all[:, self.kv_lora:], cis)
        wkv_b = w["wkv_b"].reshape(H, nope + self.v, self.kv_lora)  # wkv_b.weight.view(H, -1, kv_lora)
        if self.impl == "naive":
            kvb = (rms_norm(kv, w["kv_norm"]) @ w["wkv_b"].T).reshape(s, H, nope + self.v)
            for t in range(s):
                k_t = np.concatenate([kvb[t, :, :nope], np.repeat(k_pe[t][None], H, 0)], -1)  # [H, nope+rope]
                self.k_cache.append(k_t)
                self.v_cache.append(kvb[t, :, nope:])
        else:
            for t in range(s):
                self.kv_cache.append(rms_norm(kv[t], w["kv_norm"]))
                self.pe_cache.append(k_pe[t])
        end = start_pos + s
        out = np.zeros((s, H, self.v))
        for t in range(s):
            pos = start_pos + t
            for h in range(H):
                scores = np.full(end, -np.inf)
                for j in range(pos + 1):  # causal: keys 0..pos
                    if self.impl == "naive":
                        qh = np.concatenate([q_nope[t, h], q_pe[t, h]])
                        scores[j] = qh @ self.k_cache[j][h]
                    else:  # q_nope absorbed into the latent space through wkv_b's key rows
                        q_lat = q_nope[t, h] @ wkv_b[h, :nope]  # [kv_lora]
                        scores[j] = q_lat @ self.kv_cache[j] + q_pe[t, h] @ self.pe_cache[j]
                scores = scores * self.scale
                p = np.exp(scores - scores.max())
                p /= p.sum()
                if self.impl == "naive":
                    out[t, h] = sum(p[j] * self.v_cache[j][h] for j in range(pos + 1))
                else:
                    lat = sum(p[j] * self.kv_cache[j] for j in range(pos + 1))  # [kv_lora]
                    out[t, h] = wkv_b[h, nope:] @ lat
        o = out.reshape(s, H * self.v)
        if "w_gate" in w:  # gated attention: o ⊙ sigmoid(x W_g^T) on the concatenated heads
            o = o * (1.0 / (1.0 + np.exp(-(x @ w["w_gate"].T))))
        return o @ w["wo"].T

