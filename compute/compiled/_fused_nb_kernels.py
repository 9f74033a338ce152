"""The numba kernel of compute.fused_nb: one compiled call per pass (all layers of K3), writing every trace
tensor into buffers the caller allocated. Imported only by compute.fused_nb, after NUMBA_CACHE_DIR is set;
module-level functions, so that numba's on-disk cache (cache=True) can store and reload them.

The formulas are the operators' (compute.ops.kda, .mla, .moe, .attnres, .norms) on compute.compiled.fused's pre-scaled plans,
spelled as loops; the shared loops (matmul rows, RMSNorm, AttnRes, top-k, float32 sigmoid / tanh) are in
compute.compiled._fused_nb_math. Dot products of the small blocks accumulate in float64; the router matmul and its sigmoid
run in the engine dtype, as numpy's do. The arguments are the typed records of compute.compiled.fused_nb_layout, and every
buffer column is found through its table (`c[KB_AT.kda_q_norm]`: the start of KDA's q_norm columns), the same
table compute.compiled.fused_nb_views cuts the trace views with.
"""
import math

import numpy as np

from compute.compiled._fused_nb_math import attn_into, mm_into, njit, rms_into, sigmoid32, tanh32, topk
from compute.compiled.fused_nb_layout import CB_AT, DB_AT, EB_AT, FB_AT, KB_AT, MB_AT, SB_AT


@njit
def _kda_layer(xn, kw, s, inp, B, S, tail, fast):
    """KDA with the lower-bound gate for the layer in slot s of kw (KDAWeights). xn [T, D]; B [T, KB's columns];
    S [H, Kd, V] the state after the pass; tail [Kc-1, 3HK] the conv tail for the next pass; inp (PassInputs):
    the cache's tail and state, the α / β overrides. fast (float32 only): the vectorised tanh."""
    W, conv, o_norm, gbias, gscale, c = kw.W[s], kw.conv[s], kw.o_norm[s], kw.gbias[s], kw.gscale[s], kw.cols
    H, Kd, scale = kw.H, kw.Kd, kw.scale
    T = xn.shape[0]
    HK = H * Kd
    V = o_norm.shape[0]
    HV = H * V
    Kc = conv.shape[1]
    P = Kc - 1
    mm_into(xn, W, B, 0)
    c3 = c[KB_AT.kda_q_proj]  # q | k | v: the convolution's input, 3HK columns
    xp = np.empty((P + T, 3 * HK), B.dtype)
    xp[:P] = inp.tail0[s]
    xp[P:] = B[:, c3:c3 + 3 * HK]
    tail[:, :] = xp[T:]
    cd = c[KB_AT.decay_in]  # decay' | b | gate pre-activations, contiguous
    c0 = c[KB_AT.kda_q_conv]  # q | k | v conv, contiguous
    cv = c[KB_AT.kda_v_conv]
    cq = c[KB_AT.kda_q_norm]  # q | k norm, contiguous
    ck = c[KB_AT.kda_k_norm]
    ca, cb, cg = c[KB_AT.kda_alpha], c[KB_AT.kda_beta], c[KB_AT.kda_gate]
    co, cn, cy = c[KB_AT.kda_o], c[KB_AT.kda_o_norm], c[KB_AT.kda_o_proj]
    ng = c[KB_AT.kda_q_conv] - cd
    pre = np.empty(3 * HK + ng, np.float64)  # tanh arguments: conv/2 | gate pre-activations
    th = np.empty(3 * HK + ng, B.dtype)
    for t in range(T):
        for j3 in range(3 * HK):
            acc = 0.0
            for j in range(Kc):
                acc += float(xp[t + j, j3]) * conv[j3, j]
            pre[j3] = acc
        for j in range(ng):
            pre[3 * HK + j] = float(B[t, cd + j]) + gbias[j]
        if fast:  # one vectorised float32 tanh over the row
            for j in range(3 * HK + ng):
                th[j] = pre[j]
            tanh32(th, 3 * HK + ng)
        else:
            for j in range(3 * HK + ng):
                th[j] = math.tanh(pre[j])
        for j in range(3 * HK):
            B[t, c0 + j] = pre[j] * (th[j] + 1.0)
        for hh in range(2 * H):  # q and k heads
            ss = 0.0
            for kk in range(Kd):
                v = float(B[t, c0 + hh * Kd + kk])
                ss += v * v
            den = math.sqrt(ss + 1e-6)
            for kk in range(Kd):
                B[t, cq + hh * Kd + kk] = B[t, c0 + hh * Kd + kk] / den
        for j in range(ng):
            gv = (th[3 * HK + j] + 1.0) * gscale[j]
            if j < HK:
                B[t, ca + j] = inp.alpha if inp.has_alpha else math.exp(gv)
            elif j < HK + H:
                B[t, cb + j - HK] = inp.beta if inp.has_beta else gv
            else:
                B[t, cg + j - HK - H] = gv
    S0 = inp.S0[s]
    u = np.empty(V, np.float64)
    for t in range(T):
        for hh in range(H):
            bt = float(B[t, cb + hh])
            if t == 0 and not inp.has_state:
                for kk in range(Kd):
                    kv = float(B[t, ck + hh * Kd + kk])
                    for vv in range(V):
                        S[hh, kk, vv] = kv * (float(B[t, cv + hh * V + vv]) * bt)
            else:
                for kk in range(Kd):
                    a = B[t, ca + hh * Kd + kk]
                    for vv in range(V):
                        S[hh, kk, vv] = (S0[hh, kk, vv] if t == 0 else S[hh, kk, vv]) * a
                for vv in range(V):
                    acc = 0.0
                    for kk in range(Kd):
                        acc += float(B[t, ck + hh * Kd + kk]) * S[hh, kk, vv]
                    u[vv] = (float(B[t, cv + hh * V + vv]) - acc) * bt
                for kk in range(Kd):
                    kv = float(B[t, ck + hh * Kd + kk])
                    for vv in range(V):
                        S[hh, kk, vv] = S[hh, kk, vv] + kv * u[vv]
            ss = 0.0
            for vv in range(V):
                acc = 0.0
                for kk in range(Kd):
                    acc += float(B[t, cq + hh * Kd + kk]) * scale * S[hh, kk, vv]
                B[t, co + hh * V + vv] = acc
                ss += float(B[t, co + hh * V + vv]) ** 2
            inv = 1.0 / math.sqrt(ss + kw.Veps)
            for vv in range(V):
                i = hh * V + vv
                B[t, cn + i] = float(B[t, co + i]) * o_norm[vv] * inv * B[t, cg + i]
    mm_into(B[:, cn:cn + HV], kw.o[s], B, cy)


