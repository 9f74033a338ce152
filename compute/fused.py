"""Fused numpy kernels of one K3 layer: the engine's CPU fast path (few array ops per layer).

The operators in compute.{kda,moe,attnres,norms} spell the math one paper symbol at a time and run on torch or
numpy; at toy width each array op costs ~0.3–1 µs of pure overhead, so the engine's numpy backend runs these
fused kernels instead — the SAME formulas, rearranged, equal to the operators up to float rounding
(tests/compute/test_backends.py compares every trace tensor with the torch backend, which runs the operators;
tests/compute/test_fused.py compares layer by layer in float64):

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

`supported(config)` says whether a config fits these kernels (K3: AttnRes, latent MoE with shared experts,
SiTU-GLU, no group limit, lower-bound KDA gate); other configs run the operators on numpy.
"""
from __future__ import annotations

import math

import numpy as np

from compute.kda import kda_chunked
from compute.mla import mla_layer
from compute.moe import dense_mlp
from compute.xp import _above

__all__ = ["supported", "FusedK3"]

RECURRENT_MAX_T = 32  # prefill longer than this uses the chunked form


def supported(config) -> bool:
    c = config
    return (bool(c.attn_res_block_size) and c.hidden_act == "situ_glu" and c.n_group == 1
            and c.moe_latent_size is not None and c.n_shared_experts > 0 and c.kda_gate_lower_bound is not None
            and not c.mla_use_rope and c.situ_glu_beta1 > 0 and c.situ_glu_beta2 > 0)


