"""The engine in a worker thread: the UI thread never blocks on torch.

- torch (through compute.engine) is imported inside the worker thread, after the window is up.
- Requests are coalesced, latest value wins: at most one run is in flight; newer requests that arrive
  meanwhile replace each other, and only the newest runs next (so a slider drag shows live intermediate
  traces but never queues a backlog).
- When only temperature / top-p (or the sample seed) changed for the same prompt, the worker calls
  `ToyK3.resample` on the last good trace instead of a full run.
- Frame gate (`hold_until_shown`): the window may hold the next run until the frame of the trace just published
  is on screen (at most HOLD_MAX_MS). On a machine with few cores the engine, the render thread and its
  rasteriser threads otherwise compete for them during a drag, and the UI thread waited for a CPU longer than
  it ran; taking turns, each trace reaches the screen sooner and the UI thread keeps answering.
- A failed run reports its message through `AppState.set_error`; the last good trace stays on screen.
- Kernels: the first engine runs compute.fused's numpy kernels, so the first trace never waits for numba (a
  compile takes ~25 s of CPU on an install's first start, a load from its disk cache ~0.6 s). Once the first
  trace is out, a child process (app/kernel_warmup.py's one entry point, at low priority; frozen: the bundle's
  own executable) compiles compute.fused_nb's kernels into numba's disk cache or finds them there; when it
  succeeds, the worker thread rebuilds the engine with the compiled kernels (a cache load) and runs them from
  then on. Nothing is ever compiled in this process's threads, never on the UI thread.
  `kernels` says which run ("numpy", "warming", "compiled").
- `--device auto` asks torch whether CUDA is there only where a CUDA device can exist at all (an NVIDIA
  driver node): importing torch takes seconds that the first trace would wait for.
- When the engine cannot be made on the device asked for (`cuda` without CUDA, a broken driver), it is made
  on the CPU instead and `device_fallback(device, reason)` says so; when it cannot be made at all,
  `load_failed(reason)` does (the window keeps a visible note either way, never "loading…" forever).
"""
from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, QProcess, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtGui import QGuiApplication

from app import heap, kernel_warmup
from compute.trace import Knobs
from scene import gc_main_thread
from scene.gc_main_thread import collect_on_main_thread

log = logging.getLogger(__name__)
RESAMPLE_FIELDS = ("temperature", "top_p", "sample_seed")


@dataclass(frozen=True)
class Request:
    serial: int
    prompt: str
    knobs: Knobs
    max_new_tokens: int
    base: object = None  # last good Trace when a resample is enough, else None
    config: object = None  # a ModelConfig to switch to: the engine is rebuilt for it before the run
    weights: str | None = None  # "trained" | "random" to switch to: the engine is rebuilt with them (view files)


HOLD_MAX_MS = 100  # the longest the next run waits for the frame of the last trace (see hold_until_shown)
SETTLE_QUIET_MS = 1500  # the engine idle this long after a (re)load: freeze start-up's objects for the collector
SWITCH_INTERVAL_S = 0.0002  # bench/app.py: max UI stall 23-31 ms at 1 ms, 13-17 ms at 0.2 ms


UNTIL_SENTENCE_END = 0  # max_new_tokens value: generate until '.' or a newline (at most SENTENCE_MAX_TOKENS)
SENTENCE_MAX_TOKENS = 64
SENTENCE_ENDS = (".", "\n")


def cut_at_sentence_end(trace):
    """The trace up to and with its first generated '.' or newline (the whole trace if none came)."""
    for k, (piece, _) in enumerate(trace.tokens[trace.prompt_len:]):
        if piece in SENTENCE_ENDS:
            if k + 1 == len(trace.passes):
                return trace
            return replace(trace, tokens=list(trace.tokens[:trace.prompt_len + k + 1]),
                           passes=list(trace.passes[:k + 1]))
    return trace


def only_sampling_changed(old: Knobs, new: Knobs) -> bool:
    """True when new differs from old only in fields that do not touch the layers."""
    fields = {f: getattr(old, f) for f in RESAMPLE_FIELDS}
    return replace(new, **fields) == old


CUDA_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version", "/dev/dxg")  # dxg: WSL2
WARMUP_COMPILED = kernel_warmup.EXIT_COMPILED  # the child compiled (not loaded) some kernels: run once more to check
_warmed = False  # a kernel warm-up child succeeded in this process: numba's disk cache holds the kernels