@njit
def kda_rows(xn, kw, s, inp, out):
    """out[n] = the KDA mixer output of the layer in slot s of kw on xn[n] [T, D] from position 0 (inp: no cache,
    the α / β overrides), for every n of xn [N, T, D]: _kda_layer's loops on many independent sequences (the
    causal re-runs of compute.explain.rerun, float64)."""
    N, T, D = xn.shape
    B = np.empty((T, kw.cols[-1]), xn.dtype)
    S = np.empty((kw.H, kw.Kd, kw.o_norm.shape[1]), xn.dtype)
    tail = np.empty((kw.conv.shape[2] - 1, 3 * kw.H * kw.Kd), xn.dtype)
    cy = kw.cols[KB_AT.kda_o_proj]
    for n in range(N):
        _kda_layer(xn[n], kw, s, inp, B, S, tail, False)
        for t in range(T):
            for i in range(D):
                out[n, t, i] = B[t, cy + i]


@njit
def _mla_layer(xn, mw, s, inp, B, SB, SC):
    """Gated NoPE MLA for the layer in slot s of mw (MLAWeights). B [T, MB's columns]; SB [S, SB's columns] (the
    cache's rows first, from inp); SC [2, H, T, S]: scores (masked: -inf), softmax."""
    c, sb = mw.cols, mw.sb
    H, ql, kl, r, nope, dv = mw.H, mw.ql, mw.kl, mw.r, mw.nope, mw.dv
    T = xn.shape[0]
    S = SB.shape[0]
    S0 = S - T
    mm_into(xn, mw.W[s], B, 0)
    ca, ckv, cg0 = c[MB_AT.mla_q_a], c[MB_AT.mla_kv_a], c[MB_AT.gate_in]
    cqn, cqb, co, cgt = c[MB_AT.mla_q_a_norm], c[MB_AT.mla_q_b], c[MB_AT.mla_o], c[MB_AT.mla_gate]
    cog, cy = c[MB_AT.mla_o_gated], c[MB_AT.mla_o_proj]
    rms_into(B[:, ca:ca + ql], mw.q_a_norm[s], mw.c_q, B[:, cqn:cqn + ql])
    dq = nope + r
    mm_into(B[:, cqn:cqn + ql], mw.q_b[s], B, cqb)
    q = B[:, cqb:cqb + H * dq]
    sc, sr, sk = sb[SB_AT.mla_c_kv], sb[SB_AT.mla_k_rope], sb[SB_AT.mla_kv_b]
    SB[:S0, sc:sc + kl] = inp.ckv0[s]
    SB[:S0, sr:sr + r] = inp.kr0[s]
    SB[S0:, sc:sc + kl] = B[:, ckv:ckv + kl]  # kv_a = c_kv | k_rope
    SB[S0:, sr:sr + r] = B[:, ckv + kl:ckv + kl + r]
    cn = np.empty((S, kl), B.dtype)
    rms_into(SB[:, sc:sc + kl], mw.kv_a_norm[s], mw.c_kv, cn)
    mm_into(cn, mw.kv_b[s], SB, sk)
    kvb = SB[:, sk:]
    dk = nope + dv
    o = np.zeros((T, H * dv), np.float64)
    for h in range(H):
        for t in range(T):
            mx = -np.inf
            for j in range(S):
                if j > S0 + t:
                    SC[0, h, t, j] = -np.inf
                    continue
                acc = 0.0
                for n in range(nope):
                    acc += float(q[t, h * dq + n]) * kvb[j, h * dk + n]
                for i in range(r):
                    acc += float(q[t, h * dq + nope + i]) * SB[j, sr + i]
                SC[0, h, t, j] = acc * mw.scale
                if SC[0, h, t, j] > mx:
                    mx = SC[0, h, t, j]
            tot = 0.0
            for j in range(S):
                e = math.exp(float(SC[0, h, t, j]) - mx) if j <= S0 + t else 0.0
                SC[1, h, t, j] = e
                tot += float(SC[1, h, t, j])
            for j in range(S):
                SC[1, h, t, j] = SC[1, h, t, j] / tot
                pj = float(SC[1, h, t, j])
                for v in range(dv):
                    o[t, h * dv + v] += pj * kvb[j, h * dk + nope + v]
    HV = H * dv
    B[:, co:co + HV] = o
    for t in range(T):
        for i in range(HV):
            gt = (math.tanh(float(B[t, cg0 + i])) + 1.0) * 0.5
            B[t, cgt + i] = gt
            B[t, cog + i] = B[t, co + i] * B[t, cgt + i]
    mm_into(B[:, cog:cog + HV], mw.o[s], B, cy)


