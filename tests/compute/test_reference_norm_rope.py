"""RMSNorm and the rotary embedding (compute.ops.norms.rms_norm, compute.ops.mla.apply_rope) against PyTorch's and
Hugging Face's implementations, in float64.

References:
- torch.nn.functional.rms_norm (PyTorch, BSD-3-Clause): the library's own RMSNorm, called directly.
- LlamaRMSNorm.forward, Hugging Face transformers `src/transformers/models/llama/modeling_llama.py`
  (Apache-2.0), re-spelled below (transformers is not a dependency); its cast to float32 is left out, so it
  runs in float64 like the engine.
- rotate_half / apply_rotary_pos_emb and LlamaRotaryEmbedding's default inverse frequencies, same file, and
  apply_rotary_pos_emb_interleave of `src/transformers/models/deepseek_v3/modeling_deepseek_v3.py`
  (Apache-2.0): DeepSeek-V3 rotates consecutive pairs (x_2i, x_2i+1); Hugging Face reorders each vector to
  (evens | odds) and rotates halves. The engine rotates pairs in place, so its output, reordered the same way,
  must equal Hugging Face's.
"""
import numpy as np
import pytest
import torch

from compute.ops.mla import apply_rope
from compute.ops.norms import rms_norm


def hf_llama_rms_norm(hidden_states, weight, eps):
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + eps)
    return weight * hidden_states


def hf_rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_cos_sin(positions, dim, base):
    """LlamaRotaryEmbedding (rope_type "default"): inv_freq = 1 / base^(arange(0, dim, 2) / dim)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float64) / dim))
    freqs = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def hf_apply_rotary_pos_emb_interleave(q, cos, sin, unsqueeze_dim=1):
    """q [b, h, s, d]; cos, sin [b, s, d]."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    return (q * cos) + (hf_rotate_half(q) * sin)


def evens_then_odds(x):
    return torch.cat([x[..., 0::2], x[..., 1::2]], -1)


@pytest.mark.parametrize("shape,eps", [((5, 16), 1e-6), ((2, 3, 7), 1e-5), ((4, 1), 1e-6)])
def test_rms_norm_matches_torch_and_hugging_face(shape, eps):
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * 3
    w = torch.rand(shape[-1], generator=g, dtype=torch.float64) + 0.5
    ours = rms_norm(x, w, eps)
    torch.testing.assert_close(ours, torch.nn.functional.rms_norm(x, (shape[-1],), w, eps), rtol=1e-13, atol=1e-14)
    torch.testing.assert_close(ours, hf_llama_rms_norm(x, w, eps), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(rms_norm(x.numpy(), w.numpy(), eps), ours.numpy(), rtol=1e-13)  # numpy path too
    tiny = torch.full((1, shape[-1]), 1e-4, dtype=torch.float64)  # eps matters: inside the root, not added after
    torch.testing.assert_close(rms_norm(tiny, w, eps), torch.nn.functional.rms_norm(tiny, (shape[-1],), w, eps),
                               rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("rope,base", [(8, 10000.0), (64, 10000.0), (4, 50.0)])
def test_rotary_embedding_matches_hugging_face_deepseek_v3(rope, base):
    T, Hh = 9, 3
    g = torch.Generator().manual_seed(rope)
    q = torch.randn(T, Hh, rope, generator=g, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 3, 7, 100, 1000, 4095, 31])  # any absolute positions
    ours = apply_rope(q, positions, base)  # [T, H, rope]
    cos, sin = hf_cos_sin(positions, rope, base)
    theirs = hf_apply_rotary_pos_emb_interleave(q.permute(1, 0, 2)[None], cos[None], sin[None])[0]  # [H, T, rope]
    torch.testing.assert_close(evens_then_odds(ours).permute(1, 0, 2), theirs, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(apply_rope(q.numpy(), positions.numpy(), base), ours.numpy(), rtol=1e-12, atol=1e-12)
    # the shared one-head key of MLA ([T, rope], no head axis) is rotated the same way
    k = q[:, 0]
    torch.testing.assert_close(evens_then_odds(apply_rope(k, positions, base)), theirs[0], rtol=1e-12, atol=1e-12)
