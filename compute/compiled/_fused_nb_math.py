"""The shared numeric loops of compute.compiled._fused_nb_kernels' layer kernels: the float32 sigmoid / tanh, the row
matmul, RMSNorm with pre-scaled weights, one Block-AttnRes mix and the O(E) top-k. Imported only through
compute.fused_nb (after NUMBA_CACHE_DIR is set); module-level functions, so that numba's on-disk cache
(cache=True) can store and reload them. numba's cache of a kernel does not notice a change in a function it
calls from another file: compute.fused_nb's readiness stamp covers this file, and a stale stamp clears the cache.
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
# zeros), which cannot change an order; NaN is mapped to -inf where the scores are written
# (compute.compiled._fused_nb_kernels._moe_layer).
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
def sigmoid32(z, s, bits):
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
def tanh32(h, n):
    """h[:n] = tanh(h[:n]) in place, float32; NaN in, NaN out."""
    for c in range(n):
        v = h[c]
        x = min(max(v, -_T_CLAMP), _T_CLAMP)
        x2 = x * x
        p = x * (_TA1 + x2 * (_TA3 + x2 * (_TA5 + x2 * (_TA7 + x2 * (_TA9 + x2 * (_TA11 + x2 * _TA13))))))
        q = _TB0 + x2 * (_TB2 + x2 * (_TB4 + x2 * _TB6))
        h[c] = v if not abs(v) >= _T_TINY else p / q  # NaN stays NaN, as numpy's (the clamp would hide it)


@njit
def row_mm(x, W, o):
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
def mm_into(x, W, B, c0):
    """B[:, c0:c0+m] = x [T, n] @ W [n, m], row by row (B: a C-contiguous [T, ...] buffer)."""
    m = W.shape[1]
    for t in range(x.shape[0]):
        row_mm(x[t], W, B[t][c0:c0 + m])


@njit
def rms_into(x, w2, c_eps, out):
    """RMSNorm with pre-scaled weights: out = x·w2 / sqrt(Σx² + n·eps) (compute.ops.norms' RMSNorm on compute.compiled.fused's
    √n-scaled weights)."""
    T, n = x.shape
    for t in range(T):
        ss = 0.0
        for i in range(n):
            ss += float(x[t, i]) * x[t, i]
        inv = 1.0 / math.sqrt(ss + c_eps)
        for i in range(n):
            out[t, i] = x[t, i] * w2[i] * inv


@njit
def attn_into(Vb, Den, n, partial, wq, Deps, shift, mix, wts):
    """One Block-AttnRes mix (compute.ops.attnres): write `partial` to slot n with its RMS denominator, softmax over
    the n+1 candidates of (V·wq)/den into wts[:, :n+1], mix into mix [T, D]."""
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


@njit_select
def topk(sel, k, gmax, cand, cv, gi, gv, idx):
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
    G8 = G - G % 8 if R > 0 else 0
    for g0 in range(0, G8, 8):  # eight groups' maxima in locals (kept in registers: 3x the speed of gmax[g])
        m0, m1, m2, m3 = sel[g0], sel[g0 + 1], sel[g0 + 2], sel[g0 + 3]
        m4, m5, m6, m7 = sel[g0 + 4], sel[g0 + 5], sel[g0 + 6], sel[g0 + 7]
        for r in range(1, R):
            b = r * G + g0
            m0, m1, m2, m3 = max(m0, sel[b]), max(m1, sel[b + 1]), max(m2, sel[b + 2]), max(m3, sel[b + 3])
            m4, m5, m6, m7 = max(m4, sel[b + 4]), max(m5, sel[b + 5]), max(m6, sel[b + 6]), max(m7, sel[b + 7])
        gmax[g0], gmax[g0 + 1], gmax[g0 + 2], gmax[g0 + 3] = m0, m1, m2, m3
        gmax[g0 + 4], gmax[g0 + 5], gmax[g0 + 6], gmax[g0 + 7] = m4, m5, m6, m7
    S = sel[:R * G].reshape(R, G)
    for g in range(G8, G):
        gmax[g] = S[0, g] if R > 0 else -np.inf
    for r in range(1, R):
        for g in range(G8, G):
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


@njit_select
def topk_rows(x, k, idx, tied):
    """idx [T, k] = the k largest of each row of x [T, E] (no NaN: callers map it to -inf; k < E), largest first
    (topk, row by row, ties lower index first); tied [T] = whether equal values make that row's answer depend on
    the tie rule: two of its k+1 largest are equal (in the order of the winners or at the k-th place)."""
    T, E = x.shape
    G = max(64, k + 1) // (k + 1) * (k + 1)
    gmax, gv = np.empty(G, x.dtype), np.empty(G, x.dtype)
    gi, cand = np.empty(G, np.int64), np.empty(E, np.int64)
    cv = np.empty(E, x.dtype)
    one = np.empty(k + 1, np.int64)
    for t in range(T):
        row = x[t]
        topk(row, k + 1, gmax, cand, cv, gi, gv, one)
        tie = False
        for j in range(k):
            tie |= row[one[j]] == row[one[j + 1]]
            idx[t, j] = one[j]
        tied[t] = tie


@njit_select
def kth_largest_cols(a, j, out):
    """out [n] = the (j+1)-th largest of each column of a [m, n] (j < m; no NaN), duplicates counted: the value
    np.partition(a, m - j - 1, 0)[m - j - 1] holds. One pass over the rows keeps each column's j+1 largest, sorted
    (j small: Quantile Balancing's q = m·k/n)."""
    m, n = a.shape
    top = np.full((j + 1, n), -np.inf, a.dtype)
    for r in range(m):
        for c in range(n):
            v = a[r, c]
            if v > top[j, c]:
                p = j
                while p > 0 and top[p - 1, c] < v:
                    top[p, c] = top[p - 1, c]
                    p -= 1
                top[p, c] = v
    for c in range(n):
        out[c] = top[j, c]