@njit
def _moe_layer(x, ew, s, bias, B, idx, fast, scr):
    """Latent MoE with shared experts for the layer in slot s of ew (MoEWeights). B [T, EB's columns]; idx [T, k]
    the selected experts, by biased score (bias [E]), largest first (topk, O(E)). fast (float32 only): the
    vectorised sigmoid and tanh. scr: the scratch arrays of _moe_scratch (allocated once per pass)."""
    experts, norm, up, shared2, c = ew.experts[s], ew.norm[s], ew.up[s], ew.shared2[s], ew.cols
    E, L, F, Fs, top_k = ew.E, ew.L, ew.F, ew.Fs, ew.top_k
    T = x.shape[0]
    D = up.shape[1]
    mm_into(x, ew.W[s], B, 0)
    cl, cd, chs = c[EB_AT.moe_router_logits], c[EB_AT.moe_down], c[EB_AT.shared_in]
    cs, cw, cx = c[EB_AT.moe_router], c[EB_AT.moe_topk_weight], c[EB_AT.moe_experts]
    cm, cr, cu = c[EB_AT.moe_mix], c[EB_AT.moe_norm], c[EB_AT.moe_up]
    csh, cy = c[EB_AT.moe_shared], c[EB_AT.ffn_out]
    n13 = L * 3 * F
    sel, gmax, gv, gi, cand, cv, bits, Gt, Hh, ex, hs, macc, scratch, one = scr
    nG = experts.shape[1]
    for t in range(T):
        row = B[t]
        if fast:
            sigmoid32(row[cl:cl + E], row[cs:cs + E], bits)
        else:
            for e in range(E):
                row[cs + e] = one / (one + np.exp(-row[cl + e]))
        rs = row[cs:cs + E]  # a view: row[cs + e] (a possibly negative index to LLVM) kept the loop scalar
        for e in range(E):  # the biased selection score, in the engine dtype as numpy adds it; NaN (damaged
            v = rs[e] + bias[e]  # weights) counts as -inf, as in compute.ops.moe
            sel[e] = v if v == v else -np.inf
        topk(sel, top_k, gmax, cand, cv, gi, gv, idx[t])
        tot = 0.0
        for j in range(top_k):
            tot += float(row[cs + idx[t, j]])
        tot += 1e-20
        for j in range(top_k):
            row[cw + j] = float(row[cs + idx[t, j]]) / tot * ew.rsf
        # the k experts as columns: Gt [L·3F + F·L, k] gathered, then every step vectorises over the experts;
        # first one load per cache line of every selected row, so that the k rows' misses overlap
        touch = 0.0
        for j in range(top_k):
            G = experts[idx[t, j]]
            for q in range(0, nG, 16):
                touch += G[q]
        scratch[0] = touch
        for j in range(top_k):
            G = experts[idx[t, j]]
            for q in range(nG):
                Gt[q, j] = G[q]
        Hh[:, :] = 0.0
        for l in range(L):
            zl = row[cd + l]
            for j3 in range(3 * F):
                for j in range(top_k):
                    Hh[j3, j] += zl * Gt[l * 3 * F + j3, j]
        if fast:
            tanh32(Hh.reshape(3 * F * top_k), 3 * F * top_k)
        else:
            for j3 in range(3 * F):
                for j in range(top_k):
                    Hh[j3, j] = math.tanh(Hh[j3, j])
        for f in range(F):
            for j in range(top_k):
                Hh[f, j] = Hh[f, j] * (Hh[F + f, j] + one) * Hh[2 * F + f, j]
        for l in range(L):
            acc = 0.0
            for j in range(top_k):
                ex[j] = 0.0
            for f in range(F):
                for j in range(top_k):
                    ex[j] += Hh[f, j] * Gt[n13 + f * L + l, j]
            for j in range(top_k):
                row[cx + j * L + l] = ex[j]
                acc += float(row[cw + j]) * ex[j]
            macc[l] = acc
        ss = 0.0
        for l in range(L):
            row[cm + l] = macc[l]
            ss += float(row[cm + l]) * row[cm + l]
        inv = 1.0 / math.sqrt(ss + ew.Leps)
        for l in range(L):
            row[cr + l] = row[cm + l] * norm[l] * inv
        for j3 in range(3 * Fs):
            hs[j3] = math.tanh(float(row[chs + j3]))
        for o in range(D):
            acc = 0.0
            for l in range(L):
                acc += float(row[cr + l]) * up[l, o]
            row[cu + o] = acc
            acc = 0.0
            for f in range(Fs):
                acc += hs[f] * (hs[Fs + f] + 1.0) * hs[2 * Fs + f] * shared2[f, o]
            row[csh + o] = acc
            row[cy + o] = row[cu + o] + row[csh + o]


