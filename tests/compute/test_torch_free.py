"""The CPU path needs no torch: `pip install .` leaves torch out, so the engine's oracle API
(ToyK3(seed, device), run, resample, the Trace fields), the app's import path and a headless export must work
where `import torch` fails. Each test runs a fresh Python whose meta path refuses torch (as a venv without it
would), and checks that nothing imported torch behind its back."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

BLOCK_TORCH = textwrap.dedent("""
    import importlib.abc, sys

    class _NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError(f"No module named {name!r} (blocked: a venv without torch)")

    sys.meta_path.insert(0, _NoTorch())
""")


def run_without_torch(code: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    script = BLOCK_TORCH + textwrap.dedent(code) + "\nassert 'torch' not in sys.modules, 'torch was imported'\n"
    return subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _ok(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_the_blocker_really_blocks_torch():
    r = run_without_torch("import torch")
    assert r.returncode != 0 and "blocked" in r.stderr


ORACLE = """
import json
import numpy as np
from compute.engine import ToyK3
from compute.trace import Knobs

out = {}
for weights in ("trained", "random"):
    m = ToyK3(seed=0, device=sys.argv[1], weights=weights)
    tr = m.run("로봇이 컵을", max_new_tokens=3, knobs=Knobs(temperature=0.8, sample_seed=2))
    tr2 = m.resample(tr, Knobs(temperature=0.8, top_p=0.5, sample_seed=2))
    tr3 = m.resample(tr, Knobs(temperature=3.0, sample_seed=5))  # may change a token: layers re-run
    kn = Knobs(alpha=0.5, beta=0.3, expert_bias={3: 1.0}, temperature=0.0)
    tr4 = m.resample(tr, kn)  # other knobs: runs afresh
    ps = tr.passes[0]
    out[weights] = {
        "name": m.weights_name, "device": tr.device, "backend": m.backend, "weights_name": tr.weights_name,
        "tokens": [list(t) for t in tr.tokens], "tokens2": [list(t) for t in tr2.tokens],
        "tokens3": [list(t) for t in tr3.tokens], "tokens4": [list(t) for t in tr4.tokens],
        "n_passes": [len(t.passes) for t in (tr, tr2, tr3, tr4)], "prompt_len": tr.prompt_len,
        "layers": len(ps.layers), "kinds": [p.kind for p in tr.passes],
        "residual": ps.layers[-1].tensors["residual"].tolist(),
        "logits": ps.final["lm_head"][-1].tolist(), "probs_sum": float(tr2.passes[-1].final["probs"].sum()),
        "finite": all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for p in tr.passes for lt in p.layers
                      for k, v in lt.tensors.items() if v is not None and k != "mla.scores"),
        "weights_keys": sorted(tr.weights[0]), "global_keys": sorted(tr.weights_global),
        "vocab": len(tr.vocab), "config": tr.config_name,
    }
print(json.dumps(out))
"""


def test_oracle_api_runs_without_torch():
    res = json.loads(_ok(run_without_torch(ORACLE, "cpu")))
    for weights in ("trained", "random"):
        r = res[weights]
        assert r["name"] == r["weights_name"] == weights and r["device"] == "cpu" and r["backend"] == "numpy"
        assert r["layers"] == 93 and r["kinds"] == ["prefill", "decode", "decode"] and r["n_passes"] == [3] * 4
        assert len(r["tokens"]) == r["prompt_len"] + 3 and r["tokens2"][:r["prompt_len"]] == r["tokens"][:r["prompt_len"]]
        assert r["finite"] and abs(r["probs_sum"] - 1) < 1e-9 and r["config"] == "kimi-k3"
        assert r["weights_keys"] and r["global_keys"] == ["embedding", "lm_head"]
    assert res["trained"]["logits"] != res["random"]["logits"]


def test_auto_device_without_torch_is_the_cpu():
    res = json.loads(_ok(run_without_torch(ORACLE, "auto")))
    assert res["random"]["device"] == "cpu"


def test_cuda_without_torch_says_how_to_install_it():
    r = run_without_torch("""
from compute.engine import ToyK3
for kw in ({"device": "cuda"}, {"device": "cpu", "backend": "torch"}):
    try:
        ToyK3(**kw)
    except ImportError as e:
        print(str(e))
    else:
        raise SystemExit("no error")
""")
    lines = _ok(r).splitlines()
    assert len(lines) == 2 and all("PyTorch" in ln and "pip install torch" in ln and "'.[cuda]'" in ln
                                       for ln in lines), lines


def test_same_numbers_with_and_without_torch_installed():
    """The CPU path computes the same trace whether or not torch is importable (torch is never used there)."""
    torch = pytest.importorskip("torch")
    del torch
    free = json.loads(_ok(run_without_torch(ORACLE, "cpu")))
    from compute.engine import ToyK3
    from compute.trace import Knobs

    m = ToyK3(seed=0, device="cpu", weights="random")
    tr = m.run("로봇이 컵을", max_new_tokens=3, knobs=Knobs(temperature=0.8, sample_seed=2))
    assert [list(t) for t in tr.tokens] == free["random"]["tokens"]
    np.testing.assert_array_equal(tr.passes[0].final["lm_head"][-1], free["random"]["logits"])


def test_other_configs_run_the_operators_on_numpy_without_torch():
    """Kimi Linear (no AttnRes, SwiGLU, softplus gate), K2 and DeepSeek-V3 (group-limited routing) are not
    fused: their blocks run the operator code on numpy — also without torch."""
    out = _ok(run_without_torch("""
from compute.config import available_configs, ModelConfig
from compute.engine import ToyK3
from compute.trace import Knobs
for name, path in available_configs().items():
    m = ToyK3(ModelConfig.from_json(path), device="cpu", weights="random")
    tr = m.run("the model", max_new_tokens=2, knobs=Knobs(temperature=0.0))
    tr2 = m.resample(tr, Knobs(temperature=0.9, top_p=0.7))
    print(name, len(tr.passes[0].layers), len(tr2.tokens) - tr2.prompt_len)
"""))
    rows = dict((ln.split()[0], ln.split()[1:]) for ln in out.splitlines())
    assert set(rows) >= {"kimi-k3", "kimi-linear-48b", "kimi-k2", "deepseek-v3"}
    assert all(v[1] == "2" for v in rows.values())


def test_the_app_imports_without_torch():
    _ok(run_without_torch("""
import app.__main__, app.cli, app.engine.worker, app.window.main_window, app.api, app.docks.experts.usage
import compute.engine, compute.teaching.qb_sim, compute.compiled.fused
from compute.teaching.qb_sim import QBSimulator
sim = QBSimulator()
sim.update()
"""))


def test_headless_export_without_torch(tmp_path):
    """The whole app path (CLI → engine → scene → PNG) in a venv without torch."""
    if not os.environ.get("DISPLAY"):
        pytest.skip("needs an X display (pytest-xvfb provides one)")
    out = tmp_path / "layer.png"
    r = run_without_torch("""
from app.__main__ import main
code = main(["export", "--size", "320x200", "--layer", "3", "--step", "6", "--prompt", "로봇이 컵을",
             "--out", sys.argv[1]])
assert code == 0, code
""", str(out))
    _ok(r)
    assert out.stat().st_size > 1000


def test_training_without_torch_says_how_to_install_in_one_line():
    """`python -m compute.training.train` in a venv without torch: one line naming the CPU wheels, exit 2
    (no ImportError traceback); `--score` still works (it runs on the numpy engine)."""
    r = run_without_torch("from compute.training import train; sys.exit(train.main(['--steps', '1']))")
    assert r.returncode == 2, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "CPU" in lines[0] and "[train]" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
