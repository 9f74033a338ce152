"""The latent MoE of compute.ops.moe.latent_moe for many independent rows, compiled (numba, float64): what
compute.explain.rerun's batched re-runs spend most of their time on in numpy (the 896-way router's sigmoid and
top-k, and the gathered 16 experts, per row). Same formulas (K3's form: sigmoid router with a selection bias,
one group, latent down / RMSNorm / up, SiTU-GLU experts and shared experts); imported only after
compute.fused_nb.available() set numba's cache directory.

Speed (the row's cost was ~14 µs, most of it 896 scalar exp calls and a branchy top-k): exp is a branch-free
loop LLVM vectorises (`exp_into`: Cephes' exp, range reduction by ln 2, a 2/3 rational approximation, 2^n
through the exponent bits; within 1.5 ulp of numpy's), the top-k is the compiled pass's branch-free O(E) one
(group maxima bound the k-th largest, only the scores above the bound are ranked; the same k, the same order:
largest first, ties lower index first; 2.4 -> ~1 µs a row of 896), and the experts' exp / tanh run as one
vectorised loop over the k·F units. tanh from the same exp (Cephes' tanh: 1 − 2 / (exp(2y) + 1), a rational
approximation for |y| < 0.625). The router's sigmoid folds exp's rational form into one division
(`sigmoid_neg_into`; 896 float64 divisions a row are ~0.3 µs: 6.75 -> 6.5 µs a row, issue 39 item 8). Where a
row's ~6.5 µs go (measured, 2 cores under load): the router's 896 logits 0.8, their exp / sigmoid 1.3 (the
float64 exp is ~1.5 ns an element, vectorised), the top-k 1.7 (group maxima 0.6, the k-th largest of them 0.5,
candidates 0.4, ranking 0.2), the 16 experts and the shared ones 2.7."""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["moe_rows", "exp_into", "sigmoid_neg_into"]

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93145751953125e-1
_LN2_LO = 1.42860682030941723212e-6
_P0, _P1, _P2 = 1.26177193074810590878e-4, 3.02994407707441961300e-2, 9.99999999999999999910e-1
_Q0, _Q1, _Q2, _Q3 = 3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1, 2.0
_T0, _T1, _T2 = -9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3
_U0, _U1, _U2 = 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3
_HI, _LO = 709.0, -708.0  # exp(709) is finite; exp(-708) the smallest normal's neighbourhood (below: 0 is ~as good)

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def exp_into(x, out, bits):
    """out[:n] = exp(x[:n]) (n = len(x); bits: int64 scratch [n]); NaN in, NaN out; x > 709 gives exp(709)."""
    n = x.shape[0]
    for i in range(n):
        v = min(max(x[i], _LO), _HI)
        k = np.floor(v * _LOG2E + 0.5)
        r = v - k * _LN2_HI - k * _LN2_LO
        rr = r * r
        px = r * ((_P0 * rr + _P1) * rr + _P2)
        q = ((_Q0 * rr + _Q1) * rr + _Q2) * rr + _Q3
        out[i] = 1.0 + 2.0 * px / (q - px)
        bits[i] = (np.int64(np.int32(k)) + np.int64(1023)) << np.int64(52)  # via int32: AVX2 converts 4 at once
    pw = bits.view(np.float64)
    for i in range(n):
        out[i] = out[i] * pw[i] if x[i] == x[i] else x[i]


@_jit
def sigmoid_neg_into(v, out, num, bits):
    """out[:n] = 1 / (1 + exp(v[:n])) (num: float scratch [n], bits: int64 scratch [n]) with ONE division: exp's
    rational form 2^k (q + p) / (q − p) (exp_into's, the same range reduction and coefficients) folded into the
    sigmoid, (q − p) / ((q − p) + 2^k (q + p)) — exp_into and then 1 / (1 + e) take two, and float64 division
    is what a row of 896 spent most of its time on; v > 709 gives 1 / (1 + exp(709)) (~1e-308, as exp_into's clamp
    did), NaN in, NaN out."""
    n = v.shape[0]
    for i in range(n):
        w = min(max(v[i], _LO), _HI)
        k = np.floor(w * _LOG2E + 0.5)
        r = w - k * _LN2_HI - k * _LN2_LO
        rr = r * r
        px = r * ((_P0 * rr + _P1) * rr + _P2)
        q = ((_Q0 * rr + _Q1) * rr + _Q2) * rr + _Q3
        num[i] = q - px
        out[i] = q + px
        bits[i] = (np.int64(np.int32(k)) + np.int64(1023)) << np.int64(52)
    pw = bits.view(np.float64)
    for i in range(n):
        d = num[i]
        out[i] = d / (d + out[i] * pw[i]) if v[i] == v[i] else v[i]


