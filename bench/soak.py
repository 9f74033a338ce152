"""Soak test of the real app: memory and responsiveness over a long auto-play; prints one JSON object.

    python bench/soak.py --minutes 15          # under Xvfb; starts its own Xvfb when DISPLAY is unset
    python bench/soak.py --minutes 60 --samples s.json   # also: the raw series, to analyse again
    python bench/soak.py --minutes 3 --types   # also: which Python object types grew (to hunt a leak)
    python bench/soak.py --minutes 5 --trace-malloc   # also: the source lines whose allocations grew between
                                                      # minutes 2 and the end (slow; needs --minutes > 2)
    python bench/soak.py --minutes 60 --lang ko --size 1280x720 --model kimi-linear-48b --why
                                   # where users are: Korean labels, a small window, another bundled model, and
                                   # the why-this-word views on (a knock-out every --knockout-every s, 120)

What it does, like a person who leaves the app running: the trace player auto-plays at 4× (started again
from the first step whenever it reaches the end), the layer changes every 10 s (the "next layer" action,
PgUp, bouncing at the ends) and the KDA α slider moves every 20 s (the engine runs again, a new trace is drawn).
One thing at a time, as a person: the actions' timers are staggered (PHASE_S), so two never share a heartbeat.
--lang sets the label language (en, ko), --size the window's size (WIDTHxHEIGHT, not maximised), --model a
bundled config (switched to through the Model menu before the soak starts; the report's "setup" says which
was shown). --why keeps the Why-this-word views on: the Explain dock raised with its 3D lens column, arcs and
route drawn (each new trace is explained again), and every --knockout-every seconds a knock-out as the context
menus make one (the first prompt token, then the picked layer's mixer, then Restore; "knockouts" counts them;
"explanations" the Explain dock's results: done, failed (with samples) and those with a knock-out's "after").

Memory ("a 10-minute soak cannot tell allocator warm-up from a leak"): each series (RSS every 5 s,
malloc in use every 5 s, the malloc floor of each 30 s) goes through analyse_memory:
- warm-up, detected from the series itself (detect_warmup): a two-segment least-squares fit; a candidate end
  every 30 s up to half the run; a candidate is a warm-up when the part before it grew on average (its jump
  into the next part counted, so a one-time step is warm-up as much as a ramp) at least 50 MiB/h faster than
  the slope after it, and the split fits much better than one line (F >= 7); the best such split wins and the
  rule runs again on what follows, until none passes. A steady leak has no warm-up, noise fails the F test.
- slope_mib_per_h after the warm-up, least squares, with stderr_mib_per_h and ci95_mib_per_h (± 1.96 SE, the
  SE widened for the residuals' lag-1 autocorrelation); growth_total_mib (last - first sample),
  growth_after_warmup_mib.
The top-level warmup_s, slope_mib_per_h, slope_ci95_mib_per_h and growth_total_mib are RSS's (what the user's
system pays); "malloc_in_use" and "malloc_in_use_floor" hold the same for the heap: RSS can grow while malloc
stays flat (freed memory malloc keeps, pages touched for the first time), and the floor (the least in-use of each
30 s, sampled every second) leaves out frame buffers in flight: what stays.
- verdict: each goal — memory: "pass" when the whole 95 % interval of the RSS slope is under 10 MiB/h,
  "fail" when all of it is at or over, else (or with under 5 minutes after the warm-up) "inconclusive"; exceptions: 0; heartbeat: max gap < 100 ms, and a gap
  over it on a machine that was not quiet (other processes — the CPU the machine was busy (/proc/stat) less the
  app's and its Xvfb's — used 0.1 core or more on average after the warm-up, or 0.5 core or more in some 5 s; where
  /proc does not tell, the mean 1-minute load over the run >= 0.7 per core or its max >= 1 per core: a measure
  that counts the app's own threads) is "machine not quiet (...)", not a fail; overall: fail if any fails, pass if all
  pass, else "not judged".
- heartbeat_warmup_s: the first minute (caches, GL, the late panels), longer while the engine worker's child
  still fills numba's cache (the compiled kernels' load: ~70 MiB of heap, ~250 MiB RSS once), at most half the
  run or 5 minutes: the heartbeat figures, the GC object counts and the --types/--trace-malloc baselines start
  there. rss_mib_by_minute etc.: the value at the end of each minute, to see the shape.
- gc_objects_start / _end / _growth_per_hour: the number of objects the Python GC tracks, the ones frozen for it
  included (sampled every 30 s, after a gc.collect()), after heartbeat_warmup_s; the growth a least-squares slope.
- heartbeat_gap_max_ms / heartbeat_gap_p99_ms / heartbeat_gaps_over_100ms: the longest interval between ticks
  of a 20 ms UI-thread timer (so at least ~20) after heartbeat_warmup_s, its 99th percentile (1 ms bins) and how
  many exceeded 100 ms; the bench's own work in an interval (its memory and CPU samplers, its gc sampling:
  `_paused`) is taken out of it: that time is the bench's, not the app's. The warm-up's longest gap is
  warmup_max_heartbeat_gap_ms.
  worst_gaps: [gap ms, at s, what the bench did last, UI-thread CPU ms in the gap, whole-process CPU ms in the
  gap, the app's garbage collections' ms in the gap]: a gap with little UI-thread CPU was spent waiting (the GIL, a
  lock, or a loaded machine's scheduler).
- handlers: UI-thread CPU (time.thread_time) and wall ms of what each action runs synchronously: "layer" (the
  action and every layer_changed slot), "slider" (the slider's slots), "trace" (AppState.set_trace with every
  trace_changed slot), "step" (AppState.select_step with every step_changed slot); n, mean and max.
- load_average: the machine's 1-minute load average (min, mean, max over the run), its core count and whether
  it was quiet (see verdict): on a loaded machine wall-clock gaps grow with the load, CPU times do not.
- other_processes_cores: the cores other processes used (mean, max of the 5 s intervals after the warm-up) and
  whether that is quiet (see verdict).
- --samples PATH writes the raw series (rss, malloc: [s, MiB]; malloc_floor: {30 s window: MiB}; loads), and
  --analyse PATH makes the memory part of the report again from such a file (no app).
- exceptions: Python exceptions that reached sys.excepthook / threading.excepthook (slots, threads) while it ran,
  exceptions_at_close: those raised while the window closed (both count in the verdict), and
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
# A person does one thing at a time: the actions' timers start at these offsets (off the 0.5-s grid of the replay
# check and off each other's), so that a layer change, a slider move, a knock-out and a replay never land in one
# heartbeat interval. Started together, every 60 s all of them did (and Qt's coarse timers align near-equal
# wake-ups on purpose): a 4-min soak on a quiet machine measured 106-113 ms gaps at exactly 120 s and 180 s, each
# the sum of several actions' handlers, while a replay alone costs 30-45 ms.
PHASE_S = {"layer": 2.75, "slider": 6.1, "knockout": 9.3}
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


# --- warm-up detection and the slope after it (pure functions, unit-tested on synthetic series) -------------
BREAK_EVERY_S = 30.0   # candidate ends of the warm-up: every 30 s
MIN_RISE_MIB_PER_H = 50.0  # a warm-up grows at least this much faster (per hour, on average) than what follows
MIN_F = 7.0            # and splitting the series there must explain the data much better than one line does
GOAL_MIB_PER_H, GOAL_GAP_MS = 10.0, 100.0
MIN_SPAN_S = 300.0     # a memory verdict needs at least 5 minutes after the warm-up
QUIET_MEAN_LOAD_PER_CORE, QUIET_MAX_LOAD_PER_CORE = 0.7, 1.0
QUIET_OTHERS_MEAN, QUIET_OTHERS_MAX = 0.1, 0.5  # cores other processes may use (mean, any 5 s) on a quiet machine


def _line(samples):
    """Least-squares line through (t, v): (slope per second, value at mean t, mean t, SSE, Sxx)."""
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    sxx = sum((t - mt) ** 2 for t, _ in samples)
    b = sum((t - mt) * (v - mv) for t, v in samples) / sxx if sxx > 0 else 0.0
    sse = sum((v - mv - b * (t - mt)) ** 2 for t, v in samples)
    return b, mv, mt, sse, sxx


def detect_warmup(samples: list[tuple[float, float]], max_warmup_s: float | None = None,
                  every_s: float = BREAK_EVERY_S, min_rise: float = MIN_RISE_MIB_PER_H,
                  min_f: float = MIN_F) -> float:
    """When the warm-up of a memory series (seconds, MiB) ends, by a two-segment least-squares fit.

    The rule: every multiple of every_s (30 s) up to max_warmup_s (default: half the series) is a candidate end
    tb; the series is split there and a line fitted to each part. A candidate is a warm-up only if (a) the first
    part grew, on average, at least min_rise MiB/h faster than the second part's slope — counting the jump
    between the two lines at tb, so a one-time step (the compiled kernels' load) counts as much as a ramp — and
    (b) the split explains the data much better than one line: F = ((SSE_one - SSE_split) / 2) /
    (SSE_split / (n - 4)) >= min_f. Of those, the one with the least SSE_split wins; then the rule runs again on
    what follows it (a curved warm-up, fast then slow, ends where its tail is a line), until no candidate passes.
    No candidate: no warm-up (0 s, or the series' first sample). A steady leak has no warm-up (its rate is the
    same on both sides), noise fails (b), and a leak that begins after a warm-up is the second part's slope."""
    if not samples:
        return 0.0
    t0 = samples[0][0]
    end = t0 + (max_warmup_s if max_warmup_s is not None else (samples[-1][0] - t0) / 2)
    start, rest = t0, samples
    while True:
        n = len(rest)
        if n < 8:
            return start
        _, _, _, sse_one, _ = _line(rest)
        best = None
        k = int(start // every_s) + 1
        while k * every_s <= end:
            tb = k * every_s
            k += 1
            a = [s for s in rest if s[0] < tb]
            b = [s for s in rest if s[0] >= tb]
            if len(a) < 3 or len(b) < 4:
                continue
            ba, ma, mta, sse_a, _ = _line(a)
            bb, mb, mtb, sse_b, _ = _line(b)
            span = tb - a[0][0]
            rise = ((mb + bb * (tb - mtb)) - (ma + ba * (a[0][0] - mta))) / span - bb  # per second
            sse = sse_a + sse_b
            f = (sse_one - sse) / 2 / (sse / (n - 4)) if sse > 0 else float("inf")
            if rise * 3600 >= min_rise and f >= min_f and (best is None or sse < best[0]):
                best = (sse, tb)
        if best is None:
            return start
        start = best[1]
        rest = [s for s in rest if s[0] >= start]


def fit_slope(samples: list[tuple[float, float]]) -> dict | None:
    """Least-squares slope in MiB/h with its standard error and 95 % interval (slope ± 1.96 SE). The 5 s samples
    are not independent (a frame buffer lives a few samples), so the SE is widened by sqrt((1 + r) / (1 - r)),
    r the lag-1 autocorrelation of the residuals (0 <= r <= 0.95): the usual effective-sample-size correction."""
    n = len(samples)
    if n < 3:
        return None
    b, mv, mt, sse, sxx = _line(samples)
    if sxx == 0:
        return None
    res = [v - mv - b * (t - mt) for t, v in samples]
    den = sum(e * e for e in res)
    r = sum(x * y for x, y in zip(res, res[1:])) / den if den > 0 else 0.0
    r = min(max(r, 0.0), 0.95)
    se = (sse / (n - 2) / sxx) ** 0.5 * ((1 + r) / (1 - r)) ** 0.5 * 3600
    slope = b * 3600
    return {"slope_mib_per_h": round(slope, 2), "stderr_mib_per_h": round(se, 2),
            "ci95_mib_per_h": [round(slope - 1.96 * se, 2), round(slope + 1.96 * se, 2)],
            "lag1_autocorrelation": round(r, 2), "n": n, "span_s": round(samples[-1][0] - samples[0][0], 1)}


def analyse_memory(samples: list[tuple[float, float]], max_warmup_s: float | None = None) -> dict:
    """The detected warm-up, the slope after it (with its interval) and the growth of a memory series."""
    if not samples:
        return {}
    warm = detect_warmup(samples, max_warmup_s)
    after = [s for s in samples if s[0] >= warm]
    out = {"warmup_s": round(warm - samples[0][0], 1) if warm > samples[0][0] else 0.0}
    out.update(fit_slope(after) or {"slope_mib_per_h": None})
    out["growth_total_mib"] = round(samples[-1][1] - samples[0][1], 1)
    out["growth_after_warmup_mib"] = round(after[-1][1] - after[0][1], 1)
    out["start_after_warmup_mib"] = round(after[0][1], 1)
    out["end_mib"] = round(samples[-1][1], 1)
    return out


def memory_verdict(fit: dict, goal: float = GOAL_MIB_PER_H, min_span_s: float = MIN_SPAN_S) -> str:
    """pass: the whole 95 % interval is under the goal; fail: all of it is at or over; else inconclusive, and
    always inconclusive when the fit after the warm-up spans under min_span_s (5 minutes)."""
    ci = fit.get("ci95_mib_per_h")
    if not ci:
        return "inconclusive (too few samples)"
    if fit.get("span_s") is not None and fit["span_s"] < min_span_s:
        return f"inconclusive (only {fit['span_s']:g} s after the warm-up)"
    if ci[1] < goal:
        return "pass"
    if ci[0] >= goal:
        return "fail"
    return f"inconclusive (the interval {ci[0]}..{ci[1]} MiB/h holds {goal:g})"


def read_load() -> float:
    """The 1-minute load average, from /proc/loadavg (os.getloadavg elsewhere)."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]


def read_cpu() -> tuple[float, float] | None:
    """(CPU seconds the whole machine has been busy, CPU seconds of this process and its running children: the
    app, and the Xvfb the bench started) since boot, from /proc (None where it is not): their difference over a
    run is what OTHER processes used, which the 1-minute load cannot tell from the app's own threads."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
        tick = os.sysconf("SC_CLK_TCK")
        busy = (user + nice + system + irq + softirq + steal) / tick
        t = os.times()
        own = t.user + t.system
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                for pid in f.read().split():
                    try:
                        with open(f"/proc/{pid}/stat") as g:
                            st = g.read().rsplit(")", 1)[1].split()
                        own += (int(st[11]) + int(st[12])) / tick  # utime, stime
                    except (OSError, ValueError, IndexError):
                        continue
        return busy, own
    except (OSError, ValueError):
        return None


def others_cores(cpu: list[tuple[float, float, float]]) -> list[float]:
    """From samples (wall s, machine busy CPU s, own CPU s): the cores other processes kept busy in each interval."""
    out = []
    for (t0, b0, o0), (t1, b1, o1) in zip(cpu, cpu[1:]):
        if t1 > t0:
            out.append(max(0.0, ((b1 - b0) - (o1 - o0)) / (t1 - t0)))
    return out


def is_quiet_others(others: list[float]) -> bool:
    """A quiet machine by what other processes used: on average under QUIET_OTHERS_MEAN cores and never more than
    QUIET_OTHERS_MAX cores in an interval (the app's own threads do not count: they are what is measured)."""
    return bool(others) and sum(others) / len(others) < QUIET_OTHERS_MEAN and max(others) < QUIET_OTHERS_MAX


def is_quiet(loads: list[float], cores: int) -> bool:
    """A quiet machine: the mean 1-minute load over the run under 0.7 per core and its max under 1 per core
    (the app itself accounts for about one runnable thread while it plays)."""
    if not loads:
        return False
    return sum(loads) / len(loads) < QUIET_MEAN_LOAD_PER_CORE * cores and max(loads) < QUIET_MAX_LOAD_PER_CORE * cores


def verdict(memory: dict, exceptions: int, gap_max_ms: float, loads: list[float], cores: int,
            others: list[float] | None = None) -> dict:
    """Each goal (growth < 10 MiB/h, 0 exceptions, max UI gap < 100 ms on a quiet machine) and the
    whole: a gap over the goal on a loaded machine is 'machine not quiet', not a pass and not a fail. Quiet:
    by the cores other processes used (`others`, see others_cores) where /proc tells them, else by the load."""
    mem = memory_verdict(memory)
    exc = "pass" if exceptions == 0 else f"fail ({exceptions})"
    if gap_max_ms < GOAL_GAP_MS:
        gap = "pass"
    elif others and is_quiet_others(others) or not others and is_quiet(loads, cores):
        gap = "fail"
    elif others:
        gap = (f"machine not quiet (other processes used {sum(others) / len(others):.2f} cores on average, "
               f"{max(others):.2f} at most, of {cores})")
    else:
        mean = sum(loads) / len(loads) if loads else float("nan")
        gap = f"machine not quiet (load mean {mean:.2f}, max {max(loads, default=float('nan')):.2f} on {cores} cores)"
    parts = (mem, exc, gap)
    if any(p.startswith("fail") for p in parts):
        overall = "fail"
    elif all(p == "pass" for p in parts):
        overall = "pass"
    else:
        overall = "not judged"
    return {"memory": mem, "exceptions": exc, "heartbeat": gap, "overall": overall}


def analyse_samples(raw: dict) -> dict:
    """The memory part of the report from the raw series a --samples file holds."""
    rss = [tuple(x) for x in raw["rss"]]
    floors = {int(k): v for k, v in raw.get("malloc_floor", {}).items()}
    elapsed = rss[-1][0] if rss else 0.0
    out = {"rss": analyse_memory(rss), "malloc_in_use": analyse_memory([tuple(x) for x in raw.get("malloc", [])]),
           "malloc_in_use_floor": analyse_memory(floor_samples(floors, elapsed + FLOOR_EVERY_S, 0.0)),
           "memory_verdict": None}
    out["memory_verdict"] = memory_verdict(out["rss"]) if out["rss"] else None
    loads = raw.get("loads", [])
    if loads:
        out["load_average"] = {"mean": round(sum(loads) / len(loads), 2), "max": max(loads),
                               "quiet": is_quiet(loads, os.cpu_count() or 1)}
    return out


class GapHistogram:
    """Heartbeat gaps in 1 ms bins (constant memory however long the run): max and percentiles."""

    def __init__(self, top_ms: int = 2000):
        self.bins = [0] * (top_ms + 1)
        self.n = 0
        self.max = 0.0

    def add(self, ms: float) -> None:
        self.bins[min(int(ms), len(self.bins) - 1)] += 1
        self.n += 1
        self.max = max(self.max, ms)

    def percentile(self, q: float) -> float | None:
        """The upper edge of the bin holding the q-th percentile (so at most 1 ms over the true value)."""
        if not self.n:
            return None
        want, seen = q / 100 * self.n, 0
        for ms, c in enumerate(self.bins):
            seen += c
            if seen >= want:
                return float(min(ms + 1, self.max)) if ms < len(self.bins) - 1 else self.max
        return self.max


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
    def __init__(self, app, win, minutes: float, types: bool, trace_malloc: bool, knockout_every_s: float = 0.0):
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
        self.layer_changes = self.slider_changes = self.replays = self.traces = self.knockouts = 0
        self.explanations = {"done": 0, "failed": 0, "knockout_results": 0}  # the Explain dock's results (--why)
        self.explain_failures: list[str] = []
        if knockout_every_s > 0:
            jobs = win.docks["ExplainDock"].jobs
            jobs.done.connect(self._explained)
            jobs.failed.connect(self._explain_failed)
        win.state.trace_changed.connect(self._count_trace)
        self.max_gap_ms = self.warmup_max_gap_ms = 0.0
        self.gaps = GapHistogram()
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
        self.cpu: list[tuple[float, float, float]] = []  # (s, machine busy CPU s, own CPU s): others_cores
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
        self._bench_ms, self._bench_cpu = 0.0, (0.0, 0.0)  # the bench's own work since the last beat (_paused)
        self.timers = []
        phases = {self._layer: PHASE_S["layer"], self._slide: PHASE_S["slider"], self._knock: PHASE_S["knockout"]}
        for ms, slot in ((HEARTBEAT_MS, self._beat), (RSS_EVERY_S * 1000, self._sample_rss),
                         (FLOOR_EVERY_S * 1000, self._sample_floor),
                         (GC_EVERY_S * 1000, self._sample_gc), (LAYER_EVERY_S * 1000, self._layer),
                         (SLIDER_EVERY_S * 1000, self._slide), (500, self._keep_playing),
                         *(((knockout_every_s * 1000, self._knock),) if knockout_every_s > 0 else ())):
            timer = QTimer()
            # the person's actions precise (coarse timers may be moved together), the samplers coarse
            timer.setTimerType(Qt.PreciseTimer if slot == self._beat or slot in phases else Qt.CoarseTimer)
            timer.timeout.connect(slot)
            if slot in phases:
                QTimer.singleShot(int(phases[slot] * 1000), timer, lambda t=timer, ms=ms: t.start(int(ms)))
            else:
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

    def _knock(self) -> None:
        """The Why-this-word experiment in turn: knock the first prompt token out (a token chip's menu), then the
        picked layer's mixer too (the 3D view's menu), then Restore (the dock's button)."""
        dock = self.win.docks["ExplainDock"]
        turn = self.knockouts % 3
        self._did("knockout")
        with self._measure("knockout"):
            if turn == 0:
                dock.add_knockout(("token", 0), "zero")
            elif turn == 1:
                dock.add_knockout(("block", self.win.state.layer + 1, "mixer"), "mean")
            else:
                dock.restore.click()
        self.knockouts += 1

    def _explained(self, _serial: int, res) -> None:
        self.explanations["done"] += 1
        self.explanations["knockout_results"] += res.knockout is not None

    def _explain_failed(self, _serial: int, message: str) -> None:
        self.explanations["failed"] += 1
        if len(self.explain_failures) < 5:
            self.explain_failures.append(message[:300])

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
        gap = (now - self._last_beat) / 1e6 - self._bench_ms  # the bench's own work in it is not the app's
        self._last_beat = now
        cpu = (time.thread_time(), time.process_time())
        ui_cpu, proc_cpu = ((a - b - c) * 1e3 for a, b, c in zip(cpu, self._last_cpu, self._bench_cpu))
        self._last_cpu = cpu
        self._bench_ms, self._bench_cpu = 0.0, (0.0, 0.0)
        gc_ms, self._gc_ms = self._gc_ms, 0.0
        if not self._warm():  # the window settles, the deferred panels are built, the engine loads: apart
            if self.elapsed_s() > 5.0:
                self.warmup_max_gap_ms = max(self.warmup_max_gap_ms, gap)
        else:
            self.max_gap_ms = max(self.max_gap_ms, gap)
            self.gaps.add(gap)
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
        """Mark the bench's own UI-thread work (its samplers, its collections) so that the heartbeat does not
        count it: its wall time, UI-thread and process CPU and the collections it ran are taken out of the gap it
        falls in (the app's work before and after it in that gap still counts)."""
        bench = self

        class _Pause:
            def __enter__(self):
                self.t0 = bench.clock.nsecsElapsed()
                self.cpu0 = (time.thread_time(), time.process_time())
                self.gc_ms0 = bench._gc_ms
                return self

            def __exit__(self, *exc):
                bench._bench_ms += (bench.clock.nsecsElapsed() - self.t0) / 1e6
                bench._bench_cpu = tuple(b + (now - then) for b, now, then in
                                         zip(bench._bench_cpu, (time.thread_time(), time.process_time()), self.cpu0))
                bench._gc_ms = self.gc_ms0  # the bench's own collections are not the app's
        return _Pause()

    def _sample_rss(self) -> None:
        with self._paused():
            self.rss.append((self.elapsed_s(), rss_mib()))
            self.loads.append(read_load())
            cpu = read_cpu()
            if cpu is not None:
                self.cpu.append((self.elapsed_s(), *cpu))
            if MALLOC_IN_USE is not None:
                self.malloc.append((self.elapsed_s(), MALLOC_IN_USE()))

    def _sample_floor(self) -> None:
        if MALLOC_IN_USE is not None:
            with self._paused():  # mallinfo2 takes every arena's lock: up to ~10 ms wall when threads allocate
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

    def others(self) -> list[float]:
        """The cores other processes used in each 5 s after the warm-up (see others_cores)."""
        start = self.warmup_s or 0.0
        return others_cores([c for c in self.cpu if c[0] >= start])

    def _others_report(self) -> dict | None:
        others = self.others()
        if not others:
            return None
        return {"mean": round(sum(others) / len(others), 3), "max": round(max(others), 3),
                "quiet": is_quiet_others(others)}

    def report(self) -> dict:
        """Called after the event loop ended: uses the samples taken while the app ran (once the loop has
        stopped, the frames and their buffers are released and RSS drops: not what a running app holds)."""
        warmup = self.warmup_s if self.warmup_s is not None else self.elapsed_s()
        objs = [(t, v) for t, v in self.objects if t >= warmup] or self.objects
        obj_growth = slope_per_hour(objs)
        rss = analyse_memory(self.rss)
        malloc = analyse_memory(self.malloc)
        floor = analyse_memory(floor_samples(self.malloc_floor, self.elapsed_s(), 0.0))
        cores = os.cpu_count() or 1
        result = {
            "minutes": round(self.elapsed_s() / 60.0, 2),
            "warmup_s": rss.get("warmup_s"),
            "slope_mib_per_h": rss.get("slope_mib_per_h"),
            "slope_ci95_mib_per_h": rss.get("ci95_mib_per_h"),
            "growth_total_mib": rss.get("growth_total_mib"),
            "exceptions": self.faults.exceptions,
            "heartbeat_gap_max_ms": round(self.max_gap_ms, 1),
            "heartbeat_gap_p99_ms": self.gaps.percentile(99),
            "verdict": verdict(rss, self.faults.exceptions, self.max_gap_ms, self.loads, cores, self.others()),
            "rss": rss,
            "malloc_in_use": malloc,
            "malloc_in_use_floor": floor,
            "heartbeat_warmup_s": round(warmup, 1),
            "engine_kernels": getattr(self.win.engine, "kernels", None),
            "rss_mib_by_minute": by_minute(self.rss),
            "malloc_in_use_mib_by_minute": by_minute(self.malloc),
            "malloc_in_use_floor_mib_by_minute": floor_by_minute(self.malloc_floor),
            "gc_objects_start": int(objs[0][1]),
            "gc_objects_end": int(objs[-1][1]),
            "gc_objects_growth_per_hour": None if obj_growth is None else round(obj_growth),
            "heartbeat_gaps_over_100ms": self.gaps_over_100ms,
            "warmup_max_heartbeat_gap_ms": round(self.warmup_max_gap_ms, 1),
            "worst_gaps": [list(g) for g in self.worst_gaps],
            "errors_logged": self.faults.errors_logged,
            "layer_changes": self.layer_changes,
            "slider_changes": self.slider_changes,
            "replays": self.replays,
            "knockouts": self.knockouts,
            "explanations": dict(self.explanations, failure_samples=self.explain_failures),
            "traces": self.traces,
            "handlers": {k: {"n": n, "cpu_ms_mean": round(cpu / n, 1), "cpu_ms_max": round(cpu_max, 1),
                             "wall_ms_mean": round(wall / n, 1), "wall_ms_max": round(wall_max, 1)}
                         for k, (n, cpu, cpu_max, wall, wall_max) in self.handlers.items()},
            "load_average": {"min": round(min(self.loads), 2), "mean": round(sum(self.loads) / len(self.loads), 2),
                             "max": round(max(self.loads), 2), "cores": cores,
                             "quiet": is_quiet(self.loads, cores)},
            "other_processes_cores": self._others_report(),
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


def _wait(app, ready, what: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench/soak.py: {what} within {timeout_s:g} s")
        app.processEvents()
        time.sleep(0.01)


def parse_size(text: str) -> tuple[int, int]:
    """'1280x720' -> (1280, 720); argparse.ArgumentTypeError (one line) otherwise."""
    parts = text.lower().replace("×", "x").split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"--size must be WIDTHxHEIGHT, e.g. 1280x720, got {text!r}")
    w, h = (int(p) for p in parts)
    if not (320 <= w <= 8192 and 240 <= h <= 8192):
        raise argparse.ArgumentTypeError(f"--size {w}x{h}: each side 320..8192 (width) / 240..8192 (height)")
    return w, h


def set_up(app, win, args) -> dict:
    """The window as --size, --model and --why ask; what was set up (the report's "setup")."""
    if args.size:
        win.showNormal()
        win.resize(*args.size)
    if args.model and args.model != win.config.name:
        win.models.model_actions[args.model].trigger()  # what a click on the Model menu's item does
        _wait(app, lambda: win.config.name == args.model and win.state.trace is not None
              and win.state.trace.config_name == args.model and not win.engine.busy, f"no {args.model} trace")
    if args.why:
        _wait(app, lambda: "ExplainDock" in win.docks, "no Explain dock")
        dock = win.docks["ExplainDock"]
        win.show_dock("ExplainDock")
        for box in (dock.show3d.lens, dock.show3d.arcs, dock.show3d.route):
            box.setChecked(True)  # as a click on each 'In the 3D view' box
    for _ in range(50):
        app.processEvents()
        time.sleep(0.01)
    from app import i18n

    return {"language": i18n.language(), "size": [win.width(), win.height()], "model": win.config.name,
            "why": bool(args.why), "knockout_every_s": args.knockout_every if args.why else None}


def run(args) -> dict:
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication([])
    from app.window.main_window import MainWindow

    win = MainWindow(settings_path=os.path.join(tempfile.mkdtemp(), "soak.ini"), language=args.lang)
    win.show()
    win.activateWindow()
    _wait(app, lambda: win.state.trace is not None and "TracePlayerDock" in win.docks and "ControlsDock" in win.docks,
          "the app showed no trace")
    setup = set_up(app, win, args)
    soak = Soak(app, win, args.minutes, args.types, args.trace_malloc, args.knockout_every if args.why else 0.0)
    app.exec()
    if args.samples:  # the raw series first, so a report can be made again from them (analyse_memory)
        from compute.guards.safe_write import write_bytes  # the guarded writer: regular files only, temp + rename

        write_bytes(args.samples, json.dumps({"rss": soak.rss, "malloc": soak.malloc, "loads": soak.loads,
                                              "malloc_floor": soak.malloc_floor}).encode())
    result = soak.report()
    result["setup"] = setup
    before = soak.faults.exceptions
    win.close()  # what the window's close runs (slots that outlive their objects) counts too
    for _ in range(20):
        app.processEvents()
        time.sleep(0.01)
    result["exceptions_at_close"] = soak.faults.exceptions - before
    if result["exceptions_at_close"]:
        result["verdict"] = verdict(result["rss"], soak.faults.exceptions, soak.max_gap_ms, soak.loads,
                                    os.cpu_count() or 1, soak.others())
        result["exception_samples"] = soak.faults.samples
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--types", action="store_true", help="report the object types that grew")
    parser.add_argument("--trace-malloc", action="store_true", help="report the allocation sites that grew")
    parser.add_argument("--samples", metavar="PATH", help="also write the raw memory and load series (JSON)")
    parser.add_argument("--analyse", metavar="PATH", help="only analyse the series of a --samples file")
    parser.add_argument("--lang", choices=("en", "ko"), default="en", help="label language (default en)")
    parser.add_argument("--size", type=parse_size, metavar="WxH", help="window size, e.g. 1280x720")
    parser.add_argument("--model", metavar="NAME", help="a bundled model config, e.g. kimi-linear-48b")
    parser.add_argument("--why", action="store_true",
                        help="keep the Why-this-word views on (3D lens, arcs, route) with knock-outs")
    parser.add_argument("--knockout-every", type=float, default=120.0, metavar="S",
                        help="with --why: a knock-out (or Restore) every S seconds (default 120)")
    args = parser.parse_args()
    if args.model:
        sys.path.insert(0, str(ROOT))
        from compute.config import available_configs

        if args.model not in available_configs():
            parser.error(f"--model must be one of {', '.join(available_configs())}, got {args.model!r}")
    if args.knockout_every <= 0:
        parser.error("--knockout-every must be > 0")
    if args.analyse:
        print(json.dumps(analyse_samples(json.loads(Path(args.analyse).read_text()))), flush=True)
        return
    if args.minutes <= 0:
        raise SystemExit("bench/soak.py: --minutes must be > 0")
    sys.path.insert(0, str(ROOT))
    if args.samples:  # checked now, not after an hour's soak: a folder, a link or a device is refused up front
        from compute.guards.safe_write import WriteError, probe

        try:
            probe(args.samples)
        except WriteError as e:
            parser.error(f"--samples: {e}")
    from xdisplay import x_display  # bench/ is sys.path[1] now, still ahead of the packages

    with x_display("bench/soak.py"):
        result = run(args)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
