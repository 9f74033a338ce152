"""app/engine/kernel_warmup.py, the one warm-up entry point of the compiled kernels: the command
line the engine worker spawns is frozen-aware (a PyInstaller bundle has no `python -m`: the child is the bundle's
executable with --warm-kernels, which app/__main__.py hands over before Qt), and the entry's exit statuses."""
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine import kernel_upgrade, kernel_warmup, worker
from app.state import AppState
from app.engine.worker import EngineController

ROOT = Path(__file__).resolve().parents[2]
needs_numba = pytest.mark.skipif(not kernel_warmup.wanted(), reason="numba not installed (or K3_NO_NUMBA set)")


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, **env), capture_output=True,
                          text=True, timeout=600)


def test_the_child_is_this_python_with_the_module_when_not_frozen(monkeypatch):
    monkeypatch.delattr(sys, "frozen", raising=False)
    assert kernel_warmup.child_command() == [sys.executable, "-m", "app.engine.kernel_warmup", "--report-compiled"]


def test_the_child_is_the_bundles_executable_with_the_flag_when_frozen(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/k3-explorer/k3-explorer")
    assert kernel_warmup.child_command() == ["/opt/k3-explorer/k3-explorer", "--warm-kernels", "--report-compiled"]
    assert "-m" not in kernel_warmup.child_command()  # what a frozen executable rejected ("unrecognized arguments")


def test_the_readiness_test_is_compute_fused_nb_enabled(monkeypatch):
    from compute import fused_nb

    monkeypatch.setattr(fused_nb, "enabled", lambda: False)
    assert kernel_warmup.wanted() is False
    monkeypatch.setattr(fused_nb, "enabled", lambda: True)
    assert kernel_warmup.wanted() is True
    assert not hasattr(worker, "numba_wanted") and not hasattr(fused_nb, "main")  # no second test, no second entry


@needs_numba
def test_a_frozen_worker_spawns_its_own_executable_with_the_flag(qtbot, monkeypatch, tmp_path, caplog):
    """The engine worker in a frozen app: the warm-up child is sys.executable --warm-kernels (here a stand-in
    executable that records its arguments and exits 3, 'numba unavailable': the numpy operators stay)."""
    record = tmp_path / "argv"
    fake = tmp_path / "k3-explorer"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{record}'\necho 'no numba here' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(kernel_upgrade, "_warmed", False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(fake))
    state = AppState()
    ctl = EngineController(state, max_new_tokens=2, device="cpu")
    with caplog.at_level(logging.WARNING, logger="app.engine.kernel_upgrade"):
        ctl.start()
        try:
            qtbot.waitUntil(lambda: state.trace is not None and ctl.kernels_settled, timeout=90000)
            assert ctl.kernels == "numpy" and not ctl.engine.model.compiled
        finally:
            ctl.stop()
    assert record.read_text().split() == ["--warm-kernels", "--report-compiled"]
    assert any("exit 3" in r.getMessage() and "no numba here" in r.getMessage() for r in caplog.records)


def test_the_entry_point_hands_the_flag_over_before_qt():
    """`k3-explorer --warm-kernels ...` runs the warm-up, not the window nor the export: no PySide6 imported."""
    r = _python("import sys; from app.__main__ import main; rc = main(['--warm-kernels', '--if-needed']); "
                "print(rc, 'PySide6' in sys.modules)", K3_NO_NUMBA="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "False"]
    assert r.stderr.strip().count("\n") == 0 and "K3_NO_NUMBA" in r.stderr


def test_no_numba_env_makes_the_warm_up_say_so_in_one_line():
    r = subprocess.run([sys.executable, "-m", "app.engine.kernel_warmup"], cwd=ROOT, env=dict(os.environ, K3_NO_NUMBA="1"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == kernel_warmup.EXIT_UNAVAILABLE
    assert r.stderr.strip().count("\n") == 0 and "K3_NO_NUMBA" in r.stderr


def test_the_warm_up_rejects_unknown_arguments():
    r = subprocess.run([sys.executable, "-m", "app.engine.kernel_warmup", "--now"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("usage:")


@pytest.mark.slow  # four child processes, a compile when the cache is cold; the readiness test below is in-process
@needs_numba
def test_the_warm_up_fills_the_cache_and_the_default_engine_then_runs_compiled():
    """The entry (`k3-explorer --warm-kernels`, and `make test` with --if-needed) exits 0 whether it compiled or
    loaded (a script under `set -e` reads success); a second run finds every kernel cached (0), and so does the
    app's own child (--report-compiled: 10 only when it compiled); a default ToyK3() in a fresh process then
    runs the compiled pass, and --if-needed has nothing left to do (numba not even imported)."""
    r = subprocess.run([sys.executable, "-m", "app.engine.kernel_warmup"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "app.engine.kernel_warmup", kernel_warmup.CHILD_FLAG], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "loaded into" in r.stdout
    r = _python("from compute import fused_nb; from compute.engine import ToyK3; ok = fused_nb.cache_ready(); "
                "m = ToyK3(device='cpu'); print(ok, m.compiled, m.run('Kimi K3', 2).generated_text != '')")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True"]
    r = _python("import sys; from app.engine import kernel_warmup; rc = kernel_warmup.main(['--if-needed']); "
                "print(rc, 'numba' in sys.modules)")
    assert r.stdout.split() == ["0", "False"], r.stderr


def test_a_moved_copy_of_the_kernels_is_not_ready(monkeypatch, tmp_path):
    """A bundle (or checkout) copied elsewhere keeps its files' mtimes, but numba's cache is keyed on the path:
    its readiness stamp must not match, or the export would compile in its own process (~30 s)."""
    import shutil

    from compute import fused_nb

    here = fused_nb._stamp()
    (tmp_path / "compute").mkdir()
    moved = tuple(tmp_path / "compute" / p.name for p in fused_nb._SOURCES)
    for src, dst in zip(fused_nb._SOURCES, moved):
        shutil.copy2(src, dst)  # same size and mtime
    monkeypatch.setattr(fused_nb, "_SOURCES", moved)
    assert fused_nb._stamp() != here
