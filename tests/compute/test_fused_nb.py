"""compute.fused_nb: the compiled (numba) pass equals the operators block by block in float64, keeps the trace's
keys, shapes and dtypes, honours the α/β/expert-bias knobs, and is only used when its disk cache is ready
(the app must never compile on its UI thread); the operators' layer loop stays the fallback."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from compute import fused_nb
from compute.config import ModelConfig, available_configs
from compute.engine import ToyK3
from compute.trace import Knobs
from tests.compute.trace_pairs import layer_tensor_pairs

ROOT = Path(__file__).resolve().parents[2]
needs_numba = pytest.mark.skipif(not fused_nb.available(), reason="numba not installed (or K3_NO_NUMBA set)")
PROMPT = "Kimi K3 reads the next token"
LONG = "로봇이 컵을 집었다. 로봇이 컵을 테이블에 놓았다. " * 3  # more than 32 tokens (numpy: chunked KDA)


@pytest.fixture(scope="module")
def nb64():
    m = ToyK3(device="cpu", dtype="float64", backend="numpy", compiled=True)
    assert m.compiled
    return m


@pytest.fixture(scope="module")
def ops64():
    return ToyK3(device="cpu", dtype="float64", kernels="operators")


@pytest.fixture(scope="module")
def random64():
    """(compiled, operators) float64 engines with the seeded random weights."""
    nb = ToyK3(device="cpu", dtype="float64", weights="random", compiled=True)
    assert nb.compiled and nb.weights_name == "random"
    return nb, ToyK3(device="cpu", dtype="float64", weights="random", kernels="operators")


def _close(got, ref, what, rtol=1e-9):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    if ref.dtype.kind in "iu":
        np.testing.assert_array_equal(got, ref, err_msg=str(what))
        return
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=str(what))
    np.testing.assert_allclose(got[finite], ref[finite], rtol=rtol, atol=rtol * max(1.0, np.abs(ref[finite]).max()),
                               err_msg=str(what))


@needs_numba
@pytest.mark.parametrize("weights", ["trained", "random"])
@pytest.mark.parametrize("prompt,knobs", [(PROMPT, Knobs(temperature=0.0)),
                                          ("로봇이 컵을", Knobs(alpha=0.4, beta=0.6, expert_bias={7: 2.0, 300: -1.5})),
                                          (LONG, Knobs())])
def test_every_compiled_block_equals_its_operator_on_the_same_inputs(request, weights, prompt, knobs):
    """Prefill and one decode pass of the compiled kernel; each layer's mixer and FFN (KDA, gated NoPE MLA, dense
    MLP, latent MoE) re-run by the operators (compute.ops.kda / .mla / .moe) on the block's own input and cache from
    the trace: every tensor agrees, for the trained and the random weights."""
    nb64, ops64 = ((request.getfixturevalue("nb64"), request.getfixturevalue("ops64")) if weights == "trained"
                   else request.getfixturevalue("random64"))
    ids = [tid for _, tid in nb64.tokenizer.encode(prompt)]
    d0, c0, _ = nb64.forward(ids, 0, knobs, None)
    d1, c1, _ = nb64.forward([ids[-1]], len(ids), knobs, c0)
    bias_off = ops64._bias_offset(knobs)
    for p, (data, cin, cout) in enumerate(((d0, None, c0), (d1, c0, c1))):
        for li, t in enumerate(data["layers"]):
            ref: dict = {}
            a, nc = ops64._op_mixer(li, t["norm.mixer"], None if cin is None else cin[li], knobs, data["positions"], ref)
            f = ops64._op_ffn(li, t["norm.ffn"], bias_off, ref)
            for k, r in ref.items():
                _close(t[k], r, (p, li, k))
            _close(t["mixer.out"], a, (p, li, "mixer.out"))
            _close(t["ffn.out"], f, (p, li, "ffn.out"))
            assert cout[li].keys() == nc.keys()
            for k in nc:
                _close(cout[li][k], nc[k], (p, li, "cache", k))


@needs_numba
def test_alpha_beta_overrides_and_expert_bias_reach_the_compiled_pass(nb64):
    tr = nb64.run("로봇이 컵을", 2, Knobs(alpha=0.25, beta=0.75, expert_bias={5: 50.0}))
    for ps in tr.passes:
        for lt in ps.layers:
            if lt.mixer == "kda":
                assert np.all(lt.tensors["kda.alpha"] == 0.25) and np.all(lt.tensors["kda.beta"] == 0.75)
            if lt.ffn == "moe":
                assert np.all(lt.tensors["moe.topk_idx"][:, 0] == 5)  # the bias makes expert 5 the first choice
                assert not lt.tensors["moe.bias"].flags.writeable


@needs_numba
@pytest.mark.parametrize("knobs", [Knobs(temperature=0.0), Knobs(alpha=0.5, expert_bias={3: 1.0})])
def test_compiled_and_numpy_runs_agree_in_float64_also_after_a_resample(nb64, knobs):
    """Whole runs (prefill + decodes with the caches the compiled pass hands on), and a resample that changes the
    first sampled token (its caches rebuilt from the trace's tensors), on the compiled pass and the operators."""
    np64 = ToyK3(device="cpu", dtype="float64", backend="numpy", compiled=False)
    a, b = np64.run(PROMPT, 4, knobs), nb64.run(PROMPT, 4, knobs)
    assert a.tokens == b.tokens
    hot = Knobs(temperature=3.0, sample_seed=next(
        s for s in range(50) if np64.resample(a, Knobs(temperature=3.0, sample_seed=s)).passes[0].final["sampled"]
        != a.passes[0].final["sampled"]), alpha=knobs.alpha, expert_bias=knobs.expert_bias)
    ra, rb = np64.resample(a, hot), nb64.resample(b, hot)
    assert ra.tokens == rb.tokens and ra.tokens != a.tokens
    for pa, pb in zip(ra.passes, rb.passes):
        _close(pb.final["lm_head"], pa.final["lm_head"], "lm_head", rtol=1e-8)
        for la, lb in zip(pa.layers, pb.layers):
            for k in ("residual", "kda.state", "mla.c_kv", "moe.topk_idx"):
                if k in la.tensors:
                    _close(lb.tensors[k], la.tensors[k], (la.index, k), rtol=1e-8)


@needs_numba
def test_float32_trace_has_the_operator_paths_keys_shapes_and_dtypes_and_float_rounding_differences():
    """The app reads the trace: on the compiled path (float32, the app's dtype; vectorised exp/tanh) every pass
    and layer has the same keys, shapes, dtypes and read-only flags as on the operators, and the first layers'
    numbers differ by float32 rounding only (later ones may differ more: float32 is chaotic over 93 layers)."""
    nb = ToyK3(device="cpu", compiled=True)
    np32 = ToyK3(device="cpu", compiled=False)
    assert nb.compiled and not np32.compiled
    knobs = Knobs(temperature=0.0)
    a, b = np32.run(PROMPT, 3, knobs), nb.run(PROMPT, 3, knobs)
    for pa, pb in zip(a.passes, b.passes):
        assert pa.final.keys() == pb.final.keys()
        for k, v in pa.final.items():
            assert np.shape(v) == np.shape(pb.final[k]) and np.asarray(v).dtype == np.asarray(pb.final[k]).dtype, k
        for la, lb in zip(pa.layers, pb.layers):
            assert (la.mixer, la.ffn) == (lb.mixer, lb.ffn)
    for la, _, k, v, w in layer_tensor_pairs(a, b):
        assert (v.shape, v.dtype, v.flags.writeable) == (w.shape, w.dtype, w.flags.writeable), (la.index, k)
    for lt_a, lt_b in zip(a.passes[0].layers[:3], b.passes[0].layers[:3]):
        for k, v in lt_a.tensors.items():
            if v is not None and k != "mla.scores":
                _close(lt_b.tensors[k], v, (lt_a.index, k), rtol=2e-4)
    for lt in b.passes[0].layers[1:]:  # the fast float32 sigmoid: within a few float32 ulps
        logits = lt.tensors["moe.router.logits"].astype(np.float64)
        assert np.abs(lt.tensors["moe.router"] - 1 / (1 + np.exp(-logits))).max() < 3e-7


def _python(code: str, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=e, capture_output=True, text=True, timeout=600)


def test_default_engine_never_compiles_or_imports_numba_while_the_cache_is_cold(tmp_path):
    """ToyK3() (compiled=None) with an empty numba cache: the operators run and numba is not even imported,
    so a first start is never held up by a compile."""
    r = _python("import sys; from compute.engine import ToyK3; m = ToyK3(device='cpu'); "
                "m.run('Kimi K3', 1); print(m.compiled, 'numba' in sys.modules)", NUMBA_CACHE_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"]


def test_cache_ready_follows_the_stamp(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("K3_NO_NUMBA", raising=False)
    monkeypatch.setattr(fused_nb, "enabled", lambda: True)
    assert not fused_nb.cache_ready()
    (tmp_path / fused_nb._STAMP).write_text(json.dumps(dict(fused_nb._stamp(), dtypes=["float32"])))
    assert fused_nb.cache_ready() and fused_nb.cache_ready(np.float32)
    assert not fused_nb.cache_ready("float64")  # the tests' dtype: not warmed, so never compiled unasked
    stale = dict(fused_nb._stamp(), kernels=[1, 2], dtypes=["float32"])  # the kernel source changed since
    (tmp_path / fused_nb._STAMP).write_text(json.dumps(stale))
    assert not fused_nb.cache_ready()
    (tmp_path / fused_nb._STAMP).write_text("not json")
    assert not fused_nb.cache_ready()


def test_another_checkout_sharing_the_user_cache_keeps_our_stamp(monkeypatch, tmp_path):
    """Two checkouts on one machine (worktrees, a pip install beside a clone) share ~/.cache/k3-explorer/numba.
    Each one's warm-up writes its own readiness stamp: another's (other paths in it) never makes ours stale, so
    neither clears and recompiles the kernels (~25 s CPU) after the other ran."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fused_nb, "enabled", lambda: True)
    ours = dict(fused_nb._stamp(), dtypes=["float32"])
    (tmp_path / fused_nb._STAMP).write_text(json.dumps(ours))
    elsewhere = "/elsewhere/k3/compute/compiled"
    theirs = dict(ours, kernels=[[f"{elsewhere}/{p.name}", 1, 2] for p in fused_nb._SOURCES])
    assert fused_nb._stamp_name(elsewhere) != fused_nb._STAMP
    (tmp_path / fused_nb._stamp_name(elsewhere)).write_text(json.dumps(theirs))  # the other checkout's warm-up
    assert fused_nb.cache_ready()
    assert json.loads((tmp_path / fused_nb._STAMP).read_text()) == ours


def test_the_stamp_covers_every_kernel_source_and_a_stale_one_clears_their_cache(monkeypatch, tmp_path):
    """numba keys a cached kernel on its own file only: pass_into cached before a change in _fused_nb_math.py
    (or in the layout's constants) would load as it was. So the readiness stamp covers the three files, and
    warm_cache's first step clears the kernel modules' cache entries when the stamp is stale — and only then."""
    import shutil

    assert {p.name for p in fused_nb._SOURCES} == {"_fused_nb_kernels.py", "_fused_nb_math.py", "fused_nb_layout.py"}
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(fused_nb, "enabled", lambda: True)
    copies = []
    (tmp_path / "src").mkdir()
    for p in fused_nb._SOURCES:
        copies.append(tmp_path / "src" / p.name)
        shutil.copy2(p, copies[-1])
    monkeypatch.setattr(fused_nb, "_SOURCES", tuple(copies))
    import hashlib

    src = str(copies[0].parent.resolve())  # numba's folder for these sources (its _CacheLocator)
    sub = tmp_path / "cache" / f"{Path(src).name}_{hashlib.sha1(src.encode()).hexdigest()}"
    sub.mkdir(parents=True)
    ours = [sub / "_fused_nb_kernels.pass_into-300.py311.nbi", sub / "_fused_nb_math.topk-150.py311.1.nbc"]
    elsewhere = tmp_path / "cache" / "compute_0123"  # another checkout's kernels: not this stamp's business
    elsewhere.mkdir()
    other = [sub / "other.f-1.py311.nbi", elsewhere / "_fused_nb_math.topk-150.py311.1.nbc"]
    for f in ours + other:
        f.write_bytes(b"x")
    (tmp_path / "cache" / fused_nb._STAMP).write_text(json.dumps(dict(fused_nb._stamp(), dtypes=["float32"])))
    assert fused_nb.cache_ready()
    fused_nb._clear_stale()  # the stamp matches: a load, nothing removed
    assert all(f.exists() for f in ours + other)
    for name in ("_fused_nb_math.py", "fused_nb_layout.py"):
        f = tmp_path / "src" / name
        f.write_text(f.read_text() + "\n")  # a change in a file the kernels call or read
        assert not fused_nb.cache_ready(), name
        (tmp_path / "cache" / fused_nb._STAMP).write_text(json.dumps(dict(fused_nb._stamp(), dtypes=["float32"])))
    f = tmp_path / "src" / "_fused_nb_math.py"
    f.write_text(f.read_text() + "\n")
    fused_nb._clear_stale()
    assert not any(f.exists() for f in ours) and all(f.exists() for f in other)


def test_a_warm_up_never_clears_what_its_own_process_cached(monkeypatch, tmp_path):
    """On a fresh cache there is no stamp until warm_cache's end. The warm-up's engine loads (or compiles and
    caches) the kernels before warm_cache runs, so a clear inside warm_cache removed what that process had just
    written and every second warm-up compiled again. The clear runs only while the kernels are not imported."""
    import hashlib

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    src = os.path.dirname(os.path.abspath(fused_nb._SOURCES[0]))
    sub = tmp_path / "cache" / f"{os.path.basename(src)}_{hashlib.sha1(src.encode()).hexdigest()}"
    sub.mkdir(parents=True)
    ours = sub / "_fused_nb_kernels.pass_into-300.py311.nbi"
    ours.write_bytes(b"x")
    for name in ("_warm_pass", "_warm_select", "_warm_explain"):
        monkeypatch.setattr(fused_nb, name, lambda *a: "float32")
    monkeypatch.setattr(fused_nb, "available", lambda: True)
    monkeypatch.setattr(fused_nb, "enabled", lambda: True)
    monkeypatch.setattr(fused_nb, "_NB", object())  # this process has imported (and run) the kernels
    assert fused_nb.clear_stale() is False
    fused_nb.warm_cache()
    assert ours.exists() and (tmp_path / "cache" / fused_nb._STAMP).is_file()
    assert fused_nb.cache_ready()
    monkeypatch.setattr(fused_nb, "_NB", None)  # a new process, before its kernels load: a matching stamp keeps
    assert fused_nb.clear_stale() is True and ours.exists()
    (tmp_path / "cache" / fused_nb._STAMP).write_text("{}")  # a stale stamp: cleared before the kernels load
    assert fused_nb.clear_stale() is True and not ours.exists()


@needs_numba
def test_use_compiled_switches_an_engine_both_ways(ops64):
    m = ToyK3(device="cpu", dtype="float64", compiled=False)
    assert not m.compiled
    assert m.use_compiled() is True and m.compiled
    ref = ops64.run(PROMPT, 2, Knobs(temperature=0.0))
    got = m.run(PROMPT, 2, Knobs(temperature=0.0))
    assert got.tokens == ref.tokens
    _close(got.passes[-1].final["lm_head"], ref.passes[-1].final["lm_head"], "lm_head", rtol=1e-8)
    assert m.use_compiled(False) is False and m._pass is None
    assert m.run(PROMPT, 2, Knobs(temperature=0.0)).tokens == ref.tokens


@pytest.mark.parametrize("name", [n for n in available_configs() if n != "kimi-k3"])
def test_other_configs_fall_back_to_the_operators(name):
    m = ToyK3(config=ModelConfig.from_json(available_configs()[name]), device="cpu", weights="random",
              compiled=True)
    assert not m.compiled
    assert len(m.run(PROMPT, 1, Knobs(temperature=0.0)).passes) == 1


@needs_numba
def test_compiled_trace_layers_are_layer_traces_with_plain_dicts_and_hand_on_their_caches(nb64):
    """The run's LayerTraces cut their views on first access; what a reader gets is a LayerTrace with a plain
    dict, and the caches a compiled pass keeps equal those rebuilt from the trace's tensors."""
    from compute.trace import LayerTrace

    tr = nb64.run(PROMPT, 3, Knobs(temperature=0.0))
    lt = tr.passes[1].layers[40]
    assert isinstance(lt, LayerTrace) and type(lt.tensors) is dict and "40" in repr(lt)
    assert lt.tensors is tr.passes[1].layers[40].tensors  # cut once, then kept
    kept = nb64._caches_from_trace(tr)
    rebuilt = ToyK3(device="cpu", dtype="float64", compiled=False)._caches_from_trace(tr)
    assert len(kept) == len(rebuilt) == 93
    for a, b in zip(kept, rebuilt):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


@needs_numba
def test_a_kept_trace_does_not_keep_the_engines_stacked_weights():
    """Traces outlive engines (the app keeps a few after a weights switch): a compiled trace holds its pass
    buffers and their layout, not the CompiledPass with its copy of the weights."""
    import gc
    import weakref

    from compute.engine_weights import MEMO

    # a seed of its own: no other engine of this process shares these weights (engines of one weights set share
    # their compiled pass while the weights memo holds them, compute.engine_weights.MEMO)
    m = ToyK3(device="cpu", compiled=True, weights="random", seed=918_273)
    tr = m.run(PROMPT, 2, Knobs(temperature=0.0))
    ref = weakref.ref(m._pass)
    m.use_compiled(False)
    del m
    MEMO.clear()
    gc.collect()
    assert ref() is None
    assert tr.passes[1].layers[5].tensors["moe.topk_idx"].shape == (1, 16)
