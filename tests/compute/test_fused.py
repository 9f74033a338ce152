"""The two CPU tiers: the operators' layer loop (the reference, and the fallback without numba) and
compute.fused_nb's compiled pass on compute.compiled.fused's pre-scaled plans agree on every trace tensor of whole runs in
float64, for both weight sets (tests/compute/test_fused_nb.py re-runs each compiled block by its operator)."""
import copy
import os
from pathlib import Path

import numpy as np
import pytest

from compute.compiled import fused, numba_setup
from compute import fused_nb
from compute.ops.attnres import attn_res_weights
from compute.config import ModelConfig, available_configs
from compute.engine import ToyK3
from compute.trace import Knobs
from tests.compute.trace_pairs import layer_tensor_pairs

needs_numba = pytest.mark.skipif(not fused_nb.available(), reason="numba not installed (or K3_NO_NUMBA set)")
PROMPT = "Kimi K3 reads the next token"


@pytest.fixture(scope="module", params=["trained", "random"])
def pair(request):
    """(operators, compiled) float64 engines of one weight set."""
    ops = ToyK3(device="cpu", dtype="float64", weights=request.param, kernels="operators")
    nb = ToyK3(device="cpu", dtype="float64", weights=request.param, compiled=fused_nb.available())
    assert not ops.compiled and ops._pass is None and nb.weights_name == ops.weights_name == request.param
    return ops, nb


def test_numba_cache_goes_to_the_user_cache_even_when_the_package_folder_is_writable(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert os.access(Path(fused_nb.__file__).parent, os.W_OK)  # this checkout (or a root-owned site-packages)
    numba_setup.cache_dir_setup()
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "k3-explorer" / "numba")
    assert (tmp_path / "k3-explorer" / "numba").is_dir()


def test_the_installed_namespace_has_a_numba_cache_of_its_own(monkeypatch, tmp_path):
    """numba pickles the kernels' record types by module name: the same files run as `compute` (a checkout) and as
    `k3_explorer.compute` (an editable install of it) must not share a cache; the installed `k3-explorer export`
    failed with "No module named 'compute'" loading the checkout's."""
    import importlib.util

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    spec = importlib.util.spec_from_file_location("k3_explorer.compute.compiled.numba_setup", numba_setup.__file__)
    installed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installed)
    installed.cache_dir_setup()
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "k3-explorer" / "numba" / "k3_explorer")


def test_no_numba_env_runs_the_operators(monkeypatch):
    monkeypatch.setenv("K3_NO_NUMBA", "1")
    assert not fused_nb.available()
    m = ToyK3(device="cpu", backend="numpy", compiled=True)
    assert not m.compiled and m._pass is None
    assert m.run("Kimi K3", 1, Knobs(temperature=0.0)).passes[0].final["lm_head"].shape[0] == 2


def test_plans_cover_k3_only():
    """Every block of K3 has a plan; the other configs (softplus KDA gate, rotary or ungated MLA, non-latent or
    group-limited MoE, plain residual) have none, so they never take the compiled pass."""
    configs = {n: ModelConfig.from_json(p) for n, p in available_configs().items()}
    assert fused.supported(configs["kimi-k3"]) and fused_nb.supported(configs["kimi-k3"])
    assert [n for n, c in configs.items() if fused.supported(c)] == ["kimi-k3"]


@needs_numba
@pytest.mark.parametrize("prompt,knobs", [(PROMPT, Knobs(temperature=0.0)),
                                          ("로봇이 컵을 집었다", Knobs(alpha=0.4, beta=0.6, expert_bias={7: 2.0}))])