@njit
def _moe_scratch(dt_like, E, L, F, Fs, top_k, nG):
    """_moe_layer's scratch arrays (one allocation per pass instead of a dozen per layer)."""
    dt = dt_like.dtype
    G = max(64, top_k) // top_k * top_k  # top-k groups: a multiple of k
    return (np.empty(E, dt), np.empty(G, dt), np.empty(G, dt), np.empty(G, np.int64), np.empty(E, np.int64),
            np.empty(E, dt), np.empty(E, np.int32), np.empty((nG, top_k), dt), np.empty((3 * F, top_k), dt),
            np.empty(top_k, dt), np.empty(3 * Fs, np.float64), np.empty(L, np.float64), np.empty(1, np.float64),
            np.ones(1, dt)[0])


@njit
def _dense_layer(x, dw, s, B):
    """Dense SiTU-GLU MLP (compute.ops.moe.dense_mlp) for the layer in slot s of dw (DenseWeights). B [T, DB's
    columns]."""
    c = dw.cols
    cg, cu, ca, cd = c[DB_AT.mlp_gate], c[DB_AT.mlp_up], c[DB_AT.mlp_act], c[DB_AT.mlp_down]
    T = x.shape[0]
    I = dw.gate.shape[2]
    b1, b2 = dw.b1, dw.b2
    mm_into(x, dw.gate[s], B, cg)
    mm_into(x, dw.up[s], B, cu)
    for t in range(T):
        for i in range(I):
            g = float(B[t, cg + i])
            u = float(B[t, cu + i])
            B[t, ca + i] = math.tanh(g / b1) * (1.0 / (1.0 + math.exp(-g))) * math.tanh(u / b2) * (b1 * b2)
    mm_into(B[:, ca:ca + I], dw.down[s], B, cd)


