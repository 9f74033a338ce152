"""Soak test of the real app (issue 11): memory and responsiveness over a long auto-play; prints one JSON object.

    python bench/soak.py --minutes 15          # under Xvfb; starts its own Xvfb when DISPLAY is unset
    python bench/soak.py --minutes 3 --types   # also: which Python object types grew (to hunt a leak)
    python bench/soak.py --minutes 5 --trace-malloc   # also: the source lines whose allocations grew between
                                                      # minutes 2 and the end (slow; needs --minutes > 2)

What it does, like a person who leaves the app running: the trace player auto-plays at 4× (started again
from the first step whenever it reaches the end), the layer changes every 10 s (the "next layer" action,
PgUp, bouncing at the ends) and the KDA α slider moves every 20 s (the engine runs again, a new trace is drawn).

- warmup_s: how long the warm-up lasted: the first minute (caches, GL, the late panels), longer while the engine
  worker's child still fills numba's cache (the engine then loads the compiled kernels: numba and LLVM take
  ~70 MiB of heap and ~250 MiB RSS once, which a fit over the run would report as growth), at most
  half the run or 5 minutes. Everything below that says "after the warm-up" starts there.
- rss_start_mib / rss_end_mib: resident memory after the warm-up / at the end.
- rss_growth_mib_per_hour: least-squares slope of RSS over time after the warm-up (samples every 5 s);
  rss_mib_by_minute: RSS at the end of each minute, to tell a plateau after warm-up from a steady climb.
- malloc_in_use_growth_mib_per_hour: the same slope for the memory malloc has handed out and not had back
  (glibc's mallinfo2, every arena): RSS can grow while this stays flat (freed memory that malloc keeps, pages
  touched for the first time), and this grows when something is really kept.
- malloc_in_use_floor_growth_mib_per_hour: the same slope for the least in-use figure of each 30 s (sampled every
  second): a frame in flight holds a few MiB for a moment, and the floor is what stays, so this tells something
  kept from the noise of frame buffers; malloc_in_use_floor_mib_by_minute is its per-minute floor.
- gc_objects_start / _end / _growth_per_hour: the same for the number of objects the Python GC tracks, the ones
  frozen for it included (sampled every 30 s, after a gc.collect()).
- max_heartbeat_gap_ms / heartbeat_gaps_over_100ms: the longest interval between ticks of a 20 ms UI-thread
  timer (so at least ~20) after the first minute, and how many exceeded 100 ms; an interval that contains the
  bench's own gc sampling is not counted (that pause is the bench's, not the app's). The first minute (the
  panels that are built once the window shows, the first engine runs) is warmup_max_heartbeat_gap_ms.
  worst_gaps: [gap ms, at s, what the bench did last, UI-thread CPU ms in the gap, whole-process CPU ms in the
  gap, the app's garbage collections' ms in the gap]: a gap with little UI-thread CPU was spent waiting (the GIL, a
  lock, or a loaded machine's scheduler).
- handlers: UI-thread CPU (time.thread_time) and wall ms of what each action runs synchronously: "layer" (the
  action and every layer_changed slot), "slider" (the slider's slots), "trace" (AppState.set_trace with every
  trace_changed slot), "step" (AppState.select_step with every step_changed slot); n, mean and max.
- load_average: the machine's 1-minute load average (min, mean, max over the run) and its core count: on a
  loaded machine wall-clock gaps grow with the load, CPU times do not.
- exceptions: Python exceptions that reached sys.excepthook / threading.excepthook (slots, threads), and
  errors_logged: log records at ERROR or above; the first few of each are listed in exception_samples.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARMUP_S = 60.0  # the least warm-up (see warmup_s)
MAX_WARMUP_S = 300.0
RSS_EVERY_S, GC_EVERY_S = 5.0, 30.0
FLOOR_EVERY_S, FLOOR_WINDOW_S = 1.0, 30.0
LAYER_EVERY_S, SLIDER_EVERY_S = 10.0, 20.0
HEARTBEAT_MS = 20
ALPHA_VALUES = (20, 70, 35, 85, 50)  # percent of the slider's range, in turn


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _mallinfo():
    """glibc's mallinfo2 (None elsewhere): bytes malloc has handed out and not had back, in every arena."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]
    try:
        fn = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = MallInfo2

    def in_use_mib() -> float:
        info = fn()
        return (info.uordblks + info.hblkhd) / 2 ** 20
    return in_use_mib


