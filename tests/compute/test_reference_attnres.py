"""Block Attention Residuals (compute.ops.attnres) against the Attention Residuals paper's public pseudo-code, in
float64.

Reference: "Attention Residuals", Kimi Team (Moonshot AI), arXiv:2603.15031 (2026), Figure 2, reproduced as
"PyTorch-style pseudocode" in the README of its official repository github.com/MoonshotAI/Attention-Residuals
(the repository's licence could not be read from here; the pseudo-code's semantics are re-spelled below in
numpy, not copied):

    def block_attn_res(blocks, partial_block, proj, norm):
        V = stack(blocks + [partial_block]);  K = norm(V)            # RMSNorm with its own weight
        logits = einsum('d, n b t d -> n b t', proj.weight, K)
        return einsum('n b t, n b t d -> b t d', softmax(logits, over n), V)

    layer forward(blocks, hidden_states):
        partial_block = hidden_states
        h = block_attn_res(blocks, partial_block, attn_res_proj, attn_res_norm)
        if at a block boundary: blocks.append(partial_block); partial_block = None
        attn_out = attn(attn_norm(h))
        partial_block = attn_out if partial_block is None else partial_block + attn_out
        h = block_attn_res(blocks, partial_block, mlp_res_proj, mlp_res_norm)
        partial_block = partial_block + mlp(mlp_norm(h))

The paper counts its block size in sub-layers (boundary: layer_number % (block_size // 2) == 0); K3's
config.json counts layers (attn_res_block_size = 12, boundary layer_idx % 12 == 0), which is what the engine
takes. The final mix before the last norm uses its own norm and projection (output_attn_res_*).
The engine folds norm.weight ⊙ proj.weight into one pseudo-query w; the reference keeps them apart.
"""
import numpy as np
import pytest
import torch

from compute.ops.attnres import BlockAttnRes, attn_res_weights

EPS = 1e-6


def rms_norm(x, weight):
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + EPS) * weight


def block_attn_res(blocks, partial_block, proj_weight, norm_weight):
    V = np.stack(blocks + [partial_block])  # [N+1, T, D]
    K = rms_norm(V, norm_weight)
    logits = np.einsum("d,ntd->nt", proj_weight, K)
    a = np.exp(logits - logits.max(0))
    a = a / a.sum(0)
    return np.einsum("nt,ntd->td", a, V), a.T


class PaperModel:
    """The paper's layer loop over toy sub-layers: attn_l(h) = tanh(norm(h) A_l), mlp_l(h) = sin(norm(h) M_l)."""

    def __init__(self, D, L, block_layers, seed):
        rng = np.random.default_rng(seed)
        self.L, self.block_layers = L, block_layers
        self.A = rng.normal(0, 0.7, (L, D, D))
        self.M = rng.normal(0, 0.7, (L, D, D))
        self.attn_norm, self.mlp_norm = rng.uniform(0.5, 1.5, (L, D)), rng.uniform(0.5, 1.5, (L, D))
        # four vectors per AttnRes point: its RMSNorm weight and its projection (the pseudo-query)
        self.attn_res_norm, self.attn_res_proj = rng.uniform(0.5, 1.5, (L, D)), rng.normal(0, 1, (L, D))
        self.mlp_res_norm, self.mlp_res_proj = rng.uniform(0.5, 1.5, (L, D)), rng.normal(0, 1, (L, D))
        self.out_norm, self.out_proj = rng.uniform(0.5, 1.5, D), rng.normal(0, 1, D)

    def attn(self, l, h):
        return np.tanh(rms_norm(h, self.attn_norm[l]) @ self.A[l])

    def mlp(self, l, h):
        return np.sin(rms_norm(h, self.mlp_norm[l]) @ self.M[l])

    def forward(self, embedding):
        blocks, partial_block = [], embedding
        for l in range(self.L):
            h, _ = block_attn_res(blocks, partial_block, self.attn_res_proj[l], self.attn_res_norm[l])
            if l % self.block_layers == 0:
                blocks.append(partial_block)
                partial_block = None
            attn_out = self.attn(l, h)
            partial_block = attn_out if partial_block is None else partial_block + attn_out
            h, _ = block_attn_res(blocks, partial_block, self.mlp_res_proj[l], self.mlp_res_norm[l])
            partial_block = partial_block + self.mlp(l, h)
        h, weights = block_attn_res(blocks, partial_block, self.out_proj, self.out_norm)
        return h, weights, blocks


def engine_forward(model: PaperModel, embedding):
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    res = BlockAttnRes(block_size=model.block_layers, eps=EPS)
    res.start(t(embedding))
    for l in range(model.L):
        x, _ = res.before_mixer(l, t(model.attn_res_norm[l] * model.attn_res_proj[l]))
        a = t(model.attn(l, x.numpy()))
        x2, _ = res.after_mixer(a, t(model.mlp_res_norm[l] * model.mlp_res_proj[l]))
        res.after_ffn(t(model.mlp(l, x2.numpy())))
    h, weights = res.final(t(model.out_norm * model.out_proj))
    return h.numpy(), weights.numpy(), [b.numpy() for b in res.stored]


@pytest.mark.parametrize("L,block_layers", [(7, 3), (9, 4), (4, 1), (5, 12)])
def test_block_attn_res_matches_the_papers_pseudocode(L, block_layers):
    D, T = 6, 4
    model = PaperModel(D, L, block_layers, seed=L * 10 + block_layers)
    emb = np.random.default_rng(1).normal(0, 1, (T, D))
    want_h, want_w, want_blocks = model.forward(emb)
    got_h, got_w, got_blocks = engine_forward(model, emb)
    assert len(got_blocks) == len(want_blocks) == -(-L // block_layers)  # embedding + one per finished block
    for got, want in zip(got_blocks, want_blocks):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-12, atol=1e-13)


def test_one_mix_matches_block_attn_res():
    rng = np.random.default_rng(4)
    blocks = [rng.normal(0, s, (5, 8)) for s in (1.0, 3.0, 0.2)]
    partial = rng.normal(0, 2, (5, 8))
    norm_w, proj_w = rng.uniform(0.5, 1.5, 8), rng.normal(0, 1, 8)
    want, want_w = block_attn_res(blocks, partial, proj_w, norm_w)
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    got, got_w = attn_res_weights(t(partial), [t(b) for b in blocks], t(norm_w * proj_w), EPS)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got_w.numpy(), want_w, rtol=1e-12)
    got_np, _ = attn_res_weights(partial, np.stack(blocks), norm_w * proj_w, EPS)  # the numpy path
    np.testing.assert_allclose(got_np, want, rtol=1e-12, atol=1e-13)
