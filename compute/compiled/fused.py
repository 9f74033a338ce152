"""The pre-scaled weight plans of compute.fused_nb's compiled pass (K3's blocks, built once per engine).

The operators in compute.{kda,mla,moe,attnres,norms} spell the math one paper symbol at a time; they are the
reference (torch, training, and the engine's numpy layer loop run them). The compiled pass
(compute.compiled._fused_nb_kernels) runs the SAME formulas rearranged, on weights prepared here:

- projections: every linear map that reads the same input is one matmul over concatenated weights (KDA
  q|k|v|f|gates; MLA q_a|kv_a|gate; router|W_down|shared W1|W3), and the two-stage f = W_fb (W_fa x) is one
  composed matrix;
- sigmoid / SiLU / SiTU-GLU through tanh with the 1/2, 1/β scalings folded into the weights:
  sigmoid(y) = ½(1 + tanh(y/2)), SiLU(c) = (c/2)(1 + tanh(c/2)),
  SiTU-GLU(g, u) = 50 · tanh(g/4) · (1 + tanh(g/2)) · tanh(u/25) (the 50 folded into W2);
- MoE: each expert's [W1/β1 | W1/2 | W3/β2] and β1β2/2·W2 are one contiguous row of a table, so the kernel
  gathers the k selected experts' weights with k row reads;
- RMSNorm and AttnRes: the norm weights and pseudo-queries pre-scaled by √n (x·√n·w / sqrt(Σx² + n·eps) =
  RMSNorm(x) ⊙ w); the AttnRes softmax may skip the max shift when the scores are provably bounded
  (|s| ≤ √D·‖w‖ < 60 for every pseudo-query: `softmax_shift`).

`kda_fusable` / `mla_fusable` / `moe_fusable` say which blocks of a config the plans cover; `supported(config)`:
every block, and AttnRes (K3). tests/compute/test_fused_nb.py compares the compiled pass with the operators.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["supported", "FusedPlans", "kda_fusable", "mla_fusable", "moe_fusable"]


def kda_fusable(c) -> bool:
    """KDA blocks with the lower-bound gate (K3) have a plan (Kimi Linear's softplus gate has none)."""
    return c.kda_gate_lower_bound is not None


def mla_fusable(c) -> bool:
    """Gated NoPE MLA (K3) has a plan; rotary or ungated MLA has none."""
    return c.mla_output_gate is not None and not c.mla_use_rope


def moe_fusable(c) -> bool:
    """Latent MoE with shared experts, SiTU-GLU and no group limit (K3) has a plan."""
    return (c.hidden_act == "situ_glu" and c.n_group == 1 and c.moe_latent_size is not None
            and c.n_shared_experts > 0 and c.situ_glu_beta1 > 0 and c.situ_glu_beta2 > 0)


def supported(config) -> bool:
    """Every block of the config has a plan, and the residual path is Block AttnRes (K3)."""
    c = config
    return bool(c.attn_res_block_size) and kda_fusable(c) and mla_fusable(c) and moe_fusable(c)


class FusedPlans:
    """Per-layer pre-scaled weights (`plans`: one dict per layer with 'norm_mixer', 'norm_ffn', 'w_attn', 'w_mlp'
    (√D·w) and 'kda' / 'mla_f' / 'moe' where the block has a plan), the final AttnRes query and norm, and the
    pass-wide constants, in the engine's numpy dtype. compute.fused_nb.CompiledPass stacks them."""

    def __init__(self, config, dims, layers: list[dict], w_out: np.ndarray, dtype, final_norm=None):
        c, d = config, dims
        self.config, self.dims = c, d
        self.dtype = dt = np.dtype(dtype)
        D = d.hidden
        self.D = D
        self.eps = eps = c.rms_norm_eps
        self.c_Deps = np.array(D * eps, dt)
        self.attn_eps = 1e-6  # compute.ops.attnres.BlockAttnRes's eps
        self.sqrtD = math.sqrt(D)
        self.block = c.attn_res_block_size
        self.n_cand = len(range(0, c.num_hidden_layers, self.block)) + 1 if self.block else 0
        b1, b2 = c.situ_glu_beta1, c.situ_glu_beta2
        self.plans = []
        bound = 0.0
        for w in layers:
            p: dict = {"norm_mixer": (w["norm_mixer"] * self.sqrtD).astype(dt),
                       "norm_ffn": (w["norm_ffn"] * self.sqrtD).astype(dt),
                       "w_attn": (w["w_attn"] * self.sqrtD).astype(dt), "w_mlp": (w["w_mlp"] * self.sqrtD).astype(dt)}
            bound = max(bound, float(np.linalg.norm(p["w_attn"])), float(np.linalg.norm(p["w_mlp"])))
            if "kda" in w and kda_fusable(c):
                p["kda"] = self._kda_plan(w["kda"], dt)
            elif "mla" in w and mla_fusable(c):
                p["mla_f"] = self._mla_plan(w["mla"], dt)
            if "moe" in w and moe_fusable(c):
                p["moe"] = self._moe_plan(w["moe"], dt, b1, b2)
            self.plans.append(p)
        self.w_out = (w_out * self.sqrtD).astype(dt)
        self.final_norm = None if final_norm is None else (final_norm * self.sqrtD).astype(dt)
        self.kscale = np.array(d.kda_head_dim ** -0.5, dt)
        bound = max(bound, float(np.linalg.norm(self.w_out)))
        # |s_c| <= sqrt(D)·‖w‖ (the normalised candidate has norm <= sqrt(D)): exp cannot overflow below ~88
        self.softmax_shift = bound * self.sqrtD >= 60.0

    def _kda_plan(self, k: dict, dt) -> dict:
        """W = [q|k|v | W_fb W_fa | (W_fb W_fa)·e^A/2 | [b|g]/2]; gbias (dt_bias·e^A/2 | 0); conv/2 (SiLU through
        tanh); gscale (lower_bound/2 on the decay columns, 1/2 on β | gate); o_norm √V·w."""
        d = self.dims
        H, K = d.kda_heads, d.kda_head_dim
        HK = H * K
        win = np.asarray(k["in"], np.float64)
        qkv = win[:, :3 * HK]
        fa = win[:, 3 * HK:3 * HK + K]
        bg = win[:, 3 * HK + K:]  # b (H) | g (H·V)
        wf = fa @ np.asarray(k["f_b"], np.float64)  # [D, HK] the composed W_fb W_fa
        eA = np.repeat(np.exp(np.asarray(k["A_log"], np.float64)), K)  # [HK]
        W = np.concatenate([qkv, wf, wf * (0.5 * eA), 0.5 * bg], 1)
        gbias = np.concatenate([0.5 * eA * np.asarray(k["dt_bias"], np.float64).reshape(-1), np.zeros(bg.shape[1])])
        conv = 0.5 * np.asarray(k["conv"], np.float64)  # [3HK, ck]
        V = k["o_norm"].shape[0]
        gscale = np.concatenate([np.full(HK, self.config.kda_gate_lower_bound / 2), np.full(bg.shape[1], 0.5)])
        return {"gscale": gscale.astype(dt), "W": W.astype(dt), "gbias": gbias.astype(dt), "conv": conv.astype(dt),
                "o_norm": (np.asarray(k["o_norm"], np.float64) * math.sqrt(V)).astype(dt), "o": np.asarray(k["o"])}

    def _mla_plan(self, m: dict, dt) -> dict:
        """W = [q_a | kv_a | k_rope | gate/2]; the two latent norms √n·w."""
        d = self.dims
        ql, kl, r = d.q_lora, d.kv_lora, d.rope
        win = np.asarray(m["in"], np.float64).copy()
        win[:, ql + kl + r:] *= 0.5  # the gate's sigmoid through tanh
        return {"W": win.astype(dt), "q_a_norm": (np.asarray(m["q_a_norm"], np.float64) * math.sqrt(ql)).astype(dt),
                "q_b": np.asarray(m["q_b"]), "kv_a_norm": (np.asarray(m["kv_a_norm"], np.float64) * math.sqrt(kl)).astype(dt),
                "kv_b": np.asarray(m["kv_b"]), "o": np.asarray(m["o"])}

    def _moe_plan(self, m: dict, dt, b1: float, b2: float) -> dict:
        """W = [router | W_down | shared W1/β1 | W1/2 | W3/β2]; the expert table (one row per expert:
        [W1/β1 | W1/2 | W3/β2] as [L, 3F], then β1β2/2·W2 as [F, L]); the latent norm √L·w; β1β2/2·shared W2."""
        E, L, F2 = m["w13"].shape
        F = F2 // 2
        w13 = np.asarray(m["w13"], np.float64)
        w1, w3 = w13[..., :F], w13[..., F:]
        e13 = np.concatenate([w1 / b1, w1 / 2, w3 / b2], -1).reshape(E, -1)
        e2 = (np.asarray(m["w2"], np.float64) * (b1 * b2 / 2)).reshape(E, -1)
        s13 = np.asarray(m["shared13"], np.float64)
        Fs = s13.shape[1] // 2
        sh = np.concatenate([s13[:, :Fs] / b1, s13[:, :Fs] / 2, s13[:, Fs:] / b2], 1)
        W = np.concatenate([np.asarray(m["router"], np.float64), np.asarray(m["down"], np.float64), sh], 1)
        Ln = m["norm"].shape[0]
        return {"W": W.astype(dt), "L": L, "F": F, "Fs": Fs, "bias": m["bias"],
                "experts": np.ascontiguousarray(np.concatenate([e13, e2], 1)).astype(dt),
                "norm": (np.asarray(m["norm"], np.float64) * math.sqrt(Ln)).astype(dt), "up": np.asarray(m["up"]),
                "shared2": (np.asarray(m["shared2"], np.float64) * (b1 * b2 / 2)).astype(dt)}
