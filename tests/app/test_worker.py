"""Engine worker: off the UI thread, latest-value-wins coalescing, resample fast path, errors keep the trace."""
import threading

import pytest
from PySide6.QtCore import QThread

from app.state import AppState
from app.engine.worker import EngineController, only_sampling_changed
from compute.trace import Knobs


@pytest.fixture
def engine(qtbot):
    state = AppState()
    ctl = EngineController(state, max_new_tokens=2, device="cpu")
    published = []
    ctl.trace_published.connect(lambda trace, _s: published.append(trace))
    ctl.start()
    qtbot.waitUntil(lambda: state.trace is not None, timeout=90000)
    qtbot.waitUntil(lambda: ctl.kernels_settled, timeout=90000)  # the model is not swapped under the tests' spies
    yield state, ctl, published
    ctl.stop()


def test_only_sampling_changed():
    base = Knobs()
    assert only_sampling_changed(base, Knobs(temperature=0.3, top_p=0.8, sample_seed=4))
    assert not only_sampling_changed(base, Knobs(alpha=0.5))
    assert not only_sampling_changed(base, Knobs(expert_bias={17: 1.0}))


def test_engine_runs_in_its_own_thread(engine, qtbot):
    state, ctl, _ = engine
    threads = []
    model = ctl.engine.model
    original = model.run

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return original(*args, **kwargs)

    model.run = spy
    state.request_knobs(alpha=0.5)
    qtbot.waitUntil(lambda: state.trace.knobs.alpha == 0.5, timeout=60000)
    assert threads and threads[0] != threading.get_ident()
    assert ctl.thread is not QThread.currentThread()


def test_rapid_changes_are_coalesced_latest_wins(engine, qtbot):
    state, ctl, published = engine
    published.clear()
    values = [round(0.1 + 0.05 * i, 2) for i in range(12)]
    for v in values:  # faster than the engine: most of these never run
        state.request_knobs(beta=v)
    qtbot.waitUntil(lambda: not ctl.busy and ctl._pending is None, timeout=90000)
    assert state.trace.knobs.beta == values[-1]
    assert [t.knobs.beta for t in published][-1] == values[-1]
    assert len(published) <= 3  # the first request, at most one stale one, and the latest
    kda = state.trace.passes[0].layers[0].tensors["kda.beta"]
    assert (kda == pytest.approx(values[-1]))


def test_temperature_only_uses_the_resample_fast_path(engine, qtbot):
    state, ctl, _ = engine
    calls = []
    model = ctl.engine.model
    run, resample = model.run, model.resample
    model.run = lambda *a, **k: calls.append("run") or run(*a, **k)
    model.resample = lambda *a, **k: calls.append("resample") or resample(*a, **k)
    before = state.trace
    state.request_knobs(temperature=0.2, top_p=0.9)
    qtbot.waitUntil(lambda: state.trace.knobs.temperature == 0.2, timeout=60000)
    assert calls == ["resample"]
    assert state.trace.passes[0].layers[5] is before.passes[0].layers[5]  # layers of pass 0 reused


def test_a_failed_run_reports_and_keeps_the_last_good_trace(engine, qtbot):
    state, ctl, _ = engine
    good = state.trace
    errors = []
    state.engine_error.connect(errors.append)
    state.request_prompt("")  # the engine rejects an empty prompt
    qtbot.waitUntil(lambda: bool(errors), timeout=60000)
    assert "empty" in errors[0]
    assert state.trace is good and state.prompt == good.text
    state.request_knobs(temperature=0.7)  # sliders keep working on the prompt on screen
    qtbot.waitUntil(lambda: state.trace.knobs.temperature == 0.7, timeout=60000)
    assert state.trace.text == good.text
