"""The numba kernel of compute.fused_nb: one compiled call per pass (all layers of K3), writing every trace
tensor into buffers the caller allocated. Imported only by compute.fused_nb, after NUMBA_CACHE_DIR is set;
module-level functions, so that numba's on-disk cache (cache=True) can store and reload them.

The formulas are compute.fused's (the same pre-scaled weights of FusedK3's plans), spelled as loops. Dot
products of the small blocks accumulate in float64; the router matmul and its sigmoid run in the engine dtype,
as numpy's do. Buffer layouts (columns of one [T, n] row block per layer) are documented at each kernel and
mirrored by compute.fused_nb.CompiledPass, which cuts the trace views out of them.
"""
import math

import numba
import numpy as np

# error_model="numpy": a float division by zero gives inf / nan as in numpy (no Python-style check, whose branch
# keeps LLVM from vectorising a loop); the inputs never divide by zero (every denominator carries an eps).
njit = numba.njit(cache=True, nogil=True, error_model="numpy")
# The top-k selection: comparisons only, and they must hold for ANY input — a damaged weight gives NaN / inf router
# scores, and with fastmath's "nnan" / "ninf" (no NaN, no inf assumed) the comparisons on them are undefined: a
# slot of the index row stayed unwritten and the gather read out of bounds (SIGSEGV). So only "nsz" (signed
# zeros), which cannot change an order; NaN is mapped to -inf where the scores are written (_moe_layer).
njit_select = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"nsz"})

# float32 exp (Cephes expf: range reduction by ln 2, degree-5 polynomial, 2^n through the exponent bits; within
# 1 ulp) and tanh (Eigen's rational 13/6 approximation; within 6 ulp), as branch-free loops LLVM vectorises —
# libm's expf / tanhf are scalar calls. Used for the float32 engine only ("fast"); float64 uses math.exp/tanh.
_F = np.float32
_ONE, _HALF = _F(1.0), _F(0.5)
_EXP_LO, _EXP_HI = _F(-87.3365478515625), _F(88.3762626647949)
_LOG2E, _LN2_HI, _LN2_LO = _F(1.44269504088896341), _F(0.693359375), _F(-2.12194440e-4)
_E0, _E1, _E2, _E3, _E4, _E5 = (_F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3), _F(4.1665795894e-2),
                                _F(1.6666665459e-1), _F(5.0000001201e-1))
_T_CLAMP, _T_TINY = _F(7.90531110763549805), _F(0.0004)
_TA1, _TA3, _TA5, _TA7 = _F(4.89352455891786e-03), _F(6.37261928875436e-04), _F(1.48572235717979e-05), \
    _F(5.12229709037114e-08)
_TA9, _TA11, _TA13 = _F(-8.60467152213735e-11), _F(2.00018790482477e-13), _F(-2.76076847742355e-16)
_TB0, _TB2, _TB4, _TB6 = _F(4.89352518554385e-03), _F(2.26843463243900e-03), _F(1.18534705686654e-04), \
    _F(1.19825839466702e-06)


@njit
def _sigmoid32(z, s, bits):
    """s = 1 / (1 + exp(-z)) for float32 rows z, s [n] (bits: int32 scratch [n]); NaN in, NaN out."""
    n = z.shape[0]
    for e in range(n):
        x = min(max(-z[e], _EXP_LO), _EXP_HI)
        fx = np.floor(x * _LOG2E + _HALF)
        x = x - fx * _LN2_HI - fx * _LN2_LO
        y = ((((_E0 * x + _E1) * x + _E2) * x + _E3) * x + _E4) * x + _E5
        s[e] = y * x * x + x + _ONE
        bits[e] = (np.int32(fx) + np.int32(127)) << np.int32(23)
    pw = bits.view(np.float32)
    for e in range(n):
        v = _ONE / (_ONE + s[e] * pw[e])
        s[e] = v if z[e] == z[e] else z[e]  # NaN stays NaN, as numpy's (the clamp above would hide it)


