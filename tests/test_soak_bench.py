"""Bench/soak.py's arithmetic: the malloc floor keeps what stays and drops the frame buffers in flight,
and the per-action figures are running sums (the bench's own memory must not grow with the actions it counts)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def soak():
    spec = importlib.util.spec_from_file_location("soak_bench", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # only the standard library at import time (Qt comes with run())
    return module


def test_floor_ignores_transient_peaks_and_finds_steady_growth(soak):
    floors = {}
    for second in range(600):  # 10 minutes, a 4 MiB frame buffer in flight every 3 s, +6 MiB per hour kept
        kept = 200.0 + 6.0 * second / 3600
        value = kept + (4.0 if second % 3 == 0 else 0.0)
        window = second // 30
        floors[window] = min(floors.get(window, float("inf")), value)
    samples = soak.floor_samples(floors, elapsed_s=600.0, warmup_s=60.0, window_s=30.0)
    assert samples[0][0] == 60.0 and samples[-1][0] == 570.0  # whole windows after the warm-up only
    assert soak.slope_per_hour(samples) == pytest.approx(6.0, abs=0.2)
    by_minute = soak.floor_by_minute(floors, 30.0)
    assert len(by_minute) == 10 and by_minute[0] == 200.0


def test_the_window_still_open_is_left_out(soak):
    floors = {0: 10.0, 1: 10.0, 2: 10.0, 3: 1.0}  # window 3 has only begun: its one low sample says little
    assert [t for t, _ in soak.floor_samples(floors, elapsed_s=95.0, warmup_s=0.0, window_s=30.0)] == [0, 30, 60]


def test_handler_figures_are_running_sums(soak):
    bench = soak.Soak.__new__(soak.Soak)  # only what _measure uses
    bench.handlers = {}
    for _ in range(1000):
        with bench._measure("layer"):
            pass
    n, cpu, cpu_max, wall, wall_max = bench.handlers["layer"]
    assert n == 1000 and 0 <= cpu_max <= cpu and 0 <= wall_max <= wall


class _Clock:
    """QElapsedTimer's nsecsElapsed, moved by hand."""

    def __init__(self):
        self.ns = 0

    def nsecsElapsed(self):  # noqa: N802 - Qt's name
        return self.ns

    def advance_ms(self, ms: float) -> None:
        self.ns += int(ms * 1e6)


def _heart(soak):
    """A Soak with only what _beat and _paused use, its warm-up over, a beat just now."""
    bench = soak.Soak.__new__(soak.Soak)
    bench.clock = _Clock()
    bench.warmup_s = 0.0
    bench.max_gap_ms = 0.0
    bench.gaps = soak.GapHistogram()
    bench.gaps_over_100ms = 0
    bench.worst_gaps = []
    bench._gc_ms = 0.0
    bench._last_action = ("layer", 0.0)
    bench._last_beat = 0
    bench._last_cpu = (0.0, 0.0)
    bench._bench_ms, bench._bench_cpu = 0.0, (0.0, 0.0)
    return bench


def test_the_benchs_own_sampling_is_taken_out_of_a_gap_and_the_apps_work_around_it_counts(soak, monkeypatch):
    import time

    monkeypatch.setattr(time, "thread_time", lambda: 0.0)
    monkeypatch.setattr(time, "process_time", lambda: 0.0)
    bench = _heart(soak)
    bench.clock.advance_ms(60)  # the app's layer change
    with bench._paused():
        bench.clock.advance_ms(45)  # the bench's samplers (mallinfo waiting for the arenas' locks)
    bench.clock.advance_ms(50)  # the app's trace arrival, in the same gap
    bench._beat()
    assert bench.max_gap_ms == pytest.approx(110.0)  # 155 ms in all, 45 of them the bench's
    assert bench.gaps_over_100ms == 1 and bench.worst_gaps[0][0] == pytest.approx(110.0)
    bench.clock.advance_ms(20)
    bench._beat()  # the next gap starts from the beat, nothing of the bench's left in it
    assert bench.gaps_over_100ms == 1 and bench.gaps.percentile(0.0) is not None
    assert bench._bench_ms == 0.0


# --- warm-up detection and the slope after it: synthetic 5 s series, no app -----------------------
def _series(minutes, fn, seed=1, noise=1.5):
    import random

    rnd = random.Random(seed)
    return [(t, fn(t) + rnd.gauss(0.0, noise)) for t in range(0, int(minutes * 60) + 1, 5)]