@_jit
def _tanh(y, e2y):
    """tanh(y) given e2y = exp(2y): Cephes' rational approximation where |y| < 0.625 (where 1 − 2 / (e2y + 1)
    would lose relative precision), that identity elsewhere."""
    z = y * y
    small = y + y * z * ((_T0 * z + _T1) * z + _T2) / (((z + _U0) * z + _U1) * z + _U2)
    return small if abs(y) < 0.625 else 1.0 - 2.0 / (e2y + 1.0)


@_jit
def _top_k(sel, k, gmax, cand, cv, gi, gv, top_i):
    """top_i[:k] = the indices of the k largest of sel (no NaN), largest first, ties lower index first, in O(E) and
    nearly branch-free (compute.compiled._fused_nb_math.topk's method, kept here: numba's cache of moe_rows would not see a
    change there). The elements fall into G = len(gmax) groups e mod G (G a multiple of k): the smallest of k
    disjoint sets of group maxima bounds the k-th largest from below (tau0); the k-th largest group maximum tau is a
    tighter bound; only elements >= tau in groups whose maximum is >= tau are ranked. Scratch: cand [E] int, cv [E],
    gi [G] int, gv [G]."""
    E = sel.shape[0]
    G = gmax.shape[0]
    for j in range(k):
        top_i[j] = j
    R = E // G
    G8 = G - G % 8 if R > 0 else 0
    for g0 in range(0, G8, 8):  # eight groups' maxima in locals (registers)
        m0, m1, m2, m3 = sel[g0], sel[g0 + 1], sel[g0 + 2], sel[g0 + 3]
        m4, m5, m6, m7 = sel[g0 + 4], sel[g0 + 5], sel[g0 + 6], sel[g0 + 7]
        for r in range(1, R):
            b = r * G + g0
            m0, m1, m2, m3 = max(m0, sel[b]), max(m1, sel[b + 1]), max(m2, sel[b + 2]), max(m3, sel[b + 3])
            m4, m5, m6, m7 = max(m4, sel[b + 4]), max(m5, sel[b + 5]), max(m6, sel[b + 6]), max(m7, sel[b + 7])
        gmax[g0], gmax[g0 + 1], gmax[g0 + 2], gmax[g0 + 3] = m0, m1, m2, m3
        gmax[g0 + 4], gmax[g0 + 5], gmax[g0 + 6], gmax[g0 + 7] = m4, m5, m6, m7
    for g in range(G8, G):
        m = -np.inf
        for r in range(R):
            m = max(m, sel[r * G + g])
        gmax[g] = m
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
            top_i[r] = e