MALLOC_IN_USE = _mallinfo()


def slope_per_hour(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, value) samples, in value per hour."""
    if len(samples) < 2:
        return None
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    if var == 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in samples) / var * 3600.0


def _rounded(v: float | None, digits: int = 1) -> float | None:
    return None if v is None else round(v, digits)


def by_minute(samples: list[tuple[float, float]]) -> list[float]:
    """The last sample of each whole minute (to see the shape: a plateau after warm-up, or a steady climb)."""
    last: dict[int, float] = {}
    for t, v in samples:
        last[int(t // 60)] = v
    return [round(last[m], 1) for m in sorted(last)]


def floor_samples(floors: dict[int, float], elapsed_s: float, warmup_s: float = WARMUP_S,
                  window_s: float = FLOOR_WINDOW_S) -> list[tuple[float, float]]:
    """(start s, least value) of every whole window (window index -> least value seen in it) after the warm-up;
    the window still open at elapsed_s is not a whole one."""
    last = int(elapsed_s // window_s)
    return [(w * window_s, v) for w, v in sorted(floors.items()) if w * window_s >= warmup_s and w < last]


def floor_by_minute(floors: dict[int, float], window_s: float = FLOOR_WINDOW_S) -> list[float]:
    """The least value of each whole minute's windows (to see the shape of what stays)."""
    minutes: dict[int, float] = {}
    for w, v in floors.items():
        m = int(w * window_s // 60)
        minutes[m] = min(minutes.get(m, v), v)
    return [round(minutes[m], 1) for m in sorted(minutes)]


def type_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in gc.get_objects():
        name = f"{type(o).__module__}.{type(o).__qualname__}"
        counts[name] = counts.get(name, 0) + 1
    return counts


class Faults:
    """Counts exceptions that reach the hooks and ERROR log records; keeps the first few as samples."""

    def __init__(self):
        self.exceptions = 0
        self.errors_logged = 0
        self.samples: list[str] = []
        self._hook, self._thread_hook = sys.excepthook, threading.excepthook
        sys.excepthook = self._on_exception
        threading.excepthook = self._on_thread_exception
        handler = logging.Handler(logging.ERROR)
        handler.emit = self._on_record
        logging.getLogger().addHandler(handler)

    def _keep(self, text: str) -> None:
        if len(self.samples) < 5:
            self.samples.append(text[-600:])

    def _on_exception(self, kind, value, tb) -> None:
        self.exceptions += 1
        self._keep("".join(traceback.format_exception(kind, value, tb)))
        self._hook(kind, value, tb)

    def _on_thread_exception(self, args) -> None:
        self.exceptions += 1
        self._keep("".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)))
        self._thread_hook(args)

    def _on_record(self, record) -> None:
        self.errors_logged += 1
        self._keep(f"{record.levelname} {record.name}: {record.getMessage()}")