def test_warmup_then_flat_is_detected_and_the_slope_after_it_is_flat(soak):
    # 300 MiB -> 550 MiB in the first 3 minutes (allocator and kernels), then flat for 12 minutes
    series = _series(15, lambda t: 300.0 + 250.0 * min(t, 180.0) / 180.0)
    report = soak.analyse_memory(series)
    assert 150.0 <= report["warmup_s"] <= 240.0
    assert abs(report["slope_mib_per_h"]) < 3.0 * report["stderr_mib_per_h"] < 10.0
    assert report["growth_total_mib"] == pytest.approx(250.0, abs=8.0)
    assert soak.memory_verdict(report) == "pass"
    # a fit over the whole run would have called this warm-up a leak of hundreds of MiB/h
    assert soak.fit_slope(series)["slope_mib_per_h"] > 300.0


def test_a_curved_warmup_and_a_step_are_warmup_too(soak):
    import math

    slopes = []
    for seed in range(10):  # fast, then slower, then flat: the tail of the curve must not read as a leak
        report = soak.analyse_memory(_series(15, lambda t: 300.0 + 200.0 * (1.0 - math.exp(-t / 60.0)), seed))
        assert report["warmup_s"] >= 120.0
        slopes.append(report["slope_mib_per_h"])
    assert sum(slopes) / len(slopes) < 5.0 and max(slopes) < 20.0
    step = _series(15, lambda t: 300.0 + (250.0 if t >= 95 else 0.0))  # the kernels' one-time load at 95 s
    report = soak.analyse_memory(step)
    assert 90.0 <= report["warmup_s"] <= 150.0 and abs(report["slope_mib_per_h"]) < 5.0


def test_a_steady_leak_has_no_warmup_and_fails(soak):
    series = _series(15, lambda t: 400.0 + 20.0 * t / 3600.0, noise=0.3)
    report = soak.analyse_memory(series)
    assert report["warmup_s"] == 0.0
    assert report["slope_mib_per_h"] == pytest.approx(20.0, abs=2.0)
    assert soak.memory_verdict(report) == "fail"
    assert soak.verdict(report, 0, 30.0, [0.2] * 10, 2)["overall"] == "fail"


def test_noise_only_has_no_warmup_and_a_slope_near_zero(soak):
    for seed in range(5):
        report = soak.analyse_memory(_series(15, lambda t: 500.0, seed=seed, noise=2.0))
        assert report["warmup_s"] == 0.0, seed
        assert abs(report["slope_mib_per_h"]) < 3.0 * report["stderr_mib_per_h"] < 10.0


def test_a_leak_that_starts_after_the_warmup_is_the_slope(soak):
    # warm-up to 550 MiB in 2 minutes, then +20 MiB/h for an hour
    series = _series(60, lambda t: 300.0 + 250.0 * min(t, 120.0) / 120.0 + 20.0 * max(t - 120.0, 0.0) / 3600.0,
                     noise=1.0)
    report = soak.analyse_memory(series)
    assert 90.0 <= report["warmup_s"] <= 180.0
    assert report["slope_mib_per_h"] == pytest.approx(20.0, abs=1.5)
    assert soak.memory_verdict(report) == "fail"


def test_the_interval_widens_for_correlated_noise(soak):
    import random

    rnd, level, series = random.Random(3), 0.0, []
    for t in range(0, 901, 5):  # AR(1) noise, r = 0.8: a white-noise SE would be ~3x too narrow
        level = 0.8 * level + rnd.gauss(0.0, 1.0)
        series.append((t, 500.0 + level))
    fit = soak.fit_slope(series)
    assert fit["lag1_autocorrelation"] > 0.5
    white = soak.fit_slope([(t, 500.0 + random.Random(t).gauss(0.0, 1.0)) for t, _ in series])
    assert fit["stderr_mib_per_h"] > 2.0 * white["stderr_mib_per_h"]


def test_a_short_run_is_not_judged(soak):
    report = soak.analyse_memory(_series(1, lambda t: 300.0 + 3.0 * t))  # a minute of start-up
    assert soak.memory_verdict(report).startswith("inconclusive (only")