@_jit
def moe_rows(x, router, bias, down, w13, w2, norm, up, sh13, sh2, k, rsf, b1, b2, eps, out):
    """out[n] = latent_moe(x[n]) for x [N, D] (RMSNorm'd FFN inputs); weights as compute.ops.moe.latent_moe's."""
    N, D = x.shape
    E = router.shape[1]
    Lat = down.shape[1]
    F = w13.shape[2] // 2
    Fs = sh2.shape[0]
    s = np.empty(E)
    sg = np.empty(E)
    sel = np.empty(E)
    bits = np.empty(max(E, 3 * k * F, 3 * Fs), np.int64)
    top_i = np.empty(k, np.int64)
    G = max(64, k) // k * k  # the top-k's groups: a multiple of k
    gmax, gv, gi = np.empty(G), np.empty(G), np.empty(G, np.int64)
    cand, cv = np.empty(E, np.int64), np.empty(E)
    z = np.empty(Lat)
    mix = np.empty(Lat)
    wts = np.empty(k)
    gu = np.empty(3 * k * F)  # per unit (expert j, f): -g, 2g/b1, 2u/b2 -> their exp
    eg = np.empty(3 * k * F)
    sgu = np.empty(3 * Fs)
    seg = np.empty(3 * Fs)
    for n in range(N):
        if D == 8:  # the toy's width: a logit's eight products in one expression, in the loop's order (from 0.0,
            x0, x1, x2, x3 = x[n, 0], x[n, 1], x[n, 2], x[n, 3]  # the same bits), one pass over s and `router`
            x4, x5, x6, x7 = x[n, 4], x[n, 5], x[n, 6], x[n, 7]
            for e in range(E):
                s[e] = -((((((((0.0 + x0 * router[0, e]) + x1 * router[1, e]) + x2 * router[2, e])
                             + x3 * router[3, e]) + x4 * router[4, e]) + x5 * router[5, e]) + x6 * router[6, e])
                         + x7 * router[7, e])
        else:
            for e in range(E):
                s[e] = 0.0
            for d in range(D):  # the router's logits, contiguous rows of `router`
                xd = x[n, d]
                for e in range(E):
                    s[e] += xd * router[d, e]
            for e in range(E):
                s[e] = -s[e]
        sigmoid_neg_into(s, sg, sel, bits)  # the router's sigmoid scores (sel: scratch here)
        for e in range(E):
            v = sg[e] + bias[e]
            sel[e] = v if v == v else -np.inf  # NaN (damaged weights) counts as -inf, as in compute.ops.moe
        _top_k(sel, k, gmax, cand, cv, gi, gv, top_i)
        tot = 0.0
        for j in range(k):
            tot += sg[top_i[j]]
        for j in range(k):
            wts[j] = sg[top_i[j]] / (tot + 1e-20) * rsf
        for li in range(Lat):
            acc = 0.0
            for d in range(D):
                acc += x[n, d] * down[d, li]
            z[li] = acc
            mix[li] = 0.0
        for j in range(k):
            e = top_i[j]
            for f in range(F):
                g = 0.0
                u = 0.0
                for li in range(Lat):
                    g += z[li] * w13[e, li, f]
                    u += z[li] * w13[e, li, F + f]
                q = 3 * (j * F + f)
                gu[q] = -g
                gu[q + 1] = 2.0 * g / b1
                gu[q + 2] = 2.0 * u / b2
        exp_into(gu, eg, bits[:3 * k * F])
        for j in range(k):
            e = top_i[j]
            for f in range(F):
                q = 3 * (j * F + f)
                a = (_tanh(0.5 * gu[q + 1], eg[q + 1]) * (1.0 / (1.0 + eg[q]))
                     * _tanh(0.5 * gu[q + 2], eg[q + 2]) * (b1 * b2))
                for li in range(Lat):
                    mix[li] += wts[j] * a * w2[e, f, li]
        ss = 0.0
        for li in range(Lat):
            ss += mix[li] * mix[li]
        sc = 1.0 / np.sqrt(ss / Lat + eps)
        for d in range(D):
            acc = 0.0
            for li in range(Lat):
                acc += mix[li] * sc * norm[li] * up[li, d]
            out[n, d] = acc
        for f in range(Fs):
            g = 0.0
            u = 0.0
            for d in range(D):
                g += x[n, d] * sh13[d, f]
                u += x[n, d] * sh13[d, Fs + f]
            sgu[3 * f] = -g
            sgu[3 * f + 1] = 2.0 * g / b1
            sgu[3 * f + 2] = 2.0 * u / b2
        exp_into(sgu, seg, bits[:3 * Fs])
        for f in range(Fs):
            a = (_tanh(0.5 * sgu[3 * f + 1], seg[3 * f + 1]) * (1.0 / (1.0 + seg[3 * f]))
                 * _tanh(0.5 * sgu[3 * f + 2], seg[3 * f + 2]) * (b1 * b2))
            for d in range(D):
                out[n, d] += a * sh2[f, d]
