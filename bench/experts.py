"""Expert dock speed, measured under Xvfb; prints one JSON object.

    python bench/experts.py          # starts its own Xvfb on :98 when DISPLAY is unset

Waits use a QEventLoop (it releases the GIL like the app's exec(); QTest.qWait would not, and would starve the
engine thread). "Painted" = the end of ExpertGridWidget.paintEvent (timed by wrapping it at class level).

grid_update_ms_median   state.select_layer / select_token (alternating, other token / MoE layer every time) ->
                        the expert dock's signal handlers -> update() -> event loop -> grid painted (target <= 5)
grid_handlers_ms_median the synchronous part: select_layer / select_token returns (the dock's refresh ran)
grid_paint_ms_median    the grid's paintEvent alone (the rest is the event loop: layouts, other widgets)
floor_repaint_ms_median a bare QWidget of the grid's size filled with one colour: update() -> painted, the
                        same way (the event loop + backing-store cost nothing can avoid)
grid_over_floor         grid_update_ms_median / floor_repaint_ms_median
bias_to_grid_ms_median  state.request_knobs(expert_bias={17: b}) -> app/engine/worker.py EngineController runs
                        ToyK3 in its QThread -> state.set_trace -> dock refresh -> grid painted (target <= 100)
engine_in_worker_ms_median   the worker's own time for those runs (trace_published seconds)
engine_alone_ms_median  ToyK3.run with the same prompt / knobs, synchronously in this thread (the floor)
bias_over_engine        bias_to_grid_ms_median / engine_alone_ms_median
bias_to_grid_and_scene_ms_median  the same in the app's main window with the expert dock raised: request ->
                        the grid painted AND the 3D view's first frame of the new trace on screen (target <= 100)
bias_request_to_worker_ms_median / bias_worker_to_refreshed_ms_median / bias_refreshed_to_painted_ms_median
                        the bias path's parts: request -> the worker starts the run; the worker's run ends (its
                        own clock) -> the trace_changed handlers have run in the UI thread (the dock's refresh
                        included); -> grid painted (the previous Trace's ~13k arrays are freed in this part)
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from xdisplay import x_display  # noqa: E402

PROMPT = "로봇이 컵을 집었다"
NEW_TOKENS = 4  # the app's EngineController default
WINDOW = (1000, 950)  # the size tests/app/test_experts.py uses


def main() -> dict:
    with x_display("bench/experts.py"):
        return _run()


def _run() -> dict:
    from PySide6.QtCore import QCoreApplication, QEventLoop, Qt, QTimer
    from PySide6.QtGui import QColor, QPainter
    from PySide6.QtWidgets import QApplication, QMainWindow, QWidget

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication([])

    from app import i18n
    from app.docks.experts import ExpertGridDock
    from app.docks.experts.model import moe_layers
    from app.state import AppState
    from app.widgets import expert_grid
    from app.engine import worker as worker_mod
    from app.engine.worker import EngineController

    i18n.set_language("en")

    # --- "painted" hook: wrap the grid's paintEvent at class level --------------------------------
    marks = {"paint_end": None, "paint_ms": [], "loop": None, "armed": True}
    original_paint = expert_grid.ExpertGridWidget.paintEvent

    def timed_paint(self, event):
        t = time.perf_counter()
        original_paint(self, event)
        end = time.perf_counter()
        if marks["armed"]:
            marks["paint_ms"].append((end - t) * 1e3)
            marks["paint_end"] = end
            if marks["loop"] is not None:
                marks["loop"].quit()

    expert_grid.ExpertGridWidget.paintEvent = timed_paint

    def wait_paint(timeout_ms: int = 2000) -> float | None:
        """Run the event loop until the next armed paint ends; returns its perf_counter time."""
        if marks["paint_end"] is not None:
            return marks["paint_end"]
        loop = QEventLoop()
        marks["loop"] = loop
        guard = QTimer()
        guard.setSingleShot(True)
        guard.timeout.connect(loop.quit)
        guard.start(timeout_ms)
        loop.exec()
        guard.stop()
        marks["loop"] = None
        return marks["paint_end"]

    def pump(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    # worker-side timestamps for the bias path's breakdown (wrapped before the controller connects to it)
    stamps = {}
    original_compute = worker_mod._EngineObject.compute

    def timed_compute(self, request):
        stamps["worker_start"] = time.perf_counter()
        original_compute(self, request)

    from PySide6.QtCore import Slot

    worker_mod._EngineObject.compute = Slot(object)(timed_compute)

    # --- the dock with the real worker --------------------------------------------------------------
    state = AppState()
    state.prompt = PROMPT
    engine = EngineController(state, max_new_tokens=NEW_TOKENS, device="cpu")
    engine_ms: list[float] = []
    engine.trace_published.connect(lambda _t, s: engine_ms.append(s * 1e3))
    engine.start()
    deadline = time.monotonic() + 180
    while (state.trace is None or engine.busy) and time.monotonic() < deadline:
        pump(10)
    if state.trace is None:
        raise SystemExit("engine produced no trace")
    engine_ms.clear()

    win = QMainWindow()
    dock = ExpertGridDock(state, win)
    win.addDockWidget(Qt.RightDockWidgetArea, dock)
    win.resize(*WINDOW)
    win.show()
    pump(400)
    grid = dock.grid

    # floor: a bare widget of the grid's size, filled with one colour, in its own top-level window
    class Bare(QWidget):
        painted_at = None

        def paintEvent(self, event):  # noqa: N802
            p = QPainter(self)
            p.fillRect(self.rect(), QColor(20, 24, 30))
            p.end()
            Bare.painted_at = time.perf_counter()
            if marks["loop"] is not None:
                marks["loop"].quit()

    bare = Bare()
    bare.resize(grid.size())
    bare.move(WINDOW[0] + 10, 0)
    bare.show()
    pump(300)

    def floor_once() -> float:
        Bare.painted_at = None
        t0 = time.perf_counter()
        bare.update()
        loop = QEventLoop()
        marks["loop"] = loop
        QTimer.singleShot(2000, loop.quit)
        if Bare.painted_at is None:
            loop.exec()
        marks["loop"] = None
        return ((Bare.painted_at or time.perf_counter()) - t0) * 1e3

    # --- grid update: other token / layer --------------------------------------------------------
    layers = moe_layers(state.trace)
    n_tok = len(state.trace.tokens) - 1  # the last sampled token is never fed back (no routing)
    plan = []
    for i in range(80):
        if i % 2 == 0:
            plan.append(("layer", layers[(i * 37 + 5) % len(layers)]))
        else:
            plan.append(("token", (state.token + 1 + i) % n_tok))

    grid_ms, floor_ms, handlers_ms, misses = [], [], [], 0
    marks["paint_ms"].clear()
    for i, (kind, value) in enumerate(plan):
        if kind == "layer" and value == state.layer:
            value = layers[(layers.index(value) + 1) % len(layers)]
        if kind == "token" and value == state.token:
            value = (value + 1) % n_tok
        marks["paint_end"] = None
        t0 = time.perf_counter()
        if kind == "layer":
            state.select_layer(value)
        else:
            state.select_token(value)
        returned = time.perf_counter()
        end = wait_paint()
        if end is None:
            misses += 1
        elif i >= 4:  # warm-up
            grid_ms.append((end - t0) * 1e3)
            handlers_ms.append((returned - t0) * 1e3)
        if i >= 4:
            floor_ms.append(floor_once())  # interleaved: both see the same machine load
    grid_paint = marks["paint_ms"][4:]

    # --- bias drag -> worker -> trace -> grid ------------------------------------------------------
    state.select_layer(36)
    state.select_token(0)
    pump(100)
    bias_ms, bias_misses = [], 0
    values = [round(0.05 + 0.03 * i, 2) for i in range(14)]
    to_worker, to_ui, ui_part = [], [], []

    def on_trace(_t):  # connected after the dock's refresh, so it runs before the paint
        marks["armed"] = True
        stamps["trace_set"] = time.perf_counter()

    state.trace_changed.connect(on_trace)
    for b in values:
        while engine.busy:
            pump(5)
        marks["paint_end"] = None
        marks["armed"] = False  # only the paint after the new trace arrived counts
        t0 = time.perf_counter()
        state.request_knobs(expert_bias={17: b})
        end = wait_paint(10000)
        if end is None:
            bias_misses += 1
        else:
            bias_ms.append((end - t0) * 1e3)
            to_worker.append((stamps["worker_start"] - t0) * 1e3)
            to_ui.append((stamps["trace_set"] - stamps["worker_start"]) * 1e3 - engine_ms[-1])
            ui_part.append((end - stamps["trace_set"]) * 1e3)
        marks["armed"] = True
    worker_ms = engine_ms[-len(values):]
    engine.stop()
    win.close()

    # --- the same in the main window: bias -> worker -> trace -> grid painted AND the 3D frame shown -----
    both_ms = _bias_in_main_window(values, marks, wait_paint, pump)

    # the engine alone, same prompt / knobs, synchronously (floor of the bias path)
    from compute.engine import ToyK3
    from compute.trace import Knobs

    model = ToyK3(device="cpu")
    model.run(PROMPT, max_new_tokens=NEW_TOKENS)
    alone = []
    for b in values[:8]:
        t = time.perf_counter()
        model.run(PROMPT, max_new_tokens=NEW_TOKENS, knobs=Knobs(expert_bias={17: b}))
        alone.append((time.perf_counter() - t) * 1e3)

    med = statistics.median
    g, f = med(grid_ms), med(floor_ms)
    bz, ea = med(bias_ms), med(alone)
    return dict(
        grid_update_ms_median=round(g, 3), grid_update_ms_p90=round(sorted(grid_ms)[int(0.9 * len(grid_ms))], 3),
        grid_handlers_ms_median=round(med(handlers_ms), 3), grid_paint_ms_median=round(med(grid_paint), 3),
        floor_repaint_ms_median=round(f, 3), grid_over_floor=round(g / f, 2),
        bias_to_grid_ms_median=round(bz, 1), engine_in_worker_ms_median=round(med(worker_ms), 1),
        engine_alone_ms_median=round(ea, 1), bias_over_engine=round(bz / ea, 2),
        bias_request_to_worker_ms_median=round(med(to_worker), 2),
        bias_worker_to_refreshed_ms_median=round(med(to_ui), 2),
        bias_refreshed_to_painted_ms_median=round(med(ui_part), 2),
        bias_to_grid_and_scene_ms_median=round(med(both_ms), 1) if both_ms else None,
        grid_samples=len(grid_ms), bias_samples=len(bias_ms), missed_paints=misses + bias_misses,
        grid_widget=f"{grid.width()}x{grid.height()}", window=f"{WINDOW[0]}x{WINDOW[1]}",
        new_tokens=NEW_TOKENS, backend=model.backend)


def _bias_in_main_window(values, marks, wait_paint, pump) -> list[float]:
    """The app's main window with the expert dock on top: state.request_knobs(expert_bias={17: b}) -> the
    worker's run -> set_trace -> the grid painted and the 3D view's first frame drawn from that trace shown
    (SceneView.trace_version); the time until both are on screen."""
    import tempfile

    from PySide6.QtCore import QEventLoop, QTimer

    from app.window.main_window import MainWindow

    win = MainWindow(settings_path=os.path.join(tempfile.mkdtemp(), "bench.ini"), language="en")
    win.show()
    deadline = time.monotonic() + 180
    while (win.state.trace is None or win.engine.busy) and time.monotonic() < deadline:
        pump(10)
    win.docks["ExpertGridDock"].raise_()
    pump(400)
    state, gl = win.state, win.scene.gl
    out = []
    for b in values:
        while win.engine.busy:
            pump(5)
        pump(30)
        marks["paint_end"] = None
        marks["armed"] = False
        shown = []
        loop = QEventLoop()

        def on_trace(_t):
            marks["armed"] = True

        def on_swap():
            if state.trace is not None and state.trace.knobs.expert_bias.get(17) == b and \
                    gl.shown_version >= win.scene.trace_version and not shown:
                shown.append(time.perf_counter())
                loop.quit()

        state.trace_changed.connect(on_trace)
        gl.frameSwapped.connect(on_swap)
        t0 = time.perf_counter()
        state.request_knobs(expert_bias={17: b})
        QTimer.singleShot(10000, loop.quit)
        loop.exec()
        grid_end = wait_paint(10000)
        gl.frameSwapped.disconnect(on_swap)
        state.trace_changed.disconnect(on_trace)
        marks["armed"] = True
        if shown and grid_end is not None:
            out.append((max(shown[0], grid_end) - t0) * 1e3)
    win.engine.stop()
    win.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main()))