def test_verdict_says_machine_not_quiet_instead_of_failing_the_gap(soak):
    flat = {"ci95_mib_per_h": [-3.0, 4.0]}
    loaded = soak.verdict(flat, 0, 250.0, [3.5, 4.0, 5.2], 2)
    assert loaded["heartbeat"].startswith("machine not quiet") and loaded["overall"] == "not judged"
    quiet = soak.verdict(flat, 0, 250.0, [0.3, 0.5], 2)
    assert quiet["heartbeat"] == "fail" and quiet["overall"] == "fail"
    good = soak.verdict(flat, 0, 40.0, [3.5, 4.0], 2)
    assert good == {"memory": "pass", "exceptions": "pass", "heartbeat": "pass", "overall": "pass"}
    assert soak.verdict(flat, 2, 40.0, [0.1], 2)["exceptions"] == "fail (2)"


def test_gap_histogram_percentiles(soak):
    hist = soak.GapHistogram()
    for _ in range(990):
        hist.add(20.3)
    for ms in range(10):
        hist.add(150.0 + ms)
    assert hist.percentile(50) == 21.0 and hist.percentile(99) == 21.0 and hist.percentile(100) == 159.0
    assert hist.max == 159.0
    hist.add(5000.0)  # past the last bin: counted there, the max is exact
    assert hist.max == 5000.0 and hist.percentile(100) == 5000.0


def test_a_samples_file_is_analysed_again(soak, tmp_path):
    import json

    rss = _series(15, lambda t: 300.0 + 250.0 * min(t, 180.0) / 180.0)
    raw = {"rss": rss, "malloc": rss, "malloc_floor": {str(w): 100.0 for w in range(30)}, "loads": [0.5, 0.7]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(raw))
    out = soak.analyse_samples(json.loads(path.read_text()))
    assert out["rss"] == soak.analyse_memory(rss) and out["memory_verdict"] == "pass"
    assert out["malloc_in_use_floor"]["slope_mib_per_h"] == 0.0 and out["malloc_in_use_floor"]["n"] == 30


def test_quiet_is_judged_by_what_other_processes_used_not_by_the_apps_own_load(soak):
    """The app at 4x auto-play keeps a 2-core machine's load near 1.3 by itself: that is what is measured, so a
    run where no other process used the CPU is quiet (a gap over the goal fails), one beside a busy process not."""
    flat = {"ci95_mib_per_h": [-3.0, 4.0]}
    # (wall s, machine busy CPU s, own CPU s): the app used 1.3 cores, others 0.02 / 1.0
    alone = [(5.0 * i, 6.6 * i, 6.5 * i) for i in range(20)]
    beside = [(5.0 * i, 11.5 * i, 6.5 * i) for i in range(20)]
    assert soak.others_cores(alone) == pytest.approx([0.02] * 19)
    assert soak.others_cores(beside) == pytest.approx([1.0] * 19)
    assert soak.is_quiet_others(soak.others_cores(alone)) and not soak.is_quiet_others(soak.others_cores(beside))
    assert not soak.is_quiet_others([0.0] * 30 + [0.8])  # one busy 5 s is not quiet either
    app_load = [2.4, 1.35, 1.3]  # what the load average said: "not quiet" by the old measure
    assert soak.verdict(flat, 0, 150.0, app_load, 2, soak.others_cores(alone))["heartbeat"] == "fail"
    loaded = soak.verdict(flat, 0, 150.0, app_load, 2, soak.others_cores(beside))["heartbeat"]
    assert loaded.startswith("machine not quiet (other processes used 1.00 cores")
    assert soak.verdict(flat, 0, 40.0, app_load, 2, soak.others_cores(beside))["heartbeat"] == "pass"


def test_read_cpu_counts_this_process_as_its_own(soak):
    import time

    got = soak.read_cpu()
    if got is None:
        pytest.skip("no /proc/stat here")
    p0, t0 = time.process_time(), time.perf_counter()
    # this process busy until it has USED 0.3 s of CPU (not for 0.3 s of wall time: beside other busy test
    # processes on two cores it got less than 0.2 s of a core in 0.3 s, and the test failed): its own CPU grows
    # with the machine's
    while time.process_time() - p0 < 0.3 and time.perf_counter() - t0 < 30:
        pass
    again = soak.read_cpu()
    assert again[1] - got[1] >= 0.2
    assert again[0] - got[0] >= (again[1] - got[1]) - 0.05