@njit
def _tanh32(h, n):
    """h[:n] = tanh(h[:n]) in place, float32; NaN in, NaN out."""
    for c in range(n):
        v = h[c]
        x = min(max(v, -_T_CLAMP), _T_CLAMP)
        x2 = x * x
        p = x * (_TA1 + x2 * (_TA3 + x2 * (_TA5 + x2 * (_TA7 + x2 * (_TA9 + x2 * (_TA11 + x2 * _TA13))))))
        q = _TB0 + x2 * (_TB2 + x2 * (_TB4 + x2 * _TB6))
        h[c] = v if not abs(v) >= _T_TINY else p / q  # NaN stays NaN, as numpy's (the clamp would hide it)


@njit
def _row_mm(x, W, o):
    """o [m] = x [n] @ W [n, m] for one row; o contiguous (a row slice of a C buffer: LLVM vectorises the loop
    over m; a column slice of a 2-D buffer would be strided). n = 8 (the toy's hidden width): the eight products
    of an output summed in one expression, in the accumulation order — one pass over W instead of eight
    read-modify-writes of the output."""
    n, m = W.shape
    if n == 8:
        x0, x1, x2, x3, x4, x5, x6, x7 = x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
        for j in range(m):
            o[j] = (((((((x0 * W[0, j] + x1 * W[1, j]) + x2 * W[2, j]) + x3 * W[3, j]) + x4 * W[4, j])
                      + x5 * W[5, j]) + x6 * W[6, j]) + x7 * W[7, j])
        return
    for j in range(m):
        o[j] = 0.0
    for i in range(n):
        xi = x[i]
        for j in range(m):
            o[j] += xi * W[i, j]


@njit
def _mm_into(x, W, B, c0):
    """B[:, c0:c0+m] = x [T, n] @ W [n, m], row by row (B: a C-contiguous [T, ...] buffer)."""
    m = W.shape[1]
    for t in range(x.shape[0]):
        _row_mm(x[t], W, B[t][c0:c0 + m])


@njit
def _rms_into(x, w2, c_eps, out):
    """RMSNorm with pre-scaled weights: out = x·w2 / sqrt(Σx² + n·eps) (compute.fused._rms)."""
    T, n = x.shape
    for t in range(T):
        ss = 0.0
        for i in range(n):
            ss += float(x[t, i]) * x[t, i]
        inv = 1.0 / math.sqrt(ss + c_eps)
        for i in range(n):
            out[t, i] = x[t, i] * w2[i] * inv


@njit
def _attn_into(Vb, Den, n, partial, wq, Deps, shift, mix, wts):
    """One Block-AttnRes mix (compute.fused.BufferedAttnRes._attn): write `partial` to slot n with its RMS
    denominator, softmax over the n+1 candidates of (V·wq)/den into wts[:, :n+1], mix into mix [T, D]."""
    T, C, D = Vb.shape
    for t in range(T):
        ss = 0.0
        for i in range(D):
            v = partial[t, i]
            Vb[t, n, i] = v
            ss += float(v) * v
        Den[t, n] = math.sqrt(ss + Deps)
        mx = -np.inf
        for c in range(n + 1):
            acc = 0.0
            for i in range(D):
                acc += float(Vb[t, c, i]) * wq[i]
            sc = acc / Den[t, c]
            wts[t, c] = sc
            if sc > mx:
                mx = sc
        tot = 0.0
        for c in range(n + 1):
            e = math.exp(float(wts[t, c]) - mx) if shift else math.exp(float(wts[t, c]))
            wts[t, c] = e
            tot += float(wts[t, c])
        for c in range(n + 1):
            wts[t, c] = wts[t, c] / tot
        for i in range(D):
            acc = 0.0
            for c in range(n + 1):
                acc += float(wts[t, c]) * Vb[t, c, i]
            mix[t, i] = acc