@njit
def pass_into(pw, kw, mw, ew, dw, inp, out):
    """One pass over every layer (compute.engine.ToyK3.forward's loop on the fused plans). pw (PassWeights): the
    layer order (mkind[li] 0 KDA / 1 MLA, fkind[li] 0 dense / 1 MoE, m/fslot[li] the layer's slot in its kind's
    stacks) and the pass-wide weights; kw / mw / ew / dw: each block kind's stacked weights; inp (PassInputs):
    the embeddings [T, D], knobs, router bias and caches; out (PassOutputs): the buffers every trace tensor is
    written into (CB [NL, T, CB's columns], FB [T, FB's columns], per kind its kernel's). A buffer with ONE
    slot on its first axis (CB, KB, KS, Ktail, MB, MSB, MSC, EB, Eidx, DB) serves every layer of its kind in turn:
    a pass whose caller reads only FB (compute.explain._pass_reuse) keeps its working set in the caches."""
    emb, CB, Vb, Den, FB = inp.emb, out.CB, out.Vb, out.Den, out.FB
    NL = pw.mkind.shape[0]
    T, D = emb.shape
    C = Vb.shape[1]
    c, f = pw.cb, pw.fb
    cx, cxn, cx2, cxn2 = c[CB_AT.attnres_mixer_out], c[CB_AT.norm_mixer], c[CB_AT.attnres_ffn_out], c[CB_AT.norm_ffn]
    cp, cw1, cw2 = c[CB_AT.residual], c[CB_AT.attnres_mixer], c[CB_AT.attnres_ffn]
    ky, my = kw.cols[KB_AT.kda_o_proj], mw.cols[MB_AT.mla_o_proj]  # each block's output columns
    ey, dy = ew.cols[EB_AT.ffn_out], dw.cols[DB_AT.mlp_down]
    pcur = np.empty((T, D), emb.dtype)
    pcur[:, :] = emb
    prefix = np.empty((T, D), emb.dtype)
    scr = _moe_scratch(emb, ew.E, ew.L, ew.F, ew.Fs, ew.top_k, ew.experts.shape[2])
    n = 0
    for li in range(NL):
        cb = CB[li % CB.shape[0]]
        x, xn, x2, xn2 = cb[:, cx:cx + D], cb[:, cxn:cxn + D], cb[:, cx2:cx2 + D], cb[:, cxn2:cxn2 + D]
        pp = cb[:, cp:cp + D]
        start = li % pw.block == 0
        if n > 0:
            attn_into(Vb, Den, n, pcur, pw.w_attn[li], pw.Deps, pw.shift, x, cb[:, cw1:cw1 + C])
        else:
            x[:, :] = pcur
            if start:
                for t in range(T):
                    ss = 0.0
                    for i in range(D):
                        Vb[t, 0, i] = pcur[t, i]
                        ss += float(pcur[t, i]) * pcur[t, i]
                    Den[t, 0] = math.sqrt(ss + pw.Deps)
        if start:
            n += 1
        else:
            prefix[:, :] = pcur
        rms_into(x, pw.norm_mix[li], pw.nDeps, xn)
        s = pw.mslot[li]
        if pw.mkind[li] == 0:
            o = s % out.KB.shape[0]
            _kda_layer(xn, kw, s, inp, out.KB[o], out.KS[o], out.Ktail[o], pw.fast)
            a = out.KB[o][:, ky:ky + D]
        else:
            o = s % out.MB.shape[0]
            _mla_layer(xn, mw, s, inp, out.MB[o], out.MSB[o], out.MSC[o])
            a = out.MB[o][:, my:my + D]
        if start:
            prefix[:, :] = a
        else:
            prefix += a
        attn_into(Vb, Den, n, prefix, pw.w_mlp[li], pw.Deps, pw.shift, x2, cb[:, cw2:cw2 + C])
        rms_into(x2, pw.norm_ffn[li], pw.nDeps, xn2)
        s = pw.fslot[li]
        if pw.fkind[li] == 1:
            o = s % out.EB.shape[0]
            _moe_layer(xn2, ew, s, inp.ebias[s], out.EB[o], out.Eidx[o], pw.fast, scr)
            y = out.EB[o][:, ey:ey + D]
        else:
            o = s % out.DB.shape[0]
            _dense_layer(xn2, dw, s, out.DB[o])
            y = out.DB[o][:, dy:dy + D]
        for t in range(T):
            for i in range(D):
                pp[t, i] = prefix[t, i] + y[t, i]
        pcur[:, :] = pp
    cm, ca, cn, cl = f[FB_AT.final_mix], f[FB_AT.final_attnres], f[FB_AT.final_norm], f[FB_AT.lm_head]
    attn_into(Vb, Den, n, pcur, pw.w_out, pw.Deps, pw.shift, FB[:, cm:cm + D], FB[:, ca:ca + C])
    rms_into(FB[:, cm:cm + D], pw.final_norm, pw.nDeps, FB[:, cn:cn + D])
    mm_into(FB[:, cn:cn + D], pw.lm_head, FB, cl)