class FusedK3:
    """Per-layer fused weights (built once from the engine's weight dicts) and the fused forward over all
    layers. Arrays of the engine's numpy dtype."""

    def __init__(self, config, dims, layers: list[dict], w_out: np.ndarray, dtype):
        c, d = config, dims
        self.config, self.dims = c, d
        self.dtype = dt = np.dtype(dtype)
        D = d.hidden
        self.D = D
        eps = c.rms_norm_eps
        self.eps = eps
        self.c_Deps = np.array(D * eps, dt)
        self.sqrtD = math.sqrt(D)
        self.block = c.attn_res_block_size
        self.n_cand = len(range(0, c.num_hidden_layers, self.block)) + 1
        b1, b2 = c.situ_glu_beta1, c.situ_glu_beta2
        self.plans = []
        bound = 0.0
        for w in layers:
            p: dict = {"norm_mixer": (w["norm_mixer"] * self.sqrtD).astype(dt),
                       "norm_ffn": (w["norm_ffn"] * self.sqrtD).astype(dt),
                       "w_attn": (w["w_attn"] * self.sqrtD).astype(dt), "w_mlp": (w["w_mlp"] * self.sqrtD).astype(dt)}
            bound = max(bound, float(np.linalg.norm(p["w_attn"])), float(np.linalg.norm(p["w_mlp"])))
            if "kda" in w:
                p["kda"] = self._kda_plan(w["kda"], dt)
            else:
                p["mla"] = w["mla"]
                if c.mla_output_gate is not None:
                    p["mla_f"] = self._mla_plan(w["mla"], dt)
            if "mlp" in w:
                p["mlp"] = w["mlp"]
            else:
                p["moe"] = self._moe_plan(w["moe"], dt, b1, b2)
            self.plans.append(p)
        self.w_out = (w_out * self.sqrtD).astype(dt)
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
        q_a_n = q_a * mp["q_a_norm"]
        if T == 1:
            qf = q_a[0]
            q_a_n /= math.sqrt(np.dot(qf, qf) + float(mp["c_q"]))
        else:
            ss = np.add.reduce(q_a * q_a, -1, keepdims=True)
            ss += mp["c_q"]
            np.sqrt(ss, out=ss)
            q_a_n /= ss
        q_b = q_a_n @ mp["q_b"]
        q = q_b.reshape(T, H, nope + r).swapaxes(0, 1)  # [H, T, dq]
        kv_a = z[:, ql:ql + kl + r]
        if cache is None:
            c_kv, k_rope = kv_a[:, :kl], kv_a[:, kl:]
        else:
            c_kv = np.concatenate([cache["c_kv"], kv_a[:, :kl]], 0)
            k_rope = np.concatenate([cache["k_rope"], kv_a[:, kl:]], 0)
        S = c_kv.shape[0]
        ss = np.add.reduce(c_kv * c_kv, -1, keepdims=True)
        ss += mp["c_kv"]
        np.sqrt(ss, out=ss)
        cn = c_kv * mp["kv_a_norm"]
        cn /= ss
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

    # ------------------------------------------------------------------ one block (tests)
    def mixer(self, li: int, xn: np.ndarray, cache: dict | None, knobs) -> tuple[np.ndarray, dict, dict]:
        """Layer li's fused mixer on xn = RMSNorm'd input [T, D] → (y [T, D], trace tensors, new cache); as
        compute.kda.kda_layer / compute.mla.mla_layer."""
        dt, T = self.dtype, xn.shape[0]
        P, t = self.plans[li], {}
        one, half = np.array(1.0, dt), np.array(0.5, dt)
        if "kda" in P:
            Kd = self.dims.kda_head_dim
            y, nc = self._kda(xn, P["kda"], t, cache, T, self.dims.kda_heads, Kd,
                              np.array(self.config.kda_gate_lower_bound / 2, dt), half, np.array(Kd ** -0.5, dt),
                              knobs.alpha, knobs.beta, one, self.eps)
        else:
            y, nc = self._mla(xn, P["mla_f"], t, cache, T, one, half)
        return y, t, nc

    def ffn(self, li: int, xn: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, dict]:
        """Layer li's fused MoE on xn [T, D] with the selection bias [E] → (y [T, D], trace tensors); as
        compute.moe.latent_moe."""
        dt, T, t = self.dtype, xn.shape[0], {}
        y = self._moe(xn, self.plans[li]["moe"], t, bias, T, self.config.num_experts_per_tok,
                      self.config.routed_scaling_factor, np.arange(T)[:, None], np.array(1e-20, dt), np.array(1.0, dt))
        return y, t

    # ------------------------------------------------------------------ forward
    def forward(self, emb: np.ndarray, positions: np.ndarray, knobs, bias_off, caches: list | None,
                rope_theta=None) -> tuple[list[dict], list, np.ndarray, np.ndarray]:
        """All layers over emb [T, D]. Returns (per-layer tensor dicts, new caches, h [T, D] = AttnRes(p, R;
        w_out), final AttnRes weights [T, N+1])."""
        c, d = self.config, self.dims
        T, D = emb.shape
        dt = self.dtype
        eps = self.eps
        C = self.n_cand
        Vb = np.empty((T, C, D), dt)  # candidates: stored blocks, then the current partial
        Den = np.empty((T, C), dt)  # sqrt(Σ V² + D·eps) per candidate
        cD = self.c_Deps
        shift = self.softmax_shift
        one = np.array(1.0, dt)

        # views per number of stored blocks n: slot n, and the n+1 candidates
        V_slot = [Vb[:, i] for i in range(C)]
        D_slot = [Den[:, i] for i in range(C)]
        V_upto = [Vb[:, :i + 1] for i in range(C)]
        D_upto = [Den[:, :i + 1] for i in range(C)]
        V1_upto = [Vb[0, :i + 1] for i in range(C)]  # one token: the candidates as a plain [n+1, D] matrix

        Deps = float(cD)
        sqrt, dot = math.sqrt, np.dot

        def attn(partial, wq, n):
            """AttnRes with n stored candidates: partial written to slot n. Returns (mix [T, D], weights)."""
            V_slot[n][...] = partial
            if T == 1:  # one token: a dot product and a scalar square root
                pf = partial[0]
                D_slot[n][0] = sqrt(dot(pf, pf) + Deps)
            else:
                ss = np.add.reduce(partial * partial, -1)
                ss += cD
                np.sqrt(ss, out=D_slot[n])
            Vn = V_upto[n]
            s = Vn @ wq
            s /= D_upto[n]
            if shift:
                s -= np.maximum.reduce(s, -1, keepdims=True)
            np.exp(s, out=s)
            s /= np.add.reduce(s, -1, keepdims=True)
            return (s @ V1_upto[n] if T == 1 else (s[:, None, :] @ Vn)[:, 0]), s

        def rms(x, w2):
            """RMSNorm(x) ⊙ w with w2 = √D·w: x·w2 / sqrt(Σx² + D·eps)."""
            if T == 1:
                xf = x[0]
                y = x * w2
                y /= sqrt(dot(xf, xf) + Deps)
                return y
            ss = np.add.reduce(x * x, -1, keepdims=True)
            ss += cD
            np.sqrt(ss, out=ss)
            y = x * w2
            y /= ss
            return y

        lb = c.kda_gate_lower_bound
        lb_half = np.array(lb / 2, dt)
        half = np.array(0.5, dt)
        H, Kd = d.kda_heads, d.kda_head_dim
        scale = np.array(Kd ** -0.5, dt)
        alpha_k, beta_k = knobs.alpha, knobs.beta
        top_k = c.num_experts_per_tok
        rsf = c.routed_scaling_factor
        c20 = np.array(1e-20, dt)
        rows = np.arange(T)[:, None]
        mla_gated = c.mla_output_gate is not None
        hact, sb1, sb2 = c.hidden_act, c.situ_glu_beta1, c.situ_glu_beta2

        p = emb
        n = 0  # stored blocks
        block = self.block
        layer_data, new_caches = [], []
        for li, P in enumerate(self.plans):
            # ---- AttnRes before the mixer (stores p at a block start)
            if n:
                x, aw = attn(p, P["w_attn"], n)
            else:
                x, aw = p, None
                if li % block == 0:  # the embedding: slot 0
                    Vb[:, 0] = p
                    ss = np.add.reduce(p * p, -1)
                    ss += cD
                    np.sqrt(ss, out=Den[:, 0])
            if li % block == 0:
                n += 1  # slot n-1 (just written) becomes a stored block
                prefix = None
            else:
                prefix = p
            xn = rms(x, P["norm_mixer"])
            t = {"attnres.mixer": aw, "attnres.mixer.out": x, "norm.mixer": xn}
            cache = None if caches is None else caches[li]
            kp = P.get("kda")
            if kp is not None:
                a, nc = self._kda(xn, kp, t, cache, T, H, Kd, lb_half, half, scale, alpha_k, beta_k, one, eps)
            elif "mla_f" in P:
                a, nc = self._mla(xn, P["mla_f"], t, cache, T, one, half)
            else:
                a, mt, nc = mla_layer(xn, P["mla"], d.mla_heads, d.nope, d.rope, d.v, d.kv_lora, positions, cache,
                                      gated=mla_gated, rope_theta=rope_theta, eps=eps)
                t.update(mt)
            new_caches.append(nc)
            prefix = a if prefix is None else prefix + a
            x2, fw = attn(prefix, P["w_mlp"], n)
            xn2 = rms(x2, P["norm_ffn"])
            mp = P.get("moe")
            if mp is not None:
                bias = mp["bias"] if bias_off is None else mp["bias"] + bias_off
                f = self._moe(xn2, mp, t, bias, T, top_k, rsf, rows, c20, one)
            else:
                f, ft = dense_mlp(xn2, P["mlp"], hact, sb1, sb2)
                t.update(ft)
            p = prefix + f
            t.update({"mixer.out": a, "attnres.ffn": fw, "attnres.ffn.out": x2, "norm.ffn": xn2, "ffn.out": f,
                      "residual": p})
            layer_data.append(t)
        h, fw = attn(p, self.w_out, n)
        return layer_data, new_caches, h, fw

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
        ss = np.add.reduce(o * o, -1, keepdims=True)
        ss += kp["c_Veps"]
        np.sqrt(ss, out=ss)
        on = o * kp["o_norm"]
        on /= ss
        on = on.reshape(T, HV)
        on *= gate
        y = on @ kp["o"]
        t.update({
            "kda.q_proj": z[:, :HK], "kda.k_proj": z[:, HK:2 * HK], "kda.v_proj": z[:, 2 * HK:3 * HK],
            "kda.q_conv": conv[:, :HK], "kda.k_conv": conv[:, HK:2 * HK], "kda.v_conv": conv[:, 2 * HK:],
            "kda.q_norm": qkn[:, :H].reshape(T, HK), "kda.k_norm": qkn[:, H:].reshape(T, HK),
            "kda.f": z[:, 3 * HK:4 * HK], "kda.alpha": a.reshape(T, HK), "kda.beta": beta, "kda.state": S,
            "kda.o": o.reshape(T, HV), "kda.gate": gate, "kda.o_norm": on, "kda.o_proj": y})
        return y, {"conv": xp[xp.shape[0] - (kp["conv"].shape[1] - 1):], "state": S}

    def _moe(self, x, mp, t, bias, T, top_k, rsf, rows, c20, one):
        E, L, F, Fs = mp["E"], mp["L"], mp["F"], mp["Fs"]
        zz = x @ mp["W"]  # [T, E | L | 3Fs]
        logits = zz[:, :E]
        s = np.negative(logits)
        np.exp(s, out=s)
        s += one
        np.reciprocal(s, out=s)  # sigmoid
        sel = s + bias
        if T == 1:
            cand = sel.argpartition(E - top_k, -1)[0, E - top_k:]
            order = sel[0].take(cand).argsort(kind="stable")[::-1]
            idx = cand.take(order)[None]
            sw = s[0].take(idx[0])[None]
        else:
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
        r = mix * mp["norm"]
        if T == 1:
            mf = mix[0]
            r /= math.sqrt(np.dot(mf, mf) + mp["Leps"])
        else:
            ss = np.add.reduce(mix * mix, -1, keepdims=True)
            ss += mp["c_Leps"]
            np.sqrt(ss, out=ss)
            r /= ss
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
