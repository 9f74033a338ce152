"""The standalone bundle (`make bundle` -> dist/k3-explorer/) runs without Python or this checkout, and
its compiled kernels work: the warm-up child is the bundle's own executable (`--warm-kernels`), a frozen app has
no `python -m`. Skipped unless the bundle has been built (slow: a cold kernel compile is ~30 s of CPU).

The bundle is hard-linked (or copied) out of the checkout and run from an empty folder, with an environment that
names neither the checkout nor a venv, with a fresh kernel cache and settings folder."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "dist" / "k3-explorer"

pytestmark = [pytest.mark.skipif(not (BUNDLE / "k3-explorer").is_file(), reason="no bundle: run `make bundle` first"),
              pytest.mark.slow]  # the frozen app's own processes; tests/app/test_kernel_warmup.py checks its hand-over in-process


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bundle")
    where = tmp / "k3-explorer"
    try:
        shutil.copytree(BUNDLE, where, copy_function=os.link, symlinks=True)  # instant on one file system
    except OSError:
        shutil.rmtree(where, ignore_errors=True)
        shutil.copytree(BUNDLE, where, symlinks=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NUMBA_CACHE_DIR", "K3_NO_NUMBA")}
    env.update(PATH="/usr/bin:/bin", HOME=str(tmp / "home"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"))
    run_dir = tmp / "cwd"
    run_dir.mkdir()
    return where / "k3-explorer", env, run_dir


def _run(bundle, *args, timeout=600):
    exe, env, cwd = bundle
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_version_and_help(bundle):
    from app import __version__

    r = _run(bundle, "--version")
    assert r.returncode == 0 and r.stdout.strip() == f"k3-explorer {__version__}", r.stderr
    r = _run(bundle, "export", "--help")
    assert r.returncode == 0 and "--animate" in r.stdout


def test_warm_up_compiles_then_loads_and_the_export_runs_the_compiled_kernels(bundle):
    r = _run(bundle, "--warm-kernels")
    assert r.returncode == 0, r.stderr  # compiled now (a fresh cache) or loaded: success either way
    r = _run(bundle, "--warm-kernels")
    assert r.returncode == 0 and "loaded into" in r.stdout, r.stdout + r.stderr  # numba's cache works frozen
    out = bundle[2] / "frame.png"
    r = _run(bundle, "export", "--out", str(out), "--size", "640x360", "--verbose")
    assert r.returncode == 0, r.stderr
    assert "engine on numpy, compiled kernels" in r.stderr
    from PIL import Image

    with Image.open(out) as im:
        assert im.size == (640, 360)
        assert len(im.convert("RGB").resize((64, 36)).getcolors(4096)) > 20  # a drawn scene, not a blank frame


def test_the_window_starts_its_frozen_warm_up_child_and_switches_to_compiled_kernels(bundle):
    exe, env, cwd = bundle
    proc = subprocess.Popen([str(exe), "--verbose", "--settings", str(cwd / "k3.ini")], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 300
        for line in proc.stderr:
            lines.append(line)
            if "compiled kernels loaded" in line or "numpy operators run" in line or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGTERM)  # closes the window as its close button does
        _, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = "".join(lines)
    assert "compiled kernels loaded" in log, log + rest
    assert proc.returncode == 143, rest