@njit
def _kda_layer(xn, W, gbias, conv, gscale, o_norm, Veps, o_w, tail0, S0, has_S0, H, Kd, scale, alpha_k, beta_k,
               B, S, tail, fast):
    """KDA with the lower-bound gate (FusedK3._kda's formulas). B [T, z (nz) | 3HK conv | 2HK qk norm | HK alpha |
    H beta | HV gate | HV o | HV o_norm | D y]; S [H, Kd, V] the state after the pass; tail [Kc-1, 3HK] the conv
    tail for the next pass. alpha_k / beta_k < 0: computed from the input, else that value everywhere. fast
    (float32 only): the vectorised tanh."""
    T = xn.shape[0]
    HK = H * Kd
    V = o_norm.shape[0]
    HV = H * V
    nz = W.shape[1]
    Kc = conv.shape[1]
    P = Kc - 1
    _mm_into(xn, W, B, 0)
    xp = np.empty((P + T, 3 * HK), B.dtype)
    xp[:P] = tail0
    xp[P:] = B[:, :3 * HK]
    tail[:, :] = xp[T:]
    c0 = nz
    cq = c0 + 3 * HK  # qk norm
    ca = cq + 2 * HK  # alpha
    cb = ca + HK  # beta
    cg = cb + H  # gate
    co = cg + HV  # o
    cn = co + HV  # o_norm
    cy = cn + HV  # y
    ng = nz - 4 * HK  # decay' | b | gate pre-activations
    pre = np.empty(3 * HK + ng, np.float64)  # tanh arguments: conv/2 | gate pre-activations
    th = np.empty(3 * HK + ng, B.dtype)
    for t in range(T):
        for c in range(3 * HK):
            acc = 0.0
            for j in range(Kc):
                acc += float(xp[t + j, c]) * conv[c, j]
            pre[c] = acc
        for c in range(ng):
            pre[3 * HK + c] = float(B[t, 4 * HK + c]) + gbias[c]
        if fast:  # one vectorised float32 tanh over the row
            for c in range(3 * HK + ng):
                th[c] = pre[c]
            _tanh32(th, 3 * HK + ng)
        else:
            for c in range(3 * HK + ng):
                th[c] = math.tanh(pre[c])
        for c in range(3 * HK):
            B[t, c0 + c] = pre[c] * (th[c] + 1.0)
        for hh in range(2 * H):
            ss = 0.0
            for kk in range(Kd):
                v = float(B[t, c0 + hh * Kd + kk])
                ss += v * v
            den = math.sqrt(ss + 1e-6)
            for kk in range(Kd):
                B[t, cq + hh * Kd + kk] = B[t, c0 + hh * Kd + kk] / den
        for c in range(ng):
            gv = (th[3 * HK + c] + 1.0) * gscale[c]
            if c < HK:
                B[t, ca + c] = math.exp(gv) if alpha_k < 0 else alpha_k
            elif c < HK + H:
                B[t, cb + c - HK] = gv if beta_k < 0 else beta_k
            else:
                B[t, cg + c - HK - H] = gv
    u = np.empty(V, np.float64)
    for t in range(T):
        for hh in range(H):
            bt = float(B[t, cb + hh])
            if t == 0 and not has_S0:
                for kk in range(Kd):
                    kv = float(B[t, cq + HK + hh * Kd + kk])
                    for vv in range(V):
                        S[hh, kk, vv] = kv * (float(B[t, c0 + 2 * HK + hh * V + vv]) * bt)
            else:
                for kk in range(Kd):
                    a = B[t, ca + hh * Kd + kk]
                    for vv in range(V):
                        S[hh, kk, vv] = (S0[hh, kk, vv] if t == 0 else S[hh, kk, vv]) * a
                for vv in range(V):
                    acc = 0.0
                    for kk in range(Kd):
                        acc += float(B[t, cq + HK + hh * Kd + kk]) * S[hh, kk, vv]
                    u[vv] = (float(B[t, c0 + 2 * HK + hh * V + vv]) - acc) * bt
                for kk in range(Kd):
                    kv = float(B[t, cq + HK + hh * Kd + kk])
                    for vv in range(V):
                        S[hh, kk, vv] = S[hh, kk, vv] + kv * u[vv]
            ss = 0.0
            for vv in range(V):
                acc = 0.0
                for kk in range(Kd):
                    acc += float(B[t, cq + hh * Kd + kk]) * scale * S[hh, kk, vv]
                B[t, co + hh * V + vv] = acc
                ss += float(B[t, co + hh * V + vv]) ** 2
            inv = 1.0 / math.sqrt(ss + Veps)
            for vv in range(V):
                i = hh * V + vv
                B[t, cn + i] = float(B[t, co + i]) * o_norm[vv] * inv * B[t, cg + i]
    _mm_into(B[:, cn:cn + HV], o_w, B, cy)


