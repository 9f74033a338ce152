"""The engine in a worker thread: the UI thread never blocks on torch.

- torch (through compute.engine) is imported inside the worker thread, after the window is up.
- Requests are coalesced, latest value wins: at most one run is in flight; newer requests that arrive
  meanwhile replace each other, and only the newest runs next (so a slider drag shows live intermediate
  traces but never queues a backlog).
- When only temperature / top-p (or the sample seed) changed for the same prompt, the worker calls
  `ToyK3.resample` on the last good trace instead of a full run.
- Frame gate (`hold_until_shown`): the window may hold the next run until the frame of the trace just published
  is on screen (app/engine/housekeeping.py FrameGate, at most HOLD_MAX_MS).
- A failed run reports its message through `AppState.set_error`; the last good trace stays on screen.
- Kernels: the first engine runs the operators' numpy layer loop, so the first trace never waits for numba;
  once it is out, a warm-up child fills numba's cache and the worker thread rebuilds the engine with the compiled
  kernels (app/engine/kernel_upgrade.py). `kernels` says which run ("numpy", "warming", "compiled").
- Housekeeping (freeing the traces no longer shown in the worker thread, malloc_trim, the garbage collector's
  freeze / settle / thaw, the switch interval) is scheduled by app/engine/housekeeping.py around the runs.
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

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.engine import housekeeping
from app.engine.housekeeping import FrameGate, Housekeeping
from app.engine.kernel_upgrade import KernelUpgrade
from compute.trace import Knobs
from scene import thread_priority

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
        thread_priority.lower_this_thread()  # the engine thread: the UI thread first when the cores are busy
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
        except Exception as exc:  # noqa: BLE001 - the numpy operators keep running
            log.warning("engine: the compiled kernels could not be loaded (%s); the numpy operators run", one_line(exc))
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
        """Receives traces the UI no longer shows and frees them here, in this thread (app/engine/housekeeping.py)."""
        housekeeping.dispose(traces, trim)

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
    busy_changed = Signal(bool)
    device_ready = Signal(str)
    device_fallback = Signal(str, str)  # device asked for, reason; the engine runs on the CPU
    load_failed = Signal(str)  # reason; no engine runs
    trace_published = Signal(object, float)  # Trace, engine seconds (after state.set_trace)
    config_applied = Signal(object)  # ModelConfig: the engine runs it now (emitted before its first trace)
    config_failed = Signal(object, str)  # ModelConfig, reason: the engine could not run it; the old one stays
    weights_applied = Signal(str)  # "trained" | "random": the engine runs the weights chosen (before its trace)
    kernels_changed = Signal(str)  # "warming" | "compiled" | "numpy" (see `kernels`)

    def __init__(self, state, max_new_tokens: int = 4, device: str = "auto", parent=None, compiled: bool = True):
        """compiled: switch to compute.fused_nb's kernels after the first trace when numba is there (False:
        the numpy operators throughout)."""
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
        self._gate = FrameGate(lambda: self._dispatch(), self)  # the next run waits for the last trace's frame
        self._loaded = False
        self._stopped = False
        self.thread = QThread()
        self.thread.setObjectName("k3-engine")
        self.engine = _EngineObject(device)
        self.engine.moveToThread(self.thread)
        self.kernel_upgrade = KernelUpgrade(compiled, lambda: self.engine.model, lambda: not self.load_error, self)
        self.kernel_upgrade.changed.connect(self.kernels_changed)
        self.housekeeping = Housekeeping(
            lambda: not self.busy and self._pending is None and self.kernels_settled, self.thread.isRunning, self)
        self._load.connect(self.engine.load)
        self._compute.connect(self.engine.compute)
        self.housekeeping.dispose_requested.connect(self.engine.dispose)
        self.engine.ready.connect(self._on_ready)
        self.engine.fell_back.connect(self._on_fell_back)
        self.engine.finished.connect(self._on_finished)
        self.engine.failed.connect(self._on_failed)
        self.kernel_upgrade.load.connect(self.engine.upgrade)
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
            self.housekeeping.engine_starting()  # the switch interval; collections on the main thread only
            self.thread.start()
            self._load.emit()
            if self._pending is None:
                self._pending = (self.state.prompt, self.state.knobs)

    def stop(self) -> None:
        """Finish the run in flight (if any) and end the thread; start() is a no-op afterwards."""
        self._stopped = True
        self._pending = None
        self.housekeeping.stop()  # what was frozen at start-up (this window's objects too) can be collected again
        self.kernel_upgrade.stop()
        if self.thread.isRunning():
            self.thread.quit()
            self.thread.wait(30000)

    @property
    def busy(self) -> bool:
        return self._in_flight is not None

    @property
    def kernels(self) -> str:
        """Which kernels run: "numpy" | "warming" (a child fills numba's cache) | "compiled" (app/engine/kernel_upgrade.py)."""
        return self.kernel_upgrade.kernels

    @property
    def kernels_settled(self) -> bool:
        """No switch of kernels is to come: the compiled ones run, or the numpy ones will stay."""
        return self.kernel_upgrade.settled

    @Slot(bool, str)
    def _on_upgraded(self, ok: bool, _reason: str) -> None:
        self.kernel_upgrade.loaded(ok)
        self.housekeeping.freeze_then_settle()  # numba's objects

    # --- requests ----------------------------------------------------------------------------
    def _current_prompt(self) -> str:
        """Knob changes re-run the prompt on screen (a rejected new prompt must not poison every slider)."""
        return self._good.text if self._good is not None else self.state.prompt

    def request(self, prompt: str, knobs: Knobs) -> None:
        """Latest wins: replaces any request that has not started yet."""
        self._pending = (prompt, knobs)
        self.housekeeping.postpone_settle()  # not while the user drags a slider: after the last change
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
        """Start no new run until release() (the frame of the trace just published is on screen) or
        app/engine/housekeeping.py's HOLD_MAX_MS."""
        self._gate.hold()

    def release(self) -> None:
        """The frame of the last trace is on screen: the next run may start."""
        self._gate.release()

    def _dispatch(self) -> None:
        if self._in_flight is not None or self._pending is None or not self._loaded or self._gate.held:
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
            self.housekeeping.thaw_then_settle()  # the engine was replaced: the old one may be collected
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
            self.kernel_upgrade.start()
            self.housekeeping.freeze_then_settle()  # start-up's objects
        if old is not None and old is not trace:
            self.housekeeping.retire(old)  # freed in the worker thread, when the app is quiet
        del old
        if self._in_flight is None:
            self.busy_changed.emit(False)

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
