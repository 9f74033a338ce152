"""Fused numpy kernels of one K3 layer: the engine's CPU fast path (few array ops per layer).

The operators in compute.{kda,moe,attnres,norms} spell the math one paper symbol at a time and run on torch or
numpy; at toy width each array op costs ~0.3–1 µs of pure overhead, so on the engine's numpy backend ToyK3's
layer loop (the only one: compute.engine.ToyK3.forward) runs these fused kernels for every block that has one
— the SAME formulas, rearranged, equal to the operators up to float rounding (tests/compute/test_fused.py
compares block by block and the whole loop with kernels="operators" in float64; tests/compute/test_backends.py
every trace tensor with the torch backend, which runs the operators):

- projections: every linear map that reads the same input is one matmul over concatenated weights (KDA
  q|k|v|f|gates; router|W_down|shared W1|W3), and the two-stage f = W_fb (W_fa x) is one composed matrix;
- sigmoid / SiLU / SiTU-GLU through tanh with the 1/2, 1/β scalings folded into the weights:
  sigmoid(y) = ½(1 + tanh(y/2)), SiLU(c) = (c/2)(1 + tanh(c/2)),
  SiTU-GLU(g, u) = 50 · tanh(g/4) · (1 + tanh(g/2)) · tanh(u/25) (the 50 folded into W2);
  all tanh arguments of a KDA layer (conv output, decay gate, β, output gate) go through ONE tanh call;
- MoE: top-k by argpartition and one argsort of the k winners; each expert's [W1/β1 | W1/2 | W3/β2] and
  β1β2/2·W2 are one contiguous row of a table, so one `take` gathers the k experts (per token) and one batched
  matmul each runs W1|W3 and W2;
- AttnRes: the candidates live in a preallocated [T, N+1, D] buffer with the RMS denominator of every stored
  block computed once (stored blocks never change), so a call normalises only the new partial; the softmax
  skips the max shift when the scores are provably bounded (|s| ≤ √D·‖w‖ < 60 for every pseudo-query);
- one token (decode): RMS denominators are a dot product and a scalar square root;
- KDA prefill: the token recurrence (`kda_recurrent`'s formula) for T ≤ 32 — fewer ops than the chunked
  form at toy width —, `compute.kda.kda_chunked` for longer prompts; decode: one step (`kda_step`'s formula).

`kda_fusable` / `mla_fusable` / `moe_fusable` say which blocks of a config have a fused kernel (K3: all;
other blocks run the operators on numpy in the same loop); `supported(config)`: every block, and AttnRes.
RMSNorm everywhere is the one `_rms` (pre-scaled weights √n·w).
"""
from __future__ import annotations

import math

import numpy as np

from compute.kda import kda_chunked
from compute.xp import _above, _rows

__all__ = ["supported", "FusedK3", "BufferedAttnRes", "kda_fusable", "mla_fusable", "moe_fusable"]

RECURRENT_MAX_T = 32  # prefill longer than this uses the chunked form


def kda_fusable(c) -> bool:
    """KDA blocks with the lower-bound gate (K3) have a fused kernel (Kimi Linear's softplus gate: operator)."""
    return c.kda_gate_lower_bound is not None


def mla_fusable(c) -> bool:
    """Gated NoPE MLA (K3) has a fused kernel; rotary or ungated MLA runs the operator."""
    return c.mla_output_gate is not None and not c.mla_use_rope


def moe_fusable(c) -> bool:
    """Latent MoE with shared experts, SiTU-GLU and no group limit (K3) has a fused kernel."""
    return (c.hidden_act == "situ_glu" and c.n_group == 1 and c.moe_latent_size is not None
            and c.n_shared_experts > 0 and c.situ_glu_beta1 > 0 and c.situ_glu_beta2 > 0)


def supported(config) -> bool:
    """Every block of the config runs a fused kernel (K3); other configs mix fused and operator blocks."""
    c = config
    return bool(c.attn_res_block_size) and kda_fusable(c) and mla_fusable(c) and moe_fusable(c)


