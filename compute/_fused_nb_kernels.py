"""The numba kernels of compute.fused_nb (imported by fused_nb.available() only, after NUMBA_CACHE_DIR is set).
Module-level functions, so that numba's on-disk cache (cache=True) can store and reload them."""
import math

import numba
import numpy as np

njit = numba.njit(cache=True, nogil=True)


@njit
def mm(x, W):
    """x [T, n] @ W [n, m], row by row (the inner loop runs along W's contiguous rows)."""
    T, n = x.shape
    m = W.shape[1]
    z = np.zeros((T, m), x.dtype)
    for t in range(T):
        for i in range(n):
            xi = x[t, i]
            for j in range(m):
                z[t, j] += xi * W[i, j]
    return z

@njit
def rms(x, w2, c_eps):
    T, n = x.shape
    y = np.empty_like(x)
    for t in range(T):
        ss = 0.0
        for i in range(n):
            ss += float(x[t, i]) * x[t, i]
        inv = 1.0 / math.sqrt(ss + c_eps)
        for i in range(n):
            y[t, i] = x[t, i] * w2[i] * inv
    return y

@njit
def attn(Vb, Den, n, partial, wq, Deps, shift):
    """BufferedAttnRes._attn: write partial to slot n (and its RMS denominator), softmax over the n+1
    candidates of (V·wq)/den, mix. Returns (mix [T, D], weights [T, n+1])."""
    T, C, D = Vb.shape
    mix = np.empty((T, D), Vb.dtype)
    s = np.empty((T, n + 1), Vb.dtype)
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
            s[t, c] = sc
            if sc > mx:
                mx = sc
        tot = 0.0
        for c in range(n + 1):
            e = math.exp(float(s[t, c]) - mx) if shift else math.exp(float(s[t, c]))
            s[t, c] = e
            tot += float(s[t, c])
        for c in range(n + 1):
            s[t, c] = s[t, c] / tot
        for i in range(D):
            acc = 0.0
            for c in range(n + 1):
                acc += float(s[t, c]) * Vb[t, c, i]
            mix[t, i] = acc
    return mix, s

@njit
def moe(x, W, experts, bias, E, L, F, Fs, top_k, rsf, norm, Leps, up, shared2):
    T, D = x.shape
    dt = x.dtype
    zz = mm(x, W)
    s = np.empty((T, E), dt)
    idx = np.empty((T, top_k), np.int64)
    wts = np.empty((T, top_k), dt)
    ex = np.empty((T, top_k, L), dt)
    mix = np.empty((T, L), dt)
    r = np.empty((T, L), dt)
    upo = np.empty((T, up.shape[1]), dt)
    sh = np.empty((T, shared2.shape[1]), dt)
    y = np.empty((T, up.shape[1]), dt)
    n13 = L * 3 * F
    topv = np.empty(top_k, np.float64)
    h = np.empty(3 * F, x.dtype)
    act = np.empty(F, np.float64)
    hs = np.empty(3 * Fs, np.float64)
    for t in range(T):
        m = 0  # kept candidates, sorted by score descending (ties: lower expert first)
        for e in range(E):
            s[t, e] = 1.0 / (1.0 + np.exp(-zz[t, e]))
            sel = float(s[t, e]) + float(bias[e])
            if m == top_k and sel <= topv[m - 1]:
                continue
            p = m if m < top_k else top_k - 1
            while p > 0 and topv[p - 1] < sel:
                if p < top_k:
                    topv[p] = topv[p - 1]
                    idx[t, p] = idx[t, p - 1]
                p -= 1
            topv[p] = sel
            idx[t, p] = e
            if m < top_k:
                m += 1
        tot = 0.0
        for j in range(top_k):
            tot += float(s[t, idx[t, j]])
        tot += 1e-20
        for j in range(top_k):
            wts[t, j] = float(s[t, idx[t, j]]) / tot * rsf
        macc = np.zeros(L, np.float64)
        for j in range(top_k):
            G = experts[idx[t, j]]
            for c in range(3 * F):
                h[c] = 0.0
            for l in range(L):
                zl = zz[t, E + l]
                for c in range(3 * F):
                    h[c] += zl * G[l * 3 * F + c]
            for c in range(3 * F):
                h[c] = np.tanh(h[c])
            for f in range(F):
                act[f] = h[f] * (h[F + f] + 1.0) * h[2 * F + f]
            for l in range(L):
                acc = 0.0
                for f in range(F):
                    acc += act[f] * G[n13 + f * L + l]
                ex[t, j, l] = acc
                macc[l] += float(wts[t, j]) * ex[t, j, l]
        ss = 0.0
        for l in range(L):
            mix[t, l] = macc[l]
            ss += float(mix[t, l]) * mix[t, l]
        inv = 1.0 / math.sqrt(ss + Leps)
        for l in range(L):
            r[t, l] = mix[t, l] * norm[l] * inv
        for c in range(3 * Fs):
            hs[c] = math.tanh(float(zz[t, E + L + c]))
        for o in range(up.shape[1]):
            acc = 0.0
            for l in range(L):
                acc += float(r[t, l]) * up[l, o]
            upo[t, o] = acc
            acc = 0.0
            for f in range(Fs):
                acc += hs[f] * (hs[Fs + f] + 1.0) * hs[2 * Fs + f] * shared2[f, o]
            sh[t, o] = acc
            y[t, o] = upo[t, o] + sh[t, o]
    return zz, s, idx, wts, ex, mix, r, upo, sh, y