def cuda_possible() -> bool:
    """False where no CUDA device can exist, known without importing torch: macOS, or Linux without an NVIDIA
    driver node. True elsewhere (torch has to be asked)."""
    if sys.platform == "darwin":
        return False
    if sys.platform.startswith("linux"):
        return any(os.path.exists(node) for node in CUDA_NODES)
    return True


def engine_device(device: str) -> str:
    """The device the engine is built for: "auto" is "cpu" where CUDA cannot exist (torch stays unimported)."""
    return "cpu" if device == "auto" and not cuda_possible() else device


def one_line(exc: BaseException) -> str:
    """'TypeName: first line of the message' (torch's CUDA errors span several lines)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def device_description(model) -> str:
    """'CPU' or 'CUDA · <device name>' for the status bar (torch is already imported when this runs)."""
    device = str(getattr(model, "device", "cpu"))
    if device.startswith("cuda"):
        import torch

        try:
            return f"CUDA · {torch.cuda.get_device_name(torch.device(device))}"
        except Exception:  # noqa: BLE001 - a name is cosmetic
            return "CUDA"
    return "CPU"


class _EngineObject(QObject):
    """Lives in the worker thread; all slots run there."""

    ready = Signal(str)  # device description
    fell_back = Signal(str, str)  # device asked for, why it could not be used (the engine runs on the CPU)
    finished = Signal(int, object, float)  # serial, Trace, seconds
    failed = Signal(int, str)
    upgraded = Signal(bool, str)  # the compiled kernels run now (True), or why not ("" when they do)

    def __init__(self, device: str = "auto"):
        super().__init__()
        self._device = device
        self.weights = "trained"  # the weights chosen ("trained" | "random"); set before load, kept on switches
        self.compiled = False  # engines are built with compute.fused_nb's kernels (set once they are cached)
        self.model = None
        self.after_run = None  # optional callable(trace), run here after each run (see EngineController)

    @Slot()
    def load(self) -> None:
        try:
            # The toy's ops are tiny: one OpenMP thread (ToyK3 sets torch to 1 thread too). Set before torch
            # loads, so that no thread of this process ever opens an OpenMP team.
            os.environ.setdefault("OMP_NUM_THREADS", "1")
            from compute.engine import ToyK3  # imports torch: here, off the UI thread

            try:
                self.model = ToyK3(device=engine_device(self._device), weights=self.weights,
                                   compiled=self.compiled)
            except Exception as exc:  # noqa: BLE001 - the CPU is tried next
                if self._device == "cpu":
                    raise
                log.warning("engine: %s failed (%s); running on the CPU", self._device, one_line(exc))
                self.model = ToyK3(device="cpu", weights=self.weights, compiled=self.compiled)
                self.fell_back.emit(self._device, one_line(exc))
            log.info("engine loaded on %s", device_description(self.model))
            self.ready.emit(device_description(self.model))
        except Exception as exc:  # noqa: BLE001 - shown to the user, app keeps running
            log.exception("engine: loading failed")
            self.failed.emit(-1, one_line(exc))

    @Slot()
    def upgrade(self) -> None:
        """Rebuild the engine with the compiled kernels, which a warm-up child has put in numba's disk cache (so
        this is a cache load, not a compile); the numpy engine stays when that fails."""
        model = self.model
        if model is None or self.compiled:
            return
        t0 = time.perf_counter()
        try:
            from compute.engine import ToyK3

            new = ToyK3(config=model.config, device=model.device, weights=self.weights, compiled=True)
        except Exception as exc:  # noqa: BLE001 - the numpy kernels keep running
            log.warning("engine: the compiled kernels could not be loaded (%s); numpy kernels run", one_line(exc))
            self.upgraded.emit(False, one_line(exc))
            return
        if not new.compiled:
            self.upgraded.emit(False, "compute.fused_nb did not compile")
            return
        self.model, self.compiled = new, True
        log.info("engine: compiled kernels loaded in %.0f ms", (time.perf_counter() - t0) * 1000)
        self.upgraded.emit(True, "")

    @Slot(object, bool)
    def dispose(self, traces: list, trim: bool = True) -> None:
        """Receives traces the UI no longer shows: their last references go away here, in this thread, so
        freeing their ~10^4 arrays each never stalls the UI thread. One at a time, giving the GIL back in
        between: freeing a trace is ~3 ms of C code no other thread can interrupt. trim: give the freed memory
        back to the system (only when the app is quiet: malloc_trim takes ~20 ms and holds malloc's locks, so
        every other thread's allocations, the UI thread's too, wait for it)."""
        while traces:
            traces.pop()
            time.sleep(0)
        if trim:
            heap.trim()  # malloc keeps the freed chunks otherwise: RSS crept up over an hour (app/heap.py)

    @Slot(object)
    def compute(self, request: Request) -> None:
        if self.model is None:
            self.failed.emit(request.serial, "engine not loaded")
            return
        t0 = time.perf_counter()
        model = self.model
        try:
            if request.config is not None or request.weights is not None:  # another model or other weights:
                from compute.engine import ToyK3  # built and run here; kept only if the run works

                self.model = ToyK3(config=request.config or model.config, device=model.device,
                                   weights=request.weights or self.weights, compiled=self.compiled)
            if request.base is not None:
                trace = self.model.resample(request.base, request.knobs)
            else:
                until_end = request.max_new_tokens == UNTIL_SENTENCE_END
                trace = self.model.run(request.prompt, knobs=request.knobs, max_new_tokens=SENTENCE_MAX_TOKENS
                                       if until_end else request.max_new_tokens)
                if until_end:
                    trace = cut_at_sentence_end(trace)
        except Exception as exc:  # noqa: BLE001 - shown to the user, last good trace stays
            self.model = model  # a model that failed to build or run is not kept
            log.exception("engine: run %d failed (prompt %r)", request.serial, request.prompt)
            self.failed.emit(request.serial, f"{type(exc).__name__}: {exc}")
            return
        if request.weights is not None:
            self.weights = request.weights  # kept for later rebuilds (another model) once it ran
        seconds = time.perf_counter() - t0
        log.debug("engine: run %d (%s) took %.1f ms", request.serial,
                  "resample" if request.base is not None else "full", seconds * 1000)
        if self.after_run is not None and request.config is None:  # a new model: the scene re-lays first
            try:
                self.after_run(trace)
            except Exception:  # noqa: BLE001 - a preparation only: whoever needs it computes it again
                log.exception("engine: after-run preparation failed")
        self.finished.emit(request.serial, trace, seconds)


class EngineController(QObject):
    """UI-thread side: takes requests from AppState, runs them in the worker, publishes traces."""

    _load = Signal()
    _compute = Signal(object)
    _dispose = Signal(object, bool)
    busy_changed = Signal(bool)
    device_ready = Signal(str)
    device_fallback = Signal(str, str)  # device asked for, reason; the engine runs on the CPU
    load_failed = Signal(str)  # reason; no engine runs
    trace_published = Signal(object, float)  # Trace, engine seconds (after state.set_trace)
    config_applied = Signal(object)  # ModelConfig: the engine runs it now (emitted before its first trace)
    config_failed = Signal(object, str)  # ModelConfig, reason: the engine could not run it; the old one stays
    weights_applied = Signal(str)  # "trained" | "random": the engine runs the weights chosen (before its trace)
    kernels_changed = Signal(str)  # "warming" | "compiled" | "numpy" (see `kernels`)
    _upgrade = Signal()

    def __init__(self, state, max_new_tokens: int = 4, device: str = "auto", parent=None, compiled: bool = True):
        """compiled: switch to compute.fused_nb's kernels after the first trace when numba is there (False:
        the numpy kernels throughout)."""
        super().__init__(parent)
        self.state = state
        self.max_new_tokens = max_new_tokens
        self.device_text = ""
        self.fallback: tuple[str, str] | None = None  # (device asked for, reason) when the CPU stood in
        self.load_error = ""  # why no engine could be made ("" = it was, or is loading)
        self._serial = 0
        self._in_flight: Request | None = None
        self._pending: tuple[str, Knobs] | None = None
        self._pending_config = None  # a ModelConfig waiting to be switched to (latest wins)
        self._pending_weights: str | None = None  # "trained" | "random" waiting to be switched to
        self._good = None  # last good trace
        self._want_compiled = compiled
        self.kernels = "numpy"  # "numpy" | "warming" (a child fills numba's cache) | "compiled"
        self._warmup: QProcess | None = None
        self._warmup_rechecked = False
        self._held = False  # the next run waits for the frame of the last trace (hold_until_shown)
        self._hold_timer = QTimer(self)
        self._hold_timer.setSingleShot(True)
        self._hold_timer.setInterval(HOLD_MAX_MS)
        self._hold_timer.timeout.connect(self.release)
        self._loaded = False
        self._stopped = False
        self._graveyard: list = []  # traces no longer shown, to be freed in the worker thread
        self._trim_owed = False  # traces were freed without a trim (in a drag): the quiet timer trims
        self._dispose_timer = QTimer(self)
        self._dispose_timer.setSingleShot(True)
        self._dispose_timer.setInterval(1000)
        self._dispose_timer.timeout.connect(self._bury)
        # once the engine is loaded and quiet, the garbage collector freezes what start-up made (short collections
        # from then on, scene/gc_main_thread.py); again after the engine is replaced
        self._settle_timer = QTimer(self)
        self._settle_timer.setSingleShot(True)
        self._settle_timer.setInterval(SETTLE_QUIET_MS)
        self._settle_timer.timeout.connect(self._settle_heap)
        self.thread = QThread()
        self.thread.setObjectName("k3-engine")
        self.engine = _EngineObject(device)
        self.engine.moveToThread(self.thread)
        self._load.connect(self.engine.load)
        self._compute.connect(self.engine.compute)
        self._dispose.connect(self.engine.dispose)
        self.engine.ready.connect(self._on_ready)
        self.engine.fell_back.connect(self._on_fell_back)
        self.engine.finished.connect(self._on_finished)
        self.engine.failed.connect(self._on_failed)
        self._upgrade.connect(self.engine.upgrade)
        self.engine.upgraded.connect(self._on_upgraded)
        state.knobs_requested.connect(lambda knobs: self.request(self._current_prompt(), knobs))
        state.prompt_requested.connect(lambda text: self.request(text, self.state.knobs))

    def set_after_run(self, fn) -> None:
        """fn(trace) runs in the worker thread after each run, before the trace is published: work that the
        UI would otherwise do when the trace arrives (e.g. the 3D view's cell colours), done while the UI
        thread is idle. It must not touch widgets; its errors are printed and ignored."""
        self.engine.after_run = fn

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread and load the engine there; the first trace follows automatically."""
        if not self.thread.isRunning() and not self._stopped:
            # the engine, the render thread and the UI share the GIL; a short switch interval keeps each of
            # the UI thread's waits for it (one per signal handler) well under a millisecond
            sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
            collect_on_main_thread()  # no garbage collection (of Qt objects) in the engine thread
            self.thread.start()
            self._load.emit()
            if self._pending is None:
                self._pending = (self.state.prompt, self.state.knobs)

    def stop(self) -> None:
        """Finish the run in flight (if any) and end the thread; start() is a no-op afterwards."""
        self._stopped = True
        self._pending = None
        self._settle_timer.stop()
        gc_main_thread.thaw()  # what was frozen at start-up (this window's objects too) can be collected again
        self._stop_warmup()
        if self.thread.isRunning():
            self.thread.quit()
            self.thread.wait(30000)

    @property
    def busy(self) -> bool:
        return self._in_flight is not None

    @property
    def kernels_settled(self) -> bool:
        """No switch of kernels is to come: the compiled ones run, or the numpy ones will stay."""
        return self.kernels != "warming" and (self.kernels == "compiled" or not self._upgrade_possible())

    # --- compiled kernels --------------------------------------------------------------------
    def _upgrade_possible(self) -> bool:
        model = self.engine.model
        return (self._want_compiled and not self._stopped and not self.load_error and kernel_warmup.wanted()
                and (model is None or getattr(model, "backend", "") == "numpy"))

    def _start_upgrade(self) -> None:
        """After the first trace: a child fills numba's cache (once per process), then the worker loads it."""
        if self.kernels != "numpy" or not self._upgrade_possible():
            return
        self._set_kernels("warming")
        if _warmed:
            self._upgrade.emit()
            return
        self._start_warmup_child()

    def _start_warmup_child(self) -> None:
        proc = self._warmup = QProcess(self)
        program, *args = kernel_warmup.child_command()  # frozen-aware: `python -m ...` or the bundle's executable
        proc.setProgram(program)
        proc.setArguments(args)
        proc.setWorkingDirectory(kernel_warmup.CODE_ROOT)  # `-m app.kernel_warmup` finds this checkout too
        proc.finished.connect(self._on_warmup_finished)
        proc.errorOccurred.connect(self._on_warmup_error)
        proc.start()

    def _on_warmup_finished(self, code: int, _status=None) -> None:
        global _warmed
        proc, self._warmup = self._warmup, None
        if proc is None or self._stopped:
            return
        err = bytes(proc.readAllStandardError()).decode("utf-8", "replace").strip().splitlines()
        proc.deleteLater()
        if code == 0:
            _warmed = True
            self._upgrade.emit()
        elif code == WARMUP_COMPILED and not self._warmup_rechecked:
            self._warmup_rechecked = True  # compiled and cached now: a second child must find them all cached
            self._start_warmup_child()
        else:
            log.warning("engine: the compiled kernels could not be prepared (exit %d: %s); numpy kernels run", code,
                        err[-1] if err else "no message")
            self._set_kernels("numpy", final=True)

    def _on_warmup_error(self, error) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._warmup is not None:
            proc, self._warmup = self._warmup, None
            proc.deleteLater()
            log.warning("engine: the kernel warm-up could not start; numpy kernels run")
            self._set_kernels("numpy", final=True)

    @Slot(bool, str)
    def _on_upgraded(self, ok: bool, _reason: str) -> None:
        self._set_kernels("compiled" if ok else "numpy", final=not ok)
        gc_main_thread.freeze()  # numba's objects: out of the young generations at once, settled when quiet
        self._settle_timer.start()

    def _settle_heap(self) -> None:
        """The quiet moment after a (re)load: freeze the long-lived objects (scene/gc_main_thread.settle)."""
        if self._stopped:
            return
        if self.busy or self._pending is not None or not self.kernels_settled or \
                QGuiApplication.mouseButtons() != Qt.MouseButton.NoButton:
            self._settle_timer.start()  # not quiet yet (a run, a drag, a switch of kernels to come)
            return
        ms = gc_main_thread.settle()
        log.info("heap: long-lived objects frozen for the garbage collector (%.0f ms)", ms)

    def _set_kernels(self, kernels: str, final: bool = False) -> None:
        if final:
            self._want_compiled = False  # no second try in this session
        self.kernels = kernels
        self.kernels_changed.emit(kernels)

    def _stop_warmup(self) -> None:
        proc, self._warmup = self._warmup, None
        if proc is not None and proc.state() != QProcess.ProcessState.NotRunning:
            proc.finished.disconnect(self._on_warmup_finished)
            proc.kill()
            proc.waitForFinished(2000)

    # --- requests ----------------------------------------------------------------------------
    def _current_prompt(self) -> str:
        """Knob changes re-run the prompt on screen (a rejected new prompt must not poison every slider)."""
        return self._good.text if self._good is not None else self.state.prompt

    def request(self, prompt: str, knobs: Knobs) -> None:
        """Latest wins: replaces any request that has not started yet."""
        self._pending = (prompt, knobs)
        if self._settle_timer.isActive():
            self._settle_timer.start()  # not while the user drags a slider: after the last change
        self._dispatch()

    def request_config(self, config) -> None:
        """Switch the engine to another model (built in the worker thread) and run the prompt on screen with
        it; `config_applied` then the new trace follow, or `config_failed` and the current model stays."""
        self._pending_config = config
        if self._pending is None:
            self._pending = (self._current_prompt(), self.state.knobs)
        self._dispatch()

    def set_weights(self, weights: str) -> None:
        """The weights the first engine is built with (before start(); later use request_weights)."""
        if self.thread.isRunning():
            raise RuntimeError("the engine has started: use request_weights")
        self.engine.weights = weights

    def request_weights(self, weights: str) -> None:
        """Rebuild the engine with "trained" or "random" weights (in the worker thread) and run the prompt on
        screen with them; the new trace's `weights_name` says which ones ran."""
        self._pending_weights = weights
        if self._pending is None:
            self._pending = (self._current_prompt(), self.state.knobs)
        self._dispatch()

    def hold_until_shown(self) -> None:
        """Start no new run until release() (the frame of the trace just published is on screen) or HOLD_MAX_MS."""
        self._held = True
        self._hold_timer.start()

    def release(self) -> None:
        """The frame of the last trace is on screen: the next run may start."""
        if self._held:
            self._held = False
            self._hold_timer.stop()
            self._dispatch()

    def _dispatch(self) -> None:
        if self._in_flight is not None or self._pending is None or not self._loaded or self._held:
            return
        prompt, knobs = self._pending
        self._pending = None
        config, self._pending_config = self._pending_config, None
        weights, self._pending_weights = self._pending_weights, None
        if config is not None or weights is not None:
            self._serial += 1
            self._in_flight = Request(self._serial, prompt, knobs, self.max_new_tokens, None, config, weights)
            self.busy_changed.emit(True)
            self._compute.emit(self._in_flight)
            return
        base = None
        good = self._good
        same_length = good is not None and len(good.tokens) - good.prompt_len == self.max_new_tokens
        if good is not None and good.text == prompt and same_length and only_sampling_changed(good.knobs, knobs):
            if good.knobs == knobs:
                self.state.set_trace(good)  # nothing to compute
                return
            base = good
        self._serial += 1
        self._in_flight = Request(self._serial, prompt, knobs, self.max_new_tokens, base)
        self.busy_changed.emit(True)
        self._compute.emit(self._in_flight)

    # --- answers (queued into the UI thread) -------------------------------------------------
    @Slot(str)
    def _on_ready(self, device: str) -> None:
        self._loaded = True
        self.device_text = device
        self.device_ready.emit(device)
        self._dispatch()

    @Slot(str, str)
    def _on_fell_back(self, device: str, reason: str) -> None:
        self.fallback = (device, reason)
        self.device_fallback.emit(device, reason)

    @Slot(int, object, float)
    def _on_finished(self, serial: int, trace, seconds: float) -> None:
        done, self._in_flight = self._in_flight, None
        if done is not None and (done.config is not None or done.weights is not None):
            gc_main_thread.thaw()  # the engine was replaced: the old one (frozen at start-up) may be collected
            self._settle_timer.start()
        if done is not None and done.config is not None:
            self.config_applied.emit(done.config)
        if done is not None and done.weights is not None:
            self.weights_applied.emit(done.weights)
        old = self.state.trace
        first = self._good is None
        self._good = trace
        self.state.set_trace(trace)
        self.trace_published.emit(trace, seconds)
        self._dispatch()
        if first:
            self._start_upgrade()
            gc_main_thread.freeze()  # start-up's objects: out of the young generations at once, settled when quiet
            self._settle_timer.start()
        if old is not None and old is not trace:
            # freed in the worker thread once the UI has dropped it, when the app is quiet (or a few have
            # piled up in a long drag), so that freeing competes neither with a frame nor with the next run
            self._graveyard.append(old)
            if len(self._graveyard) >= 8:
                self._bury(trim=False)  # a drag: freed now, memory given back once the app is quiet
            self._dispose_timer.start()
        del old
        if self._in_flight is None:
            self.busy_changed.emit(False)

    def _bury(self, trim: bool = True) -> None:
        """Send the traces no longer shown to the worker to be freed; trim once the app is quiet (the timer)."""
        if self._graveyard and self.thread.isRunning():
            dead, self._graveyard = self._graveyard, []
            self._dispose.emit(dead, trim)
        elif trim and self._trim_owed and self.thread.isRunning():
            self._dispose.emit([], True)
        self._trim_owed = not trim

    @Slot(int, str)
    def _on_failed(self, serial: int, message: str) -> None:
        if serial < 0:  # the engine itself could not be made: nothing will ever run
            self.load_error = message
            self._pending = None
            self.load_failed.emit(message)
            self.state.set_error(message)
            return
        done, self._in_flight = self._in_flight, None
        if done is not None and done.config is not None:
            self.config_failed.emit(done.config, message)
        if self._good is not None:
            self.state.prompt = self._good.text  # the prompt of the trace still on screen
        self.state.set_error(message)
        self._dispatch()
        if self._in_flight is None:
            self.busy_changed.emit(False)