class Soak:
    def __init__(self, app, win, minutes: float, types: bool, trace_malloc: bool):
        from PySide6.QtCore import QElapsedTimer, Qt, QTimer

        self.app, self.win = app, win
        self.duration_s = minutes * 60.0
        self.types, self.trace_malloc = types, trace_malloc
        self.player = win.docks["TracePlayerDock"]
        self.slider = win.docks["ControlsDock"].slider("alpha")
        self.faults = Faults()
        self.rss: list[tuple[float, float]] = []
        self.malloc: list[tuple[float, float]] = []
        self.malloc_floor: dict[int, float] = {}  # 30 s window -> least in-use MiB seen in it
        self.objects: list[tuple[float, float]] = []
        self.layer_changes = self.slider_changes = self.replays = self.traces = 0
        win.state.trace_changed.connect(self._count_trace)
        self.max_gap_ms = self.warmup_max_gap_ms = 0.0
        self.gaps_over_100ms = 0
        # (gap ms, at s, what happened just before, UI CPU ms, process CPU ms, the app's garbage collections' ms)
        self.worst_gaps: list[tuple] = []
        self._gc_ms = 0.0  # the app's garbage collections since the last heartbeat (not the bench's own)
        self._gc_t0 = None
        gc.callbacks.append(self._on_gc)
        # name -> [n, CPU ms sum, CPU ms max, wall ms sum, wall ms max] (sums, not lists: the bench's own
        # memory must not grow with the number of actions it measures)
        self.handlers: dict[str, list[float]] = {}
        self.loads: list[float] = []
        self._timed(win.state, "set_trace", "trace")
        self._timed(win.state, "select_step", "step")
        self._last_action = ("start", 0.0)
        self._layer_step = 1
        self._baseline_types: dict[str, int] | None = None
        self._baseline_malloc = None
        self.clock = QElapsedTimer()
        self.clock.start()
        self._last_beat = self.clock.nsecsElapsed()
        self._last_cpu = (time.thread_time(), time.process_time())
        self.timers = []
        for ms, slot in ((HEARTBEAT_MS, self._beat), (RSS_EVERY_S * 1000, self._sample_rss),
                         (FLOOR_EVERY_S * 1000, self._sample_floor),
                         (GC_EVERY_S * 1000, self._sample_gc), (LAYER_EVERY_S * 1000, self._layer),
                         (SLIDER_EVERY_S * 1000, self._slide), (500, self._keep_playing)):
            timer = QTimer()
            timer.setTimerType(Qt.PreciseTimer if slot == self._beat else Qt.CoarseTimer)
            timer.timeout.connect(slot)
            timer.start(int(ms))
            self.timers.append(timer)
        self.warmup_s: float | None = None  # set when the warm-up ends (_warm)
        self._warmup_cap_s = min(MAX_WARMUP_S, max(WARMUP_S, self.duration_s / 2))
        QTimer.singleShot(int(self.duration_s * 1000), app.quit)
        speed = self.player.speed
        speed.setCurrentIndex(speed.findData(4.0))
        self.player.play()
        self._sample_rss()
        self._sample_gc()

    def elapsed_s(self) -> float:
        return self.clock.nsecsElapsed() / 1e9

    # --- what the person does ----------------------------------------------------------------------
    def _keep_playing(self) -> None:
        if not self.player.playing:
            self.replays += 1
            self.player.play()  # at the last step: starts again from the first
            self._did("replay")

    def _layer(self) -> None:
        n = len(self.win.config.mixer_types)
        layer = self.win.state.layer
        if not 0 <= layer + self._layer_step < n:
            self._layer_step = -self._layer_step
        name = "layer_next" if self._layer_step > 0 else "layer_prev"
        self._did("layer")
        with self._measure("layer"):
            self.win.registry.actions[name].trigger()
        self.layer_changes += 1

    def _slide(self) -> None:
        self._did("slider")
        value = ALPHA_VALUES[self.slider_changes % len(ALPHA_VALUES)]
        with self._measure("slider"):
            self.slider.setValue(self.slider.minimum() + (self.slider.maximum() - self.slider.minimum()) * value // 100)
        self.slider_changes += 1

    # --- what the bench measures -------------------------------------------------------------------
    def _count_trace(self, _trace) -> None:
        self.traces += 1
        self._did("trace")

    def _timed(self, obj, name: str, key: str) -> None:
        """Measure every call of obj.name (an instance attribute shadows the method for its callers)."""
        method = getattr(obj, name)

        def timed(*args, **kwargs):
            with self._measure(key):
                return method(*args, **kwargs)
        setattr(obj, name, timed)

    @contextlib.contextmanager
    def _measure(self, key: str):
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            yield
        finally:
            cpu_ms, wall_ms = (time.thread_time() - cpu) * 1e3, (time.perf_counter() - wall) * 1e3
            h = self.handlers.setdefault(key, [0, 0.0, 0.0, 0.0, 0.0])
            h[0] += 1
            h[1] += cpu_ms
            h[2] = max(h[2], cpu_ms)
            h[3] += wall_ms
            h[4] = max(h[4], wall_ms)

    def _on_gc(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._gc_t0 = time.perf_counter()
        elif self._gc_t0 is not None:
            self._gc_ms += (time.perf_counter() - self._gc_t0) * 1e3
            self._gc_t0 = None

    def _beat(self) -> None:
        now = self.clock.nsecsElapsed()
        gap = (now - self._last_beat) / 1e6
        self._last_beat = now
        cpu = (time.thread_time(), time.process_time())
        ui_cpu, proc_cpu = ((a - b) * 1e3 for a, b in zip(cpu, self._last_cpu))
        self._last_cpu = cpu
        gc_ms, self._gc_ms = self._gc_ms, 0.0
        if not self._warm():  # the window settles, the deferred panels are built, the engine loads: apart
            if self.elapsed_s() > 5.0:
                self.warmup_max_gap_ms = max(self.warmup_max_gap_ms, gap)
        else:
            self.max_gap_ms = max(self.max_gap_ms, gap)
            if gap > 100.0:
                self.gaps_over_100ms += 1
                what, at = self._last_action
                self.worst_gaps.append((round(gap, 1), round(self.elapsed_s(), 1),
                                        f"{what} {self.elapsed_s() - at:.1f} s before",
                                        round(ui_cpu, 1), round(proc_cpu, 1), round(gc_ms, 1)))
                self.worst_gaps = sorted(self.worst_gaps, reverse=True)[:5]

    def _warm(self) -> bool:
        """Whether the warm-up is over (see warmup_s); the first call that finds it over starts the baselines."""
        if self.warmup_s is not None:
            return True
        t = self.elapsed_s()
        engine_settling = getattr(self.win.engine, "kernels", "") == "warming"
        if t < WARMUP_S or (engine_settling and t < self._warmup_cap_s):
            return False
        self.warmup_s = t
        self._baseline()
        return True

    def _did(self, what: str) -> None:
        self._last_action = (what, self.elapsed_s())

    def _paused(self):
        """Mark the bench's own UI-thread work so the heartbeat does not count it."""
        bench = self

        class _Pause:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                bench._last_beat = bench.clock.nsecsElapsed()
                bench._last_cpu = (time.thread_time(), time.process_time())
                bench._gc_ms = 0.0
        return _Pause()

    def _sample_rss(self) -> None:
        self.rss.append((self.elapsed_s(), rss_mib()))
        self.loads.append(os.getloadavg()[0])
        if MALLOC_IN_USE is not None:
            self.malloc.append((self.elapsed_s(), MALLOC_IN_USE()))

    def _sample_floor(self) -> None:
        if MALLOC_IN_USE is not None:
            window = int(self.elapsed_s() // FLOOR_WINDOW_S)
            self.malloc_floor[window] = min(self.malloc_floor.get(window, float("inf")), MALLOC_IN_USE())

    def _sample_gc(self) -> None:
        with self._paused():
            gc.collect()
            # objects frozen for the collector (scene/gc_main_thread.settle) are alive too: counted
            self.objects.append((self.elapsed_s(), float(len(gc.get_objects()) + gc.get_freeze_count())))

    def _baseline(self) -> None:
        from PySide6.QtCore import QTimer

        with self._paused():
            if self.types:
                gc.collect()
                self._baseline_types = type_counts()
            if self.trace_malloc:  # allocations made before start() are not tracked: the baseline comes a
                import tracemalloc  # minute later, so both snapshots hold the app's live state

                tracemalloc.start(8)
                QTimer.singleShot(60000, self._malloc_baseline)

    def _malloc_baseline(self) -> None:
        import tracemalloc

        with self._paused():
            self._baseline_malloc = tracemalloc.take_snapshot()

    def report(self) -> dict:
        """Called after the event loop ended: uses the samples taken while the app ran (once the loop has
        stopped, the frames and their buffers are released and RSS drops: not what a running app holds)."""
        warmup = self.warmup_s if self.warmup_s is not None else self.elapsed_s()
        rss = [(t, v) for t, v in self.rss if t >= warmup] or self.rss
        objs = [(t, v) for t, v in self.objects if t >= warmup] or self.objects
        growth = slope_per_hour(rss)
        obj_growth = slope_per_hour(objs)
        result = {
            "minutes": round(self.elapsed_s() / 60.0, 2),
            "warmup_s": round(warmup, 1),
            "engine_kernels": getattr(self.win.engine, "kernels", None),
            "rss_start_mib": round(rss[0][1], 1),
            "rss_end_mib": round(rss[-1][1], 1),
            "rss_growth_mib_per_hour": None if growth is None else round(growth, 1),
            "rss_mib_by_minute": by_minute(self.rss),
            "malloc_in_use_growth_mib_per_hour": _rounded(slope_per_hour([(t, v) for t, v in self.malloc
                                                                          if t >= warmup])),
            "malloc_in_use_mib_by_minute": by_minute(self.malloc),
            "malloc_in_use_floor_growth_mib_per_hour": _rounded(slope_per_hour(
                floor_samples(self.malloc_floor, self.elapsed_s(), warmup))),
            "malloc_in_use_floor_mib_by_minute": floor_by_minute(self.malloc_floor),
            "gc_objects_start": int(objs[0][1]),
            "gc_objects_end": int(objs[-1][1]),
            "gc_objects_growth_per_hour": None if obj_growth is None else round(obj_growth),
            "max_heartbeat_gap_ms": round(self.max_gap_ms, 1),
            "heartbeat_gaps_over_100ms": self.gaps_over_100ms,
            "warmup_max_heartbeat_gap_ms": round(self.warmup_max_gap_ms, 1),
            "worst_gaps": [list(g) for g in self.worst_gaps],
            "exceptions": self.faults.exceptions,
            "errors_logged": self.faults.errors_logged,
            "layer_changes": self.layer_changes,
            "slider_changes": self.slider_changes,
            "replays": self.replays,
            "traces": self.traces,
            "handlers": {k: {"n": n, "cpu_ms_mean": round(cpu / n, 1), "cpu_ms_max": round(cpu_max, 1),
                             "wall_ms_mean": round(wall / n, 1), "wall_ms_max": round(wall_max, 1)}
                         for k, (n, cpu, cpu_max, wall, wall_max) in self.handlers.items()},
            "load_average": {"min": round(min(self.loads), 2), "mean": round(sum(self.loads) / len(self.loads), 2),
                             "max": round(max(self.loads), 2), "cores": os.cpu_count()},
        }
        if self.faults.samples:
            result["exception_samples"] = self.faults.samples
        if self._baseline_malloc is not None:
            import tracemalloc

            diff = tracemalloc.take_snapshot().compare_to(self._baseline_malloc, "traceback")
            result["grown_allocations"] = [
                {"kib": round(s.size_diff / 1024, 1), "count": s.count_diff,
                 "where": [f"{f.filename.replace(str(ROOT) + '/', '')}:{f.lineno}" for f in s.traceback][-4:]}
                for s in diff[:12] if s.size_diff > 0]
        if self._baseline_types is not None:  # after the malloc snapshot: its own dict and names are not growth
            gc.collect()
            now = type_counts()
            grew = sorted(((now.get(k, 0) - self._baseline_types.get(k, 0), k) for k in now), reverse=True)
            result["grown_types"] = {k: d for d, k in grew[:15] if d > 0}
        return result


def run(args) -> dict:
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication([])
    from app.main_window import MainWindow

    win = MainWindow(settings_path=os.path.join(tempfile.mkdtemp(), "soak.ini"), language="en")
    win.show()
    win.activateWindow()
    deadline = time.monotonic() + 180
    while win.state.trace is None or "TracePlayerDock" not in win.docks or "ControlsDock" not in win.docks:
        if time.monotonic() > deadline:
            raise SystemExit("bench/soak.py: the app showed no trace within 180 s")
        app.processEvents()
        time.sleep(0.01)
    soak = Soak(app, win, args.minutes, args.types, args.trace_malloc)
    app.exec()
    result = soak.report()
    win.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--types", action="store_true", help="report the object types that grew")
    parser.add_argument("--trace-malloc", action="store_true", help="report the allocation sites that grew")
    args = parser.parse_args()
    if args.minutes <= 0:
        raise SystemExit("bench/soak.py: --minutes must be > 0")
    sys.path.insert(0, str(ROOT))
    from xdisplay import x_display  # bench/ is sys.path[1] now, still ahead of the packages

    with x_display("bench/soak.py"):
        result = run(args)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
