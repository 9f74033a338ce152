"""The latent MoE of compute.moe.latent_moe for many independent rows, compiled (numba, float64): what
compute.explain.rerun's batched re-runs spend most of their time on in numpy (the 896-way router's sigmoid and
top-k, and the gathered 16 experts, per row). Same formulas (K3's form: sigmoid router with a selection bias,
one group, latent down / RMSNorm / up, SiTU-GLU experts and shared experts); imported only after
compute.fused_nb.available() set numba's cache directory."""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["moe_rows"]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _situ(g, u, b1, b2):
    return np.tanh(g / b1) * (1.0 / (1.0 + np.exp(-g))) * np.tanh(u / b2) * (b1 * b2)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def moe_rows(x, router, bias, down, w13, w2, norm, up, sh13, sh2, k, rsf, b1, b2, eps, out):
    """out[n] = latent_moe(x[n]) for x [N, D] (RMSNorm'd FFN inputs); weights as compute.moe.latent_moe's."""
    N, D = x.shape
    E = router.shape[1]
    Lat = down.shape[1]
    F = w13.shape[2] // 2
    Fs = sh2.shape[0]
    s = np.empty(E)
    top_v = np.empty(k)
    top_i = np.empty(k, np.int64)
    z = np.empty(Lat)
    mix = np.empty(Lat)
    for n in range(N):
        for j in range(k):
            top_v[j] = -np.inf
            top_i[j] = -1
        for e in range(E):
            s[e] = 0.0
        for d in range(D):  # the router's logits, contiguous rows of `router`
            xd = x[n, d]
            for e in range(E):
                s[e] += xd * router[d, e]
        for e in range(E):
            s[e] = 1.0 / (1.0 + np.exp(-s[e]))
        for e in range(E):
            se = s[e]
            v = se + bias[e]
            if np.isnan(v):
                v = -np.inf
            if v > top_v[k - 1] or top_i[k - 1] < 0:  # insert into the sorted top-k (largest first)
                j = k - 1
                while j > 0 and (v > top_v[j - 1] or top_i[j - 1] < 0):
                    top_v[j] = top_v[j - 1]
                    top_i[j] = top_i[j - 1]
                    j -= 1
                top_v[j] = v
                top_i[j] = e
        tot = 0.0
        for j in range(k):
            tot += s[top_i[j]]
        for li in range(Lat):
            acc = 0.0
            for d in range(D):
                acc += x[n, d] * down[d, li]
            z[li] = acc
            mix[li] = 0.0
        for j in range(k):
            e = top_i[j]
            wj = s[e] / (tot + 1e-20) * rsf
            for f in range(F):
                g = 0.0
                u = 0.0
                for li in range(Lat):
                    g += z[li] * w13[e, li, f]
                    u += z[li] * w13[e, li, F + f]
                a = _situ(g, u, b1, b2)
                for li in range(Lat):
                    mix[li] += wj * a * w2[e, f, li]
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
            a = _situ(g, u, b1, b2)
            for d in range(D):
                out[n, d] += a * sh2[f, d]