def _rms(x: np.ndarray, w2: np.ndarray, c_eps: np.ndarray) -> np.ndarray:
    """RMSNorm over the last dim with w2 = √n·w and c_eps = n·eps (0-dim, x's dtype): x·w2 / sqrt(Σx² + n·eps)
    (= x / sqrt(mean(x²) + eps) ⊙ w). One row: a dot product and a scalar square root."""
    if x.shape[0] == 1 and x.ndim == 2:
        xf = x[0]
        y = x * w2
        y /= math.sqrt(np.dot(xf, xf) + float(c_eps))
        return y
    ss = np.add.reduce(x * x, -1, keepdims=True)
    ss += c_eps
    np.sqrt(ss, out=ss)
    y = x * w2
    y /= ss
    return y


class BufferedAttnRes:
    """Block Attention Residuals with compute.attnres.BlockAttnRes's interface (start, before_mixer,
    after_mixer, after_ffn, final, stored), on numpy: the candidates live in a preallocated [T, N+1, D] buffer
    with the RMS denominator of every stored block computed once (stored blocks never change), so a call
    normalises only the new partial. Pseudo-queries are passed pre-scaled as √D·w (FusedK3's plans); `shift`
    False skips the softmax max-shift when the scores are provably bounded (|s| ≤ √D·‖w‖ < 60)."""

    def __init__(self, block_size: int, n_candidates: int, eps: float, dtype, shift: bool):
        self.block, self.C, self.eps, self.dtype, self.shift = block_size, n_candidates, eps, np.dtype(dtype), shift

    def start(self, embedding: np.ndarray) -> None:
        T, D = embedding.shape
        C, dt = self.C, self.dtype
        self.T = T
        self.Vb = Vb = np.empty((T, C, D), dt)  # candidates: stored blocks, then the current partial
        self.Den = Den = np.empty((T, C), dt)  # sqrt(Σ V² + D·eps) per candidate
        self.cD = np.array(D * self.eps, dt)
        self.Deps = float(self.cD)
        # views per number of stored blocks n: slot n, and the n+1 candidates
        self.V_slot = [Vb[:, i] for i in range(C)]
        self.D_slot = [Den[:, i] for i in range(C)]
        self.V_upto = [Vb[:, :i + 1] for i in range(C)]
        self.D_upto = [Den[:, :i + 1] for i in range(C)]
        self.V1_upto = [Vb[0, :i + 1] for i in range(C)]  # one token: the candidates as a plain [n+1, D] matrix
        self.p, self.prefix, self.n = embedding, None, 0

    @property
    def stored(self) -> list[np.ndarray]:
        return [self.Vb[:, i] for i in range(self.n)]

    def _attn(self, partial: np.ndarray, wq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """AttnRes over the n stored candidates and `partial` (written to slot n). Returns (mix [T, D], weights)."""
        n = self.n
        self.V_slot[n][...] = partial
        if self.T == 1:
            pf = partial[0]
            self.D_slot[n][0] = math.sqrt(np.dot(pf, pf) + self.Deps)
        else:
            ss = np.add.reduce(partial * partial, -1)
            ss += self.cD
            np.sqrt(ss, out=self.D_slot[n])
        Vn = self.V_upto[n]
        s = Vn @ wq
        s /= self.D_upto[n]
        if self.shift:
            s -= np.maximum.reduce(s, -1, keepdims=True)
        np.exp(s, out=s)
        s /= np.add.reduce(s, -1, keepdims=True)
        return (s @ self.V1_upto[n] if self.T == 1 else (s[:, None, :] @ Vn)[:, 0]), s

    def before_mixer(self, layer: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """x = AttnRes(p, R; w) if R else p; store p at a block start. Returns (x, weights or None)."""
        p = self.p
        if self.n:
            x, wts = self._attn(p, w)  # p written to slot n
        else:
            x, wts = p, None
            if layer % self.block == 0:  # the embedding: slot 0
                self.V_slot[0][...] = p
                ss = np.add.reduce(p * p, -1)
                ss += self.cD
                np.sqrt(ss, out=self.D_slot[0])
        if layer % self.block == 0:
            self.n += 1  # slot n (just written) becomes a stored block
            self.prefix = None
        else:
            self.prefix = p
        return x, wts

    def after_mixer(self, a: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """prefix += a; x2 = AttnRes(prefix, R; w). Returns (x2, weights)."""
        self.prefix = a if self.prefix is None else self.prefix + a
        return self._attn(self.prefix, w)

    def after_ffn(self, f: np.ndarray) -> np.ndarray:
        self.p = self.prefix + f
        return self.p

    def final(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._attn(self.p, w)

    def replace_stored(self, c: int, value: np.ndarray) -> None:
        """Stored block c becomes `value` [T, D] in every later mix, its RMS denominator with it (an AttnRes
        source knock-out, compute.explain.knockout); the residual stream itself is not changed."""
        self.V_slot[c][...] = value
        ss = np.add.reduce(self.V_slot[c] * self.V_slot[c], -1)
        ss += self.cD
        np.sqrt(ss, out=self.D_slot[c])


class FusedK3:
    """Per-layer fused weights (built once from the engine's weight dicts; arrays of the engine's numpy dtype)
    and the fused block kernels that ToyK3's layer loop picks per block: `mixer_kernel(li)` / `ffn_kernel(li)`
    (None where the block has no fused kernel: the operator runs), `norm` (= `_rms`) with the pre-scaled norm
    weights of `plans`, and `attn_res()` (a BufferedAttnRes)."""

    def __init__(self, config, dims, layers: list[dict], w_out: np.ndarray, dtype, final_norm=None):
        c, d = config, dims
        self.config, self.dims = c, d
        self.dtype = dt = np.dtype(dtype)
        D = d.hidden
        self.D = D
        eps = c.rms_norm_eps
        self.eps = eps
        self.c_Deps = np.array(D * eps, dt)
        self.attn_eps = 1e-6  # compute.attnres.BlockAttnRes's eps
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
        # per-call constants of the kernels
        self.one, self.half = np.array(1.0, dt), np.array(0.5, dt)
        self.H, self.Kd = d.kda_heads, d.kda_head_dim
        self.lb_half = np.array((c.kda_gate_lower_bound or 0.0) / 2, dt)
        self.kscale = np.array(d.kda_head_dim ** -0.5, dt)
        self.c20 = np.array(1e-20, dt)
        bound = max(bound, float(np.linalg.norm(self.w_out)))
        # |s_c| <= sqrt(D)·‖w‖ (the normalised candidate has norm <= sqrt(D)): exp cannot overflow below ~88
        self.softmax_shift = bound * self.sqrtD >= 60.0

    # ------------------------------------------------------------------ plans
    def _kda_plan(self, k: dict, dt) -> dict:
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
                "convT": np.ascontiguousarray(conv.T).astype(dt), "HK": HK, "nbg": bg.shape[1],
                "o_norm": (np.asarray(k["o_norm"], np.float64) * math.sqrt(V)).astype(dt),
                "c_Veps": np.array(V * self.eps, dt), "c_l2": np.array(1e-6, dt), "o": np.asarray(k["o"]), "V": V}

    def _mla_plan(self, m: dict, dt) -> dict:
        d = self.dims
        ql, kl, r = d.q_lora, d.kv_lora, d.rope
        win = np.asarray(m["in"], np.float64).copy()
        win[:, ql + kl + r:] *= 0.5  # the gate's sigmoid through tanh
        return {"W": win.astype(dt), "q_a_norm": (np.asarray(m["q_a_norm"], np.float64) * math.sqrt(ql)).astype(dt),
                "c_q": np.array(ql * self.eps, dt), "q_b": np.asarray(m["q_b"]),
                "kv_a_norm": (np.asarray(m["kv_a_norm"], np.float64) * math.sqrt(kl)).astype(dt),
                "c_kv": np.array(kl * self.eps, dt), "kv_b": np.asarray(m["kv_b"]), "o": np.asarray(m["o"]),
                "scale": np.array(1.0 / math.sqrt(d.nope + r), dt)}

    def _mla(self, xn, mp, t, cache, T, one, half):
        """Gated MLA (NoPE), the formulas of compute.mla.mla_layer: scores = q_nope·k_nope + q_rope·k_rope (the
        shared k_rope is not broadcast to the heads)."""
        d = self.dims
        H, ql, kl, r, nope, dv = d.mla_heads, d.q_lora, d.kv_lora, d.rope, d.nope, d.v
        z = xn @ mp["W"]  # [T, q_lora | kv_lora + rope | H·v (gate/2)]
        q_a = z[:, :ql]
        q_a_n = _rms(q_a, mp["q_a_norm"], mp["c_q"])
        q_b = q_a_n @ mp["q_b"]
        q = q_b.reshape(T, H, nope + r).swapaxes(0, 1)  # [H, T, dq]
        kv_a = z[:, ql:ql + kl + r]
        if cache is None:
            c_kv, k_rope = kv_a[:, :kl], kv_a[:, kl:]
        else:
            c_kv = np.concatenate([cache["c_kv"], kv_a[:, :kl]], 0)
            k_rope = np.concatenate([cache["k_rope"], kv_a[:, kl:]], 0)
        S = c_kv.shape[0]
        cn = _rms(c_kv, mp["kv_a_norm"], mp["c_kv"])
        kv_b = cn @ mp["kv_b"]
        kv = kv_b.reshape(S, H, nope + dv).swapaxes(0, 1)  # [H, S, nope + v]
        scores = q[..., :nope] @ kv[..., :nope].swapaxes(1, 2)  # [H, T, S]
        scores += q[..., nope:] @ k_rope.T
        scores *= mp["scale"]
        if T > 1:
            scores[:, _above(T, S, S - T)] = -np.inf
        p = scores - np.maximum.reduce(scores, -1, keepdims=True)
        np.exp(p, out=p)
        p /= np.add.reduce(p, -1, keepdims=True)
        o = (p @ kv[..., nope:]).swapaxes(0, 1).reshape(T, H * dv)
        gate = np.tanh(z[:, ql + kl + r:])
        gate += one
        gate *= half
        og = o * gate
        y = og @ mp["o"]
        t.update({"mla.q_a": q_a, "mla.q_a_norm": q_a_n, "mla.q_b": q_b, "mla.kv_a": kv_a, "mla.c_kv": c_kv,
                  "mla.k_rope": k_rope, "mla.kv_b": kv_b, "mla.scores": scores, "mla.softmax": p, "mla.o": o,
                  "mla.gate": gate, "mla.o_gated": og, "mla.o_proj": y})
        return y, {"c_kv": c_kv, "k_rope": k_rope}

    def _moe_plan(self, m: dict, dt, b1: float, b2: float) -> dict:
        E, L, F2 = m["w13"].shape
        F = F2 // 2
        w13 = np.asarray(m["w13"], np.float64)
        w1, w3 = w13[..., :F], w13[..., F:]
        # per expert, flat: [W1/β1 | W1/2 | W3/β2] as [L, 3F], then β1β2/2 · W2 as [F, L]
        e13 = np.concatenate([w1 / b1, w1 / 2, w3 / b2], -1).reshape(E, -1)
        e2 = (np.asarray(m["w2"], np.float64) * (b1 * b2 / 2)).reshape(E, -1)
        s13 = np.asarray(m["shared13"], np.float64)
        Fs = s13.shape[1] // 2
        sh = np.concatenate([s13[:, :Fs] / b1, s13[:, :Fs] / 2, s13[:, Fs:] / b2], 1)
        W = np.concatenate([np.asarray(m["router"], np.float64), np.asarray(m["down"], np.float64), sh], 1)
        Ln = m["norm"].shape[0]
        return {"W": W.astype(dt), "E": E, "L": L, "F": F, "Fs": Fs,
                "experts": np.ascontiguousarray(np.concatenate([e13, e2], 1)).astype(dt),
                "n13": L * 3 * F, "bias": m["bias"],
                "norm": (np.asarray(m["norm"], np.float64) * math.sqrt(Ln)).astype(dt),
                "c_Leps": np.array(Ln * self.eps, dt), "Leps": float(np.array(Ln * self.eps, dt)), "up": np.asarray(m["up"]),
                "shared2": (np.asarray(m["shared2"], np.float64) * (b1 * b2 / 2)).astype(dt)}

    # ------------------------------------------------------------------ what the layer loop picks
    def mixer_kernel(self, li: int):
        """Layer li's fused mixer as kernel(li, xn, cache, knobs, positions, t) → (y, new cache), trace tensors
        written to t; None where the block has no fused kernel."""
        P = self.plans[li]
        return self._kda_block if "kda" in P else self._mla_block if "mla_f" in P else None

    def ffn_kernel(self, li: int):
        """Layer li's fused FFN as kernel(li, xn, bias_offset, t) → y; None where it has no fused kernel."""
        return self._moe_block if "moe" in self.plans[li] else None

    def norm(self, x: np.ndarray, w2: np.ndarray) -> np.ndarray:
        """RMSNorm(x) ⊙ w with the plan's w2 = √D·w."""
        return _rms(x, w2, self.c_Deps)

    def attn_res(self) -> BufferedAttnRes:
        return BufferedAttnRes(self.block, self.n_cand, self.attn_eps, self.dtype, self.softmax_shift)

    def _kda_block(self, li, xn, cache, knobs, positions, t):
        return self._kda(xn, self.plans[li]["kda"], t, cache, xn.shape[0], self.H, self.Kd, self.lb_half, self.half,
                         self.kscale, knobs.alpha, knobs.beta, self.one, self.eps)

    def _mla_block(self, li, xn, cache, knobs, positions, t):
        return self._mla(xn, self.plans[li]["mla_f"], t, cache, xn.shape[0], self.one, self.half)

    def _moe_block(self, li, xn, bias_off, t):
        mp = self.plans[li]["moe"]
        return self._moe(xn, mp, t, mp["bias"] if bias_off is None else mp["bias"] + bias_off)

    # ------------------------------------------------------------------ one block (tests)
    def mixer(self, li: int, xn: np.ndarray, cache: dict | None, knobs) -> tuple[np.ndarray, dict, dict]:
        """Layer li's fused mixer on xn = RMSNorm'd input [T, D] → (y [T, D], trace tensors, new cache); as
        compute.kda.kda_layer / compute.mla.mla_layer."""
        t: dict = {}
        y, nc = self.mixer_kernel(li)(li, xn, cache, knobs, None, t)
        return y, t, nc

    def ffn(self, li: int, xn: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, dict]:
        """Layer li's fused MoE on xn [T, D] with the selection bias [E] → (y [T, D], trace tensors); as
        compute.moe.latent_moe."""
        t: dict = {}
        return self._moe(xn, self.plans[li]["moe"], t, bias), t

    def _kda(self, xn, kp, t, cache, T, H, Kd, lb_half, half, scale, alpha_k, beta_k, one, eps):
        HK = kp["HK"]
        V = kp["V"]
        HV = H * V
        z = xn @ kp["W"]  # [T, 3HK | f | f' | b', g']
        nt = 3 * HK + HK + kp["nbg"]
        Bt = np.empty((T, nt), self.dtype)  # tanh arguments: conv/2 | decay' | b/2 | g/2
        proj = z[:, :3 * HK]
        if cache is None:
            xp = np.concatenate([np.zeros((kp["conv"].shape[1] - 1, 3 * HK), self.dtype), proj], 0)
        else:
            xp = np.concatenate([cache["conv"], proj], 0)
        if T == 1:
            np.add.reduce(xp * kp["convT"], 0, out=Bt[0, :3 * HK])
        else:
            Kc = kp["conv"].shape[1]
            s0, s1 = xp.strides
            win = np.ndarray((T, 3 * HK, Kc), xp.dtype, xp, 0, (s0, s1, s0))
            np.add.reduce(win * kp["conv"], -1, out=Bt[:, :3 * HK])
        np.add(z[:, 4 * HK:], kp["gbias"], out=Bt[:, 3 * HK:])
        th = np.tanh(Bt)
        th += one
        conv = Bt[:, :3 * HK] * th[:, :3 * HK]  # SiLU(conv) for q | k | v
        qk = conv[:, :2 * HK].reshape(T, 2 * H, Kd)
        ss = np.add.reduce(qk * qk, -1, keepdims=True)
        ss += kp["c_l2"]
        np.sqrt(ss, out=ss)
        qkn = qk / ss
        v = conv[:, 2 * HK:].reshape(T, H, -1)
        gb = th[:, 3 * HK:]
        gb *= kp["gscale"]  # lower_bound/2 on the decay columns, 1/2 on β | gate
        if alpha_k is None:
            g = gb[:, :HK]
            a = np.exp(g)
        else:
            a = np.full((T, HK), float(alpha_k), self.dtype)
            g = np.log(np.maximum(a, 1e-12))
        bg = gb[:, HK:]
        beta = bg[:, :H] if beta_k is None else np.full((T, H), float(beta_k), self.dtype)
        gate = bg[:, H:]
        S0 = None if cache is None else cache["state"]
        q = qkn[:, :H] * scale  # [T, H, K]
        k = qkn[:, H:]
        if T == 1:  # decode: one step of the recurrence (kda_step's formula)
            b3 = beta.reshape(H, 1, 1)
            kc = k.reshape(H, Kd, 1)
            if S0 is None:
                S = kc * (v.reshape(H, 1, V) * b3)  # S' = 0: the delta is the whole value
            else:
                S = S0 * a.reshape(H, Kd, 1)  # forget: Diag(α) S
                u = v.reshape(H, 1, V) - k.reshape(H, 1, Kd) @ S
                u *= b3  # the delta
                S += kc * u  # write k uᵀ
            o = (q.reshape(H, 1, Kd) @ S).reshape(1, H, V)  # read after the update
        elif T <= RECURRENT_MAX_T:  # short prefill: the recurrence token by token (kda_recurrent's formula)
            St = np.empty((T, H, Kd, V), self.dtype)  # the state after each token
            a4 = a.reshape(T, H, Kd, 1)
            bk = (k * beta[:, :, None]).reshape(T, H, 1, Kd)  # β folded into k (row) and v
            bv = (v * beta[:, :, None]).reshape(T, H, 1, V)
            kc = k.reshape(T, H, Kd, 1)
            S = S0
            for i in range(T):
                if S is None:
                    S = np.multiply(kc[i], bv[i], out=St[i])
                else:
                    S = np.multiply(S, a4[i], out=St[i])  # forget
                    u = bv[i] - bk[i] @ S  # the delta β(v − S'ᵀk)
                    S += kc[i] * u  # write k uᵀ
            o = (q.reshape(T, H, 1, Kd) @ St).reshape(T, H, V)  # every token reads its state after the update
        else:
            o, S = kda_chunked(q[None], k[None], v[None], g.reshape(1, T, H, Kd), beta[None], scale=1.0,
                               initial_state=None if S0 is None else S0[None])
            o, S = o[0], S[0]
        # full-rank output gate: RMSNorm per head ⊙ w ⊙ gate
        on = _rms(o, kp["o_norm"], kp["c_Veps"]).reshape(T, HV)
        on *= gate
        y = on @ kp["o"]
        t.update({
            "kda.q_proj": z[:, :HK], "kda.k_proj": z[:, HK:2 * HK], "kda.v_proj": z[:, 2 * HK:3 * HK],
            "kda.q_conv": conv[:, :HK], "kda.k_conv": conv[:, HK:2 * HK], "kda.v_conv": conv[:, 2 * HK:],
            "kda.q_norm": qkn[:, :H].reshape(T, HK), "kda.k_norm": qkn[:, H:].reshape(T, HK),
            "kda.f": z[:, 3 * HK:4 * HK], "kda.alpha": a.reshape(T, HK), "kda.beta": beta, "kda.state": S,
            "kda.o": o.reshape(T, HV), "kda.gate": gate, "kda.o_norm": on, "kda.o_proj": y})
        return y, {"conv": xp[xp.shape[0] - (kp["conv"].shape[1] - 1):], "state": S}

    def _moe(self, x, mp, t, bias):
        E, L, F, Fs = mp["E"], mp["L"], mp["F"], mp["Fs"]
        T, top_k, rsf, c20, one = x.shape[0], self.config.num_experts_per_tok, self.config.routed_scaling_factor, \
            self.c20, self.one
        zz = x @ mp["W"]  # [T, E | L | 3Fs]
        logits = zz[:, :E]
        s = np.negative(logits)
        np.exp(s, out=s)
        s += one
        np.reciprocal(s, out=s)  # sigmoid
        sel = s + bias
        tot = np.add.reduce(sel, None)
        if tot != tot:  # a NaN score (damaged weights) counts as -inf, as in compute.moe and the compiled top-k
            sel = np.where(np.isnan(sel), -np.inf, sel)
        if T == 1:
            cand = sel.argpartition(E - top_k, -1)[0, E - top_k:]
            order = sel[0].take(cand).argsort(kind="stable")[::-1]
            idx = cand.take(order)[None]
            sw = s[0].take(idx[0])[None]
        else:
            rows = _rows(T)
            offE = rows * E
            cand = sel.argpartition(E - top_k, -1)[:, E - top_k:] + offE  # flat indices into sel / s
            order = sel.take(cand).argsort(-1, kind="stable")[:, ::-1]
            flat = cand.take(order + rows * top_k)
            idx = flat - offE
            sw = s.take(flat)
        wts = sw / (np.add.reduce(sw, -1, keepdims=True) + c20)
        if rsf != 1.0:
            wts = wts * rsf
        z = zz[:, E:E + L]
        n13 = mp["n13"]
        if T == 1:
            G = mp["experts"].take(idx[0], 0)  # [k, L·3F + F·L]: each expert's weights are one contiguous row
            h = z[0] @ G[:, :n13].reshape(top_k, L, 3 * F)  # [k, 3F]
            np.tanh(h, out=h)
            h[:, F:2 * F] += one
            act = h[:, :F] * h[:, F:2 * F]
            act *= h[:, 2 * F:]
            experts = (act[:, None, :] @ G[:, n13:].reshape(top_k, F, L)).reshape(1, top_k, L)
            mix = wts @ experts[0]  # [1, L]
        else:
            G = mp["experts"].take(idx, 0)  # [T, k, L·3F + F·L]
            h = z[:, None, None, :] @ G[..., :n13].reshape(T, top_k, L, 3 * F)  # [T, k, 1, 3F]
            np.tanh(h, out=h)
            h[..., F:2 * F] += one
            act = h[..., :F] * h[..., F:2 * F]
            act *= h[..., 2 * F:]
            experts = (act @ G[..., n13:].reshape(T, top_k, F, L))[:, :, 0]  # [T, k, L]
            mix = (wts[:, None, :] @ experts)[:, 0]  # [T, L]
        r = _rms(mix, mp["norm"], mp["c_Leps"])
        up = r @ mp["up"]
        hs = np.tanh(zz[:, E + L:])
        hs[:, Fs:2 * Fs] += one
        sa = hs[:, :Fs] * hs[:, Fs:2 * Fs]
        sa *= hs[:, 2 * Fs:]
        shared = sa @ mp["shared2"]
        y = up + shared
        t.update({"moe.router.logits": logits, "moe.router": s, "moe.bias": bias, "moe.topk_idx": idx,
                  "moe.topk_weight": wts, "moe.down": z, "moe.experts": experts, "moe.mix": mix, "moe.norm": r,
                  "moe.up": up, "moe.shared": shared})
        return y
