"""Block Attention Residuals: the operator by hand and the bookkeeping of §4 over 93 layers."""
import math

import numpy as np
import torch

from compute.ops.attnres import BlockAttnRes, attn_res, attn_res_weights


def test_attn_res_by_hand():
    p = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    R = torch.tensor([[[3.0, -1.0]], [[0.0, 4.0]]], dtype=torch.float64)
    w = torch.tensor([0.5, -1.0], dtype=torch.float64)
    cands = [np.array([3.0, -1.0]), np.array([0.0, 4.0]), np.array([1.0, 2.0])]
    s = [float((c / math.sqrt((c ** 2).mean() + 1e-6)) @ w.numpy()) for c in cands]
    e = [math.exp(x - max(s)) for x in s]
    a = [x / sum(e) for x in e]
    expect = sum(ai * c for ai, c in zip(a, cands))
    mixed, wts = attn_res_weights(p, R, w)
    np.testing.assert_allclose(mixed.numpy()[0], expect, rtol=1e-13)
    np.testing.assert_allclose(wts.numpy()[0], a, rtol=1e-13)
    np.testing.assert_allclose(attn_res(p, R, w).numpy(), mixed.numpy())


def test_scale_invariant_scores_mix_unnormalised():
    # scaling one candidate does not change its weight, but the mix uses the raw (scaled) vector
    g = torch.Generator().manual_seed(0)
    p, R, w = torch.randn(3, 4, generator=g), torch.randn(2, 3, 4, generator=g), torch.randn(4, generator=g)
    _, w1 = attn_res_weights(p, R, w)
    R2 = R.clone()
    R2[0] *= 10
    m2, w2 = attn_res_weights(p, R2, w)
    torch.testing.assert_close(w1, w2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(m2, torch.einsum("tc,ctd->td", w2, torch.cat([R2, p[None]])))


def test_bookkeeping_93_layers():
    D = 4
    emb = torch.randn(2, D, dtype=torch.float64)
    ar = BlockAttnRes(12)
    ar.start(emb)
    n_mixer, n_ffn = [], []
    w = torch.zeros(D, dtype=torch.float64)  # uniform weights: candidate counts still visible
    for layer in range(93):
        x, a = ar.before_mixer(layer, w)
        n_mixer.append(0 if a is None else a.shape[1])
        x2, b = ar.after_mixer(torch.ones_like(emb) * (layer + 1), w)
        n_ffn.append(b.shape[1])
        ar.after_ffn(torch.zeros_like(emb))
    h, wf = ar.final(w)
    assert len(ar.stored) == 8
    assert wf.shape == (2, 9)
    assert torch.equal(ar.stored[0], emb)
    assert n_mixer[0] == 0  # layer 1: nothing stored yet, x = embedding
    # block starts 0,12,...,84: R has len(starts so far) entries before the mixer mix (+1 candidate p)
    for layer in range(93):
        before = len([s for s in range(0, 93, 12) if s < layer])
        after = len([s for s in range(0, 93, 12) if s <= layer])
        if layer:
            assert n_mixer[layer] == before + 1
        assert n_ffn[layer] == after + 1
    # the stored block b_i is the partial sum at the start of layer 12·i: sum of mixer outputs of block i-1
    # (mixers here output layer+1, FFNs 0): b1 = 1+2+...+12
    assert ar.stored[1][0, 0].item() == sum(range(1, 13))
    assert ar.stored[7][0, 0].item() == sum(range(73, 85))
    # final p = partial sum of the last block (layers 85..93)
    assert ar.p[0, 0].item() == sum(range(85, 94))