@njit
def _mla_layer(xn, W, q_a_norm, c_q, q_b_w, kv_a_norm, c_kv_eps, kv_b_w, o_w, c_kv0, k_rope0, H, ql, kl, r,
               nope, dv, scale, B, SB, SC):
    """Gated NoPE MLA (FusedK3._mla's formulas). B [T, z | q_a_norm | q_b | o | gate | o_gated | y];
    SB [S, c_kv | k_rope | kv_b] (cache rows first); SC [2, H, T, S]: scores (masked: -inf), softmax."""
    T = xn.shape[0]
    S = SB.shape[0]
    S0 = S - T
    nz = W.shape[1]
    _mm_into(xn, W, B, 0)
    _rms_into(B[:, :ql], q_a_norm, c_q, B[:, nz:nz + ql])
    dq = nope + r
    c = nz + ql
    _mm_into(B[:, nz:nz + ql], q_b_w, B, c)
    q = B[:, c:c + H * dq]
    c += H * dq
    SB[:S0, :kl] = c_kv0
    SB[:S0, kl:kl + r] = k_rope0
    SB[S0:, :kl] = B[:, ql:ql + kl]
    SB[S0:, kl:kl + r] = B[:, ql + kl:ql + kl + r]
    cn = np.empty((S, kl), B.dtype)
    _rms_into(SB[:, :kl], kv_a_norm, c_kv_eps, cn)
    _mm_into(cn, kv_b_w, SB, kl + r)
    kvb = SB[:, kl + r:]
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
                    acc += float(q[t, h * dq + nope + i]) * SB[j, kl + i]
                SC[0, h, t, j] = acc * scale
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
    B[:, c:c + HV] = o
    g0 = ql + kl + r
    for t in range(T):
        for i in range(HV):
            gt = (math.tanh(float(B[t, g0 + i])) + 1.0) * 0.5
            B[t, c + HV + i] = gt
            B[t, c + 2 * HV + i] = B[t, c + i] * B[t, c + HV + i]
    _mm_into(B[:, c + 2 * HV:c + 3 * HV], o_w, B, c + 3 * HV)


@njit
def _moe_layer(x, W, experts, bias, E, L, F, Fs, top_k, rsf, norm, Leps, up, shared2, B, idx, fast, scr):
    """Latent MoE with shared experts (FusedK3._moe's formulas). B [T, zz (E logits | L down | 3Fs shared) |
    E router | k weights | k·L experts | L mix | L norm | D up | D shared | D y]; idx [T, k] the selected experts,
    by biased score, largest first (_topk, O(E)). fast (float32
    only): the vectorised sigmoid and tanh. scr: the scratch arrays of _moe_scratch (allocated once per pass)."""
    T = x.shape[0]
    nz = W.shape[1]
    D = up.shape[1]
    _mm_into(x, W, B, 0)
    cs = nz  # router scores
    cw = cs + E  # weights
    cx = cw + top_k  # experts
    cm = cx + top_k * L  # mix
    cr = cm + L  # norm
    cu = cr + L  # up
    csh = cu + D  # shared
    cy = csh + D  # y
    n13 = L * 3 * F
    sel, gmax, gv, gi, cand, cv, bits, Gt, Hh, ex, hs, macc, scratch, one = scr
    nG = experts.shape[1]
    for t in range(T):
        row = B[t]
        if fast:
            _sigmoid32(row[:E], row[cs:cs + E], bits)
        else:
            for e in range(E):
                row[cs + e] = one / (one + np.exp(-row[e]))
        for e in range(E):  # the biased selection score, in the engine dtype as numpy adds it; NaN (damaged
            v = row[cs + e] + bias[e]  # weights) counts as -inf, as in compute.fused / compute.moe
            sel[e] = v if v == v else -np.inf
        _topk(sel, top_k, gmax, cand, cv, gi, gv, idx[t])
        tot = 0.0
        for j in range(top_k):
            tot += float(row[cs + idx[t, j]])
        tot += 1e-20
        for j in range(top_k):
            row[cw + j] = float(row[cs + idx[t, j]]) / tot * rsf
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
            zl = row[E + l]
            for c in range(3 * F):
                for j in range(top_k):
                    Hh[c, j] += zl * Gt[l * 3 * F + c, j]
        if fast:
            _tanh32(Hh.reshape(3 * F * top_k), 3 * F * top_k)
        else:
            for c in range(3 * F):
                for j in range(top_k):
                    Hh[c, j] = math.tanh(Hh[c, j])
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
        inv = 1.0 / math.sqrt(ss + Leps)
        for l in range(L):
            row[cr + l] = row[cm + l] * norm[l] * inv
        for c in range(3 * Fs):
            hs[c] = math.tanh(float(row[E + L + c]))
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


