"""Gated MLA (compute.ops.mla.mla_layer) against DeepSeek-V3's public MLA semantics, in float64.

Reference: tests/compute/reference_dsv3_mla.py, a numpy re-spelling of deepseek-ai/DeepSeek-V3
`inference/model.py` class MLA (MIT licence), both of its attention paths ("naive": per-head K/V cache;
"absorb": the latent cache of kv_norm(c_kv) and the rotated k_pe), plus gated attention's output gate
(Qwen3-Next's `attn_output * sigmoid(gate)`, Hugging Face transformers, Apache-2.0). The weights are drawn in
DeepSeek-V3's nn.Linear layout [out, in] and handed to the engine transposed, in its fused layout.
"""
import numpy as np
import pytest
import torch

from compute.dims import OpArgs
from compute.ops.mla import mla_layer
from reference_dsv3_mla import DSV3MLA, rms_norm

D, H, QL, KL, NOPE, ROPE, V = 12, 3, 6, 5, 4, 4, 3


def _dsv3_weights(seed: int, gated: bool) -> dict:
    rng = np.random.default_rng(seed)
    w = {"wq_a": rng.normal(0, 0.5, (QL, D)), "q_norm": rng.uniform(0.5, 1.5, QL),
         "wq_b": rng.normal(0, 0.5, (H * (NOPE + ROPE), QL)), "wkv_a": rng.normal(0, 0.5, (KL + ROPE, D)),
         "kv_norm": rng.uniform(0.5, 1.5, KL), "wkv_b": rng.normal(0, 0.5, (H * (NOPE + V), KL)),
         "wo": rng.normal(0, 0.5, (D, H * V))}
    if gated:
        w["w_gate"] = rng.normal(0, 0.5, (H * V, D))
    return w


def _engine_weights(w: dict) -> dict:
    """The same weights in the engine's layout: x @ W, W_qa | W_kva (| W_g) fused into 'in'."""
    t = lambda a: torch.tensor(np.ascontiguousarray(a), dtype=torch.float64)  # noqa: E731
    fused = [w["wq_a"].T, w["wkv_a"].T] + ([w["w_gate"].T] if "w_gate" in w else [])
    return {"in": t(np.concatenate(fused, 1)), "q_a_norm": t(w["q_norm"]), "q_b": t(w["wq_b"].T),
            "kv_a_norm": t(w["kv_norm"]), "kv_b": t(w["wkv_b"].T), "o": t(w["wo"].T)}


def _run_engine(w, x, chunks, gated, rope_theta):
    """The engine over x in chunks (prefill, then decode steps), carrying its latent cache."""
    ew, cache, outs, start = _engine_weights(w), None, [], 0
    for n in chunks:
        xs = torch.tensor(x[start:start + n], dtype=torch.float64)
        args = OpArgs(mla_heads=H, nope=NOPE, rope=ROPE, v=V, kv_lora=KL, mla_gated=gated, rope_theta=rope_theta)
        y, tensors, cache = mla_layer(xs, ew, args, torch.arange(start, start + n), cache)
        outs.append(y.numpy())
        start += n
    return np.concatenate(outs), cache, tensors


def _run_reference(w, x, chunks, base, impl):
    """DeepSeek-V3's MLA over the same chunks (base None: K3's NoPE, nothing rotated)."""
    ref = DSV3MLA(w, H, NOPE, ROPE, V, KL, rotate=base is not None, base=base or 10000.0, impl=impl)
    outs, start = [], 0
    for n in chunks:
        outs.append(ref.forward(x[start:start + n], start))
        start += n
    return np.concatenate(outs), ref


@pytest.mark.parametrize("impl", ["naive", "absorb"])
@pytest.mark.parametrize("gated,rope_theta", [(True, None), (False, 10000.0), (True, 500.0)])
def test_mla_matches_deepseek_v3_prefill_and_decode(impl, gated, rope_theta):
    """K3's setting (gated, NoPE) and DeepSeek-V3's own (ungated, rotary), prefill of 5 then 3 decode steps."""
    rng = np.random.default_rng(11)
    w = _dsv3_weights(7, gated)
    x = rng.normal(0, 1, (8, D))
    chunks = (5, 1, 1, 1)
    got, _, _ = _run_engine(w, x, chunks, gated, rope_theta)
    want, _ = _run_reference(w, x, chunks, rope_theta, impl)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_the_latent_cache_is_deepseek_v3s_kv_and_pe_cache():
    """What the engine caches per token is DeepSeek-V3's absorbed-path cache: the latent c_kv (kv_norm applied
    when it is read: the same numbers as kv_cache) and the rotated shared k_pe — kv_lora + rope numbers per
    token, not H · (nope + rope + v)."""
    rng = np.random.default_rng(3)
    w = _dsv3_weights(5, True)
    x = rng.normal(0, 1, (6, D))
    _, cache, _ = _run_engine(w, x, (4, 1, 1), True, 10000.0)
    _, ref = _run_reference(w, x, (4, 1, 1), 10000.0, "absorb")
    np.testing.assert_allclose(rms_norm(cache["c_kv"].numpy(), w["kv_norm"]), np.array(ref.kv_cache),
                               rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(cache["k_rope"].numpy(), np.array(ref.pe_cache), rtol=1e-12, atol=1e-13)
    assert cache["c_kv"].shape[1] + cache["k_rope"].shape[1] == KL + ROPE < H * (NOPE + ROPE + V)


def test_the_gate_is_gated_attentions_sigmoid_on_the_concatenated_heads():
    """Gated minus ungated reference output = W_o ((σ(x W_gᵀ) − 1) ⊙ o): the engine's gate tensor is σ(x W_gᵀ)."""
    rng = np.random.default_rng(9)
    w = _dsv3_weights(2, True)
    x = rng.normal(0, 1, (4, D))
    _, _, tensors = _run_engine(w, x, (4,), True, None)
    np.testing.assert_allclose(tensors["mla.gate"].numpy(), 1 / (1 + np.exp(-(x @ w["w_gate"].T))), rtol=1e-13)
    np.testing.assert_allclose(tensors["mla.o_gated"].numpy(), tensors["mla.o"].numpy() * tensors["mla.gate"].numpy(),
                               rtol=1e-13)
