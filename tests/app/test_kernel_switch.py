"""The engine worker starts on the numpy operators and switches to the compiled (numba) ones once a child process
has put them in numba's disk cache: the first trace never waits for a compile, and nothing is
compiled in the app's own threads."""
import logging
import threading

import pytest

import sys

from app.engine import kernel_upgrade, kernel_warmup, worker
from app.state import AppState
from app.engine.worker import EngineController
from compute.trace import Knobs

needs_numba = pytest.mark.skipif(not kernel_warmup.wanted(), reason="numba not installed (or K3_NO_NUMBA set)")


def _controller(qtbot, **kwargs):
    state = AppState()
    ctl = EngineController(state, max_new_tokens=2, device="cpu", **kwargs)
    ctl.start()
    qtbot.waitUntil(lambda: state.trace is not None, timeout=90000)
    return state, ctl


@needs_numba
def test_first_trace_on_numpy_then_compiled_kernels_built_in_the_engine_thread(qtbot, monkeypatch):
    monkeypatch.setattr(kernel_upgrade, "_warmed", False)  # the child runs, as on a fresh start
    builders = []
    from compute import engine as engine_mod

    real = engine_mod.ToyK3

    class Spy(real):
        def __init__(self, *args, **kwargs):
            builders.append((threading.get_ident(), kwargs.get("compiled")))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(engine_mod, "ToyK3", Spy)
    changes = []
    state = AppState()
    ctl = EngineController(state, max_new_tokens=2, device="cpu")
    ctl.kernels_changed.connect(changes.append)
    first = []
    ctl.trace_published.connect(lambda _t, _s: first.append(ctl.engine.model.compiled) if not first else None)
    ctl.start()
    try:
        qtbot.waitUntil(lambda: state.trace is not None, timeout=90000)
        assert first == [False]  # the first trace came from the numpy operators
        qtbot.waitUntil(lambda: ctl.kernels_settled, timeout=120000)
        assert ctl.kernels == "compiled" and ctl.engine.model.compiled
        assert changes == ["warming", "compiled"]
        ui = threading.get_ident()
        assert builders and all(tid != ui for tid, _ in builders)  # every engine was built in the engine thread
        assert [c for _, c in builders] == [False, True]
        state.request_knobs(alpha=0.4)  # and it runs: the next trace comes from the compiled engine
        qtbot.waitUntil(lambda: state.trace.knobs.alpha == 0.4, timeout=60000)
        assert ctl.engine.model.compiled
        kda = state.trace.passes[0].layers[1].tensors["kda.alpha"]
        assert kda == pytest.approx(0.4)
    finally:
        ctl.stop()


@needs_numba
def test_model_switches_after_the_upgrade_keep_the_compiled_kernels(qtbot):
    state, ctl = _controller(qtbot)
    try:
        qtbot.waitUntil(lambda: ctl.kernels_settled, timeout=120000)
        assert ctl.kernels == "compiled"
        ctl.request_weights("random")
        qtbot.waitUntil(lambda: state.trace.weights_name == "random" and not ctl.busy, timeout=60000)
        assert ctl.engine.model.compiled
    finally:
        ctl.stop()


def test_without_numba_the_numpy_kernels_stay_and_no_child_starts(qtbot, monkeypatch):
    monkeypatch.setenv("K3_NO_NUMBA", "1")
    monkeypatch.setattr(kernel_upgrade, "_warmed", False)
    state, ctl = _controller(qtbot)
    try:
        assert ctl.kernels_settled and ctl.kernels == "numpy" and ctl.kernel_upgrade.child is None
        assert not ctl.engine.model.compiled
    finally:
        ctl.stop()


def test_compiled_false_keeps_the_numpy_kernels(qtbot, monkeypatch):
    monkeypatch.setattr(kernel_upgrade, "_warmed", False)
    state, ctl = _controller(qtbot, compiled=False)
    try:
        assert ctl.kernels_settled and ctl.kernel_upgrade.child is None and not ctl.engine.model.compiled
    finally:
        ctl.stop()


@needs_numba
def test_a_failed_warm_up_is_logged_and_the_numpy_kernels_stay(qtbot, monkeypatch, caplog):
    monkeypatch.setattr(kernel_upgrade, "_warmed", False)
    monkeypatch.setattr(kernel_warmup, "child_command", lambda: [sys.executable, "-m", "app.no_such_warmup_module"])
    with caplog.at_level(logging.WARNING, logger="app.engine.kernel_upgrade"):
        state, ctl = _controller(qtbot)
        try:
            qtbot.waitUntil(lambda: ctl.kernels_settled, timeout=60000)
            assert ctl.kernels == "numpy" and not ctl.engine.model.compiled
            state.request_knobs(alpha=0.6)  # the engine keeps working
            qtbot.waitUntil(lambda: state.trace.knobs == Knobs(alpha=0.6), timeout=60000)
        finally:
            ctl.stop()
    assert any("compiled kernels could not be prepared" in r.getMessage() and "no_such_warmup_module" in r.getMessage()
               for r in caplog.records)


@needs_numba
def test_kernels_compiled_by_the_child_are_checked_by_a_second_one(qtbot, monkeypatch, caplog, tmp_path):
    """A child that had to compile (exit 10) is run once more; when that one compiles too (numba's cache does not
    keep them), the engine never loads them (it would compile in the app's engine thread) and numpy stays."""
    monkeypatch.setattr(kernel_upgrade, "_warmed", False)
    runs = tmp_path / "runs"
    code = f"import sys; open({str(runs)!r}, 'a').write('x'); sys.exit(10)"
    monkeypatch.setattr(kernel_warmup, "child_command", lambda: [sys.executable, "-c", code])
    with caplog.at_level(logging.WARNING, logger="app.engine.kernel_upgrade"):
        state, ctl = _controller(qtbot)
        try:
            qtbot.waitUntil(lambda: ctl.kernels_settled, timeout=60000)
            assert ctl.kernels == "numpy" and not ctl.engine.model.compiled
        finally:
            ctl.stop()
    assert runs.read_text() == "xx"  # two children, no third
    assert any("exit 10" in r.getMessage() for r in caplog.records)


@needs_numba
def test_a_child_that_compiled_and_a_second_that_found_the_cache_lead_to_the_compiled_kernels(qtbot, monkeypatch,
                                                                                             tmp_path):
    monkeypatch.setattr(kernel_upgrade, "_warmed", False)
    runs = tmp_path / "runs"
    code = (f"import os, sys; p = {str(runs)!r}; first = not os.path.exists(p); open(p, 'a').write('x'); "
            "sys.exit(10 if first else 0)")
    monkeypatch.setattr(kernel_warmup, "child_command", lambda: [sys.executable, "-c", code])
    state, ctl = _controller(qtbot)
    try:
        qtbot.waitUntil(lambda: ctl.kernels_settled, timeout=60000)
        assert ctl.kernels == "compiled" and runs.read_text() == "xx"
    finally:
        ctl.stop()


def test_auto_device_never_imports_torch_where_cuda_cannot_exist(monkeypatch):
    monkeypatch.setattr(worker, "CUDA_NODES", ("/nonexistent/nvidiactl",))
    monkeypatch.setattr(worker.sys, "platform", "linux")
    assert worker.engine_device("auto") == "cpu"
    assert worker.engine_device("cuda") == "cuda"  # asked for explicitly: tried (and falls back with a note)
    monkeypatch.setattr(worker, "CUDA_NODES", (__file__,))  # a node that exists: torch is asked
    assert worker.engine_device("auto") == "auto"