@njit_select
def _topk(sel, k, gmax, cand, cv, gi, gv, idx):
    """idx[:k] = the k largest of sel, largest first (ties: lower index first), in O(E) and nearly branch-free
    (the order of a router's scores is data: branches on it mispredict). The elements fall into G = len(gmax)
    >= k groups e mod G. Any k disjoint sets of groups give a lower bound τ0 of the k-th largest element (the
    smallest of their maxima: k elements are >= it); the exact k-th largest of the group maxima >= τ0, τ, is a
    tighter one (found by counting, for each, the larger ones); only elements >= τ, in groups whose maximum is
    >= τ, are candidates, and each candidate's rank among them (by value, then index) places it.
    Scratch: cand [E] int, cv [E], gi [G] int, gv [G].

    sel must hold no NaN (the caller maps NaN to -inf as it writes sel: _moe_layer), ±inf allowed: then
    (value, index) is a total order and the k slots are always filled. As a second guard every slot is first set
    to an index in range (k <= E), so that even a NaN let through can never make a gather read out of bounds."""
    E = sel.shape[0]
    G = gmax.shape[0]
    for j in range(k):
        idx[j] = j
    R = E // G
    S = sel[:R * G].reshape(R, G)
    for g in range(G):
        gmax[g] = S[0, g] if R > 0 else -np.inf
    for r in range(1, R):
        for g in range(G):
            gmax[g] = max(gmax[g], S[r, g])
    for g in range(E - R * G):
        gmax[g] = max(gmax[g], sel[R * G + g])
    Q = G // k
    tau0 = np.inf
    for q in range(k):
        m = gmax[q]
        for u in range(1, Q):
            m = max(m, gmax[q + u * k])
        tau0 = min(tau0, m)
    ng = 0
    for g in range(G):
        gi[ng] = g
        gv[ng] = gmax[g]
        ng += gmax[g] >= tau0
    tau = np.inf
    for a in range(ng):
        v = gv[a]
        c = 0
        for b in range(ng):
            c += gv[b] > v
        tau = min(tau, v) if c < k else tau
    nk = 0
    for a in range(ng):
        gi[nk] = gi[a]
        nk += gv[a] >= tau
    nc = 0
    for a in range(nk):
        for e in range(gi[a], E, G):
            v = sel[e]
            cand[nc] = e
            cv[nc] = v
            nc += v >= tau
    for i in range(nc):
        e = cand[i]
        v = cv[i]
        r = 0
        for j in range(nc):
            w = cv[j]
            r += (w > v) | ((w == v) & (cand[j] < e))
        if r < k:
            idx[r] = e


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
def _dense_layer(x, gate_w, up_w, down_w, b1, b2, B):
    """Dense SiTU-GLU MLP (compute.moe.dense_mlp). B [T, I gate | I up | I act | D down]."""
    T = x.shape[0]
    I = gate_w.shape[1]
    _mm_into(x, gate_w, B, 0)
    _mm_into(x, up_w, B, I)
    for t in range(T):
        for i in range(I):
            g = float(B[t, i])
            u = float(B[t, I + i])
            B[t, 2 * I + i] = math.tanh(g / b1) * (1.0 / (1.0 + math.exp(-g))) * math.tanh(u / b2) * (b1 * b2)
    _mm_into(B[:, 2 * I:3 * I], down_w, B, 3 * I)