def test_every_tensor_of_whole_runs_agrees_between_the_operators_and_the_compiled_pass(pair, prompt, knobs):
    """Prefill and decode passes with the caches each path hands on: every layer tensor (AttnRes weights and mixes,
    norms, KDA / MLA / dense MLP / latent MoE tensors, residual) and the logits agree in float64."""
    ops, nb = pair
    assert nb.compiled
    a, b = ops.run(prompt, 3, knobs), nb.run(prompt, 3, knobs)
    assert a.tokens == b.tokens
    seen = set()
    for la, _, k, ra, fb in layer_tensor_pairs(a, b):
        ra, fb = np.asarray(ra), np.asarray(fb)
        assert (ra.shape, ra.dtype) == (fb.shape, fb.dtype), (la.index, k)
        if k == "mla.scores":
            ra, fb = np.where(np.isinf(ra), 0, ra), np.where(np.isinf(fb), 0, fb)
        np.testing.assert_allclose(fb, ra, rtol=1e-7, atol=1e-8 * max(1.0, np.abs(ra).max()), err_msg=(la.index, k))
        seen.add(k.split(".")[0])
    assert seen >= {"attnres", "norm", "kda", "mla", "mlp", "moe", "mixer", "ffn", "residual"}
    for pa, pb in zip(a.passes, b.passes):
        for k in pa.final:
            if k != "sampled":
                np.testing.assert_allclose(pb.final[k], pa.final[k], rtol=1e-7, atol=1e-7, err_msg=k)


@needs_numba
@pytest.mark.parametrize("scale", [1.0, 400.0])
def test_attnres_mix_equals_operator_also_where_an_unshifted_softmax_would_overflow(pair, scale):
    """The compiled AttnRes may skip the softmax max-shift for speed; with pseudo-query weights scaled until
    exp(logit) overflows float64 (scale 400) the compiled pass must still equal the operator loop and stay finite."""
    ops, _ = pair
    big = copy.copy(ops)  # the same engine with scaled AttnRes pseudo-queries
    big.layers = [dict(w, w_attn=w["w_attn"] * scale, w_mlp=w["w_mlp"] * scale) for w in ops.layers]
    big.w_out = ops.w_out * scale
    ids = [tid for _, tid in ops.tokenizer.encode(PROMPT)]
    ref, _, logits_ref = big.forward(ids, 0, Knobs())
    big.kernels = "auto"
    assert big.use_compiled(True)
    got, _, logits_f = big.forward(ids, 0, Knobs())
    assert np.isfinite(logits_f).all()
    for li in (0, 11, 12, 13, 47, 92):
        for key in ("attnres.mixer", "attnres.mixer.out", "attnres.ffn", "attnres.ffn.out"):
            r, f = ref["layers"][li][key], got["layers"][li][key]
            if r is None:  # nothing to mix yet (the first layer's mixer input is the embedding)
                assert f is None, (li, key)
                continue
            r, f = np.asarray(r), np.asarray(f)
            np.testing.assert_allclose(f, r, rtol=1e-7, atol=1e-9 * max(1.0, np.abs(r).max()), err_msg=(li, key))
    np.testing.assert_allclose(logits_f, logits_ref, rtol=1e-6, atol=1e-6 * np.abs(logits_ref).max())


@pytest.mark.parametrize("path", ["operators", pytest.param("compiled", marks=needs_numba)])
def test_forward_attnres_weights_equal_attn_res_weights(pair, path):
    """Layer 20's AttnRes weights in a run equal compute.ops.attnres.attn_res_weights over the trace's stored residuals."""
    model = pair[path == "compiled"]
    tr = model.run(PROMPT, 1, Knobs(temperature=0.0))
    ps = tr.passes[0]
    bs = model.config.attn_res_block_size
    li = 20
    stored = [ps.embedding] + [ps.layers[j - 1].tensors["residual"] for j in range(bs, li + 1, bs)]
    mix, wts = attn_res_weights(ps.layers[li - 1].tensors["residual"], np.stack(stored), model.layers[li]["w_attn"])
    np.testing.assert_allclose(ps.layers[li].tensors["attnres.mixer"], wts, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ps.layers[li].tensors["attnres.mixer.out"], mix, rtol=1e-10, atol=1e-12)
