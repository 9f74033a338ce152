"""bench/soak.py's arithmetic (issue 11): the malloc floor keeps what stays and drops the frame buffers in flight,
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