@njit
def pass_into(emb, mkind, mslot, fkind, fslot, norm_mix, norm_ffn, w_attn, w_mlp, w_out, final_norm, lm_head,
              block, Deps, nDeps, shift, fast,
              kW, kgbias, kconv, kgscale, konorm, ko, kVeps, kscale, kH, kKd, alpha_k, beta_k, ktail0, kS0, khas,
              mW, mqan, mcq, mqb, mkvan, mckv, mkvb, mo, msc, mH, ql, kl, r, nope, dv, mckv0, mkr0,
              eW, eexp, ebias, E, L, F, Fs, top_k, rsf, enorm, Leps, eup, esh2,
              dgate, dup, ddown, b1, b2,
              CB, Vb, Den, KB, KS, Ktail, MB, MSB, MSC, EB, Eidx, DB, FB):
    """One pass over every layer (compute.engine.ToyK3.forward's loop with FusedK3's kernels and
    BufferedAttnRes). mkind[li]: 0 KDA, 1 MLA; fkind[li]: 0 dense, 1 MoE; m/fslot[li]: the layer's row in the
    stacked weights and buffers of its kind. CB [NL, T, x D | xn D | x2 D | xn2 D | p D | mixer weights C |
    ffn weights C]; FB [T, mix D | weights C | norm D | logits]; per kind the buffers of its kernel."""
    NL = mkind.shape[0]
    T, D = emb.shape
    C = Vb.shape[1]
    pcur = np.empty((T, D), emb.dtype)
    pcur[:, :] = emb
    prefix = np.empty((T, D), emb.dtype)
    scr = _moe_scratch(emb, E, L, F, Fs, top_k, eexp.shape[2])
    n = 0
    for li in range(NL):
        cb = CB[li]
        x = cb[:, :D]
        xn = cb[:, D:2 * D]
        x2 = cb[:, 2 * D:3 * D]
        xn2 = cb[:, 3 * D:4 * D]
        pp = cb[:, 4 * D:5 * D]
        start = li % block == 0
        if n > 0:
            _attn_into(Vb, Den, n, pcur, w_attn[li], Deps, shift, x, cb[:, 5 * D:5 * D + C])
        else:
            x[:, :] = pcur
            if start:
                for t in range(T):
                    ss = 0.0
                    for i in range(D):
                        Vb[t, 0, i] = pcur[t, i]
                        ss += float(pcur[t, i]) * pcur[t, i]
                    Den[t, 0] = math.sqrt(ss + Deps)
        if start:
            n += 1
        else:
            prefix[:, :] = pcur
        _rms_into(x, norm_mix[li], nDeps, xn)
        s = mslot[li]
        if mkind[li] == 0:
            kb = KB[s]
            _kda_layer(xn, kW[s], kgbias[s], kconv[s], kgscale[s], konorm[s], kVeps, ko[s], ktail0[s], kS0[s], khas,
                       kH, kKd, kscale, alpha_k, beta_k, kb, KS[s], Ktail[s], fast)
            a = kb[:, kb.shape[1] - D:]
        else:
            mb = MB[s]
            _mla_layer(xn, mW[s], mqan[s], mcq, mqb[s], mkvan[s], mckv, mkvb[s], mo[s], mckv0[s], mkr0[s], mH, ql,
                       kl, r, nope, dv, msc, mb, MSB[s], MSC[s])
            a = mb[:, mb.shape[1] - D:]
        if start:
            prefix[:, :] = a
        else:
            prefix += a
        _attn_into(Vb, Den, n, prefix, w_mlp[li], Deps, shift, x2, cb[:, 5 * D + C:5 * D + 2 * C])
        _rms_into(x2, norm_ffn[li], nDeps, xn2)
        s = fslot[li]
        if fkind[li] == 1:
            eb = EB[s]
            _moe_layer(xn2, eW[s], eexp[s], ebias[s], E, L, F, Fs, top_k, rsf, enorm[s], Leps, eup[s], esh2[s], eb,
                       Eidx[s], fast, scr)
            f = eb[:, eb.shape[1] - D:]
        else:
            db = DB[s]
            _dense_layer(xn2, dgate[s], dup[s], ddown[s], b1, b2, db)
            f = db[:, db.shape[1] - D:]
        for t in range(T):
            for i in range(D):
                pp[t, i] = prefix[t, i] + f[t, i]
        pcur[:, :] = pp
    _attn_into(Vb, Den, n, pcur, w_out, Deps, shift, FB[:, :D], FB[:, D:D + C])
    _rms_into(FB[:, :D], final_norm, nDeps, FB[:, D + C:2 * D + C])
    _mm_into(FB[:, D + C:2 * D + C], lm_head, FB, 2 * D + C)