@njit
def kda(xn, W, gbias, conv, gscale, o_norm, Veps, o_w, xp0, S0, has_S0, H, Kd, scale):
    """KDA block (lower-bound gate, no alpha/beta override). xp0: the conv tail [Kc-1, 3HK] (zeros without
    a cache). Returns (z, xp, conv_out, qkn [T, 2HK], alpha [T, HK], beta [T, H], gate [T, HV], S, o, on, y)."""
    T, D = xn.shape
    dt = xn.dtype
    HK = H * Kd
    V = Kd
    nz = W.shape[1]
    Kc = conv.shape[1]
    z = mm(xn, W)
    P = Kc - 1
    xp = np.empty((P + T, 3 * HK), dt)
    xp[:P] = xp0
    xp[P:] = z[:, :3 * HK]
    cv = np.empty((T, 3 * HK), dt)
    qkn = np.empty((T, 2 * HK), dt)
    ng = nz - 4 * HK  # decay' | b | gate columns
    nbg = ng - HK
    al = np.empty((T, HK), dt)
    be = np.empty((T, H), dt)
    gate = np.empty((T, nbg - H), dt)
    for t in range(T):
        for c in range(3 * HK):
            acc = 0.0
            for j in range(Kc):
                acc += float(xp[t + j, c]) * conv[c, j]
            b = acc
            cv[t, c] = b * (math.tanh(b) + 1.0)
        for hh in range(2 * H):
            ss = 0.0
            for kk in range(Kd):
                v = float(cv[t, hh * Kd + kk])
                ss += v * v
            den = math.sqrt(ss + 1e-6)
            for kk in range(Kd):
                qkn[t, hh * Kd + kk] = cv[t, hh * Kd + kk] / den
        for c in range(ng):
            b = float(z[t, 4 * HK + c]) + gbias[c]
            gv = (math.tanh(b) + 1.0) * gscale[c]
            if c < HK:
                al[t, c] = math.exp(gv)
            elif c < HK + H:
                be[t, c - HK] = gv
            else:
                gate[t, c - HK - H] = gv
    S = np.zeros((H, Kd, V), dt)
    o = np.empty((T, H * V), dt)
    u = np.empty(V, np.float64)
    for t in range(T):
        for hh in range(H):
            bt = float(be[t, hh])
            if t == 0 and not has_S0:
                for kk in range(Kd):
                    for vv in range(V):
                        S[hh, kk, vv] = float(qkn[t, HK + hh * Kd + kk]) * (float(cv[t, 2 * HK + hh * V + vv]) * bt)
            else:
                for kk in range(Kd):
                    a = al[t, hh * Kd + kk]
                    for vv in range(V):
                        S[hh, kk, vv] = (S0[hh, kk, vv] if t == 0 else S[hh, kk, vv]) * a
                for vv in range(V):
                    acc = 0.0
                    for kk in range(Kd):
                        acc += float(qkn[t, HK + hh * Kd + kk]) * S[hh, kk, vv]
                    u[vv] = (float(cv[t, 2 * HK + hh * V + vv]) - acc) * bt
                for kk in range(Kd):
                    kv = float(qkn[t, HK + hh * Kd + kk])
                    for vv in range(V):
                        S[hh, kk, vv] = S[hh, kk, vv] + kv * u[vv]
            for vv in range(V):
                acc = 0.0
                for kk in range(Kd):
                    acc += float(qkn[t, hh * Kd + kk]) * scale * S[hh, kk, vv]
                o[t, hh * V + vv] = acc
    on = np.empty((T, H * V), dt)
    for t in range(T):
        for hh in range(H):
            ss = 0.0
            for vv in range(V):
                v = float(o[t, hh * V + vv])
                ss += v * v
            inv = 1.0 / math.sqrt(ss + Veps)
            for vv in range(V):
                on[t, hh * V + vv] = float(o[t, hh * V + vv]) * o_norm[vv] * inv * gate[t, hh * V + vv]
    y = mm(on, o_w)
    return z, xp, cv, qkn, al, be, gate, S, o, on, y

# The *_into kernels write every output into arrays the caller allocated (one [T, n] buffer per block whose
# column slices are the trace tensors): returning arrays from a compiled function costs ~0.7 µs each
# (boxing), a column view ~0.2 µs.

@njit
def attn_into(B, Vb, Den, n, partial, wq, Deps, shift):
    mix, s = attn(Vb, Den, n, partial, wq, Deps, shift)
    D = mix.shape[1]
    B[:, :D] = mix
    B[:, D:D + n + 1] = s

@njit
def kda_into(B, S_out, tail, xn, W, gbias, conv, gscale, o_norm, Veps, o_w, xp0, S0, has_S0, H, Kd, scale):
    """B [T, nz | 3HK conv | 2HK qk norm | HK alpha | H beta | gate | HV o | HV o_norm | D y]."""
    z, xp, cv, qkn, al, be, gate, S, o, on, y = kda(xn, W, gbias, conv, gscale, o_norm, Veps, o_w, xp0, S0,
                                                     has_S0, H, Kd, scale)
    T = xn.shape[0]
    c = 0
    for a in (z, cv, qkn, al, be, gate, o, on, y):
        B[:, c:c + a.shape[1]] = a
        c += a.shape[1]
    S_out[...] = S
    tail[...] = xp[T:]

@njit
def moe_into(B, idx_out, x, W, experts, bias, E, L, F, Fs, top_k, rsf, norm, Leps, up, shared2):
    """B [T, zz (E | L | 3Fs) | E router | k weights | k·L experts | L mix | L norm | D up | D shared | D y]."""
    zz, s, idx, wts, ex, mix, r, upo, sh, y = moe(x, W, experts, bias, E, L, F, Fs, top_k, rsf, norm, Leps,
                                                 up, shared2)
    T = x.shape[0]
    c = 0
    for a in (zz, s, wts, ex.reshape(T, -1), mix, r, upo, sh, y):
        B[:, c:c + a.shape[1]] = a
        c += a.shape[1]
    idx_out[...] = idx

@njit
def mla_into(B, SB, SC, xn, W, q_a_norm, c_q, q_b_w, kv_a_norm, c_kv_eps, kv_b_w, o_w, c_kv0, k_rope0, H, ql,
             kl, r, nope, dv, scale):
    """Gated NoPE MLA (FusedK3._mla's formulas). B [T, z | q_a_norm | q_b | o | gate | o_gated | y];
    SB [S, c_kv | k_rope | kv_b] (cache rows first); SC [2, H, T, S]: scores, softmax."""
    T = xn.shape[0]
    S = SB.shape[0]
    S0 = S - T
    z = mm(xn, W)
    nz = z.shape[1]
    B[:, :nz] = z
    qan = rms(z[:, :ql], q_a_norm, c_q)
    B[:, nz:nz + ql] = qan
    dq = nope + r
    q = mm(qan, q_b_w)  # [T, H·dq]
    c = nz + ql
    B[:, c:c + H * dq] = q
    c += H * dq
    SB[:S0, :kl] = c_kv0
    SB[:S0, kl:kl + r] = k_rope0
    SB[S0:, :kl] = z[:, ql:ql + kl]
    SB[S0:, kl:kl + r] = z[:, ql + kl:ql + kl + r]
    cn = rms(SB[:, :kl], kv_a_norm, c_kv_eps)
    kvb = mm(cn, kv_b_w)  # [S, H·(nope + dv)]
    SB[:, kl + r:] = kvb
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
                sc = acc * scale
                SC[0, h, t, j] = sc
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
            gt = (math.tanh(float(z[t, g0 + i])) + 1.0) * 0.5
            B[t, c + HV + i] = gt
            B[t, c + 2 * HV + i] = B[t, c + i] * B[t, c + HV + i]
    B[:, c + 3 * HV:] = mm(B[:, c + 2 * HV:c + 3 * HV], o_w)
