"""Application speed, measured under Xvfb; prints one JSON object.

    python bench/app.py [--runs 3]     # under Xvfb; starts its own Xvfb when DISPLAY is unset

Start-up (each run a fresh process, medians over runs; the app and the floor alternate so both see the
same machine load):
- start_ms: process launch -> first frame of the main window's 3D view. The app starts through its real
  entry point (app.__main__.main: arguments, logging, display check, GL platform, the window) with a fresh
  settings file and --lang en. floor_start_ms: the same for a bare pyqtgraph GLViewWidget window.
  start_over_floor = start_ms / floor_start_ms. torch_at_first_frame says whether torch had been imported
  when that frame was shown (it must not: it loads in the engine thread), heavy_at_first_frame lists the
  modules only later features need (imageio, PIL, torch) that were imported by then (none should be).
- The project's modules are byte-compiled first (compileall, as `pip install` does): with PYTHONDONTWRITEBYTECODE
  set, as in some shells, every start would otherwise compile ~60 modules from source (~0.25 s on a 2-core
  machine) that an installed app never compiles; the floor's packages all come byte-compiled.
- first_trace_ms: that first frame -> the first frame drawn from the first engine result (the first Trace
  set on AppState, SceneView.trace_version reached by the frame on screen), in the same process: the engine
  thread loads (torch, trained weights) and runs the saved prompt meanwhile. first_trace_from_launch_ms:
  process launch -> that frame.

Interaction (one process, the window at its default size):
- max_ui_stall_ms: the longest gap of a 2 ms UI-thread timer while the α slider is dragged with the mouse
  (60 moves/s for 2 s) and the traces it causes arrive and are drawn.
- slider_to_screen_ms_median / _p90: slider value change -> the trace computed with that value is on screen
  (the first frame of the 3D view drawn from it, i.e. after set_trace), over separate changes; the UI thread
  waits in its event loop meanwhile, as in the app. engine_run_ms_median: the engine's own time for those
  runs (the floor of this latency). slider_to_screen_non_engine_ms_median / _p90: per change, the latency
  minus that change's engine run: what the app and the scene add (signals, set_trace, colours, the render
  thread's frame, the swap).
- engine_kernels: the kernels the engine ran for these ("compiled": numba, after the switch app/engine/worker.py makes
  once the first trace is out; "numpy" without numba or with K3_NO_NUMBA=1).
- export_4k_ms: 3840x2160 render of the 3D view with labels + PNG encoding to a file.
- explain_3d: what the 3D view drew of the Explain dock's result meanwhile: "lens+arcs" (the
  default: the lens column and the attention arcs, recomputed after each change on the dock's pool thread),
  "lens+arcs+route" with --route (the contribution route too), "off" with --no-explain.
- With --two-stacks (issue 41.3) all of the above runs with View -> Side by side (compare) on: the Compare dock's
  other model (DeepSeek-V3 by default picks) stands beside K3, re-running the window's prompt and explanation on
  its background lane after every change. second_stack_to_screen_ms_median / _p90: the same slider change ->
  the second pane's first frame drawn from ITS trace with that value (the window's trace comes first: the
  second model runs on the window's new trace); second_stack_model names the model.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _child_floor() -> None:
    from PySide6.QtCore import QCoreApplication, Qt, QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication([])
    import pyqtgraph.opengl as gl

    win = QMainWindow()
    view = gl.GLViewWidget()
    win.setCentralWidget(view)
    win.resize(1600, 960)
    _report_first_frame(app, view)
    win.show()
    QTimer.singleShot(20000, app.quit)
    app.exec()


HEAVY = ("imageio", "PIL", "torch")  # modules that must not load before the first frame


def _heavy_loaded() -> list[str]:
    return [name for name in HEAVY if name in sys.modules]


def _child_app() -> None:
    """The app through its entry point; the window is found when it is first shown (MainWindow.show is wrapped
    as app.window.main_window loads: nothing is imported before the entry point, which imports numpy and PyOpenGL
    before PySide6 on purpose, see app/__main__.py)."""
    import importlib.abc
    import importlib.util

    def wrap_show(module):
        show = module.MainWindow.show

        def first_show(window):
            module.MainWindow.show = show
            _report_app_frames(window)
            show(window)

        module.MainWindow.show = first_show

    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "app.window.main_window":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            load = spec.loader.exec_module
            spec.loader.exec_module = lambda module: (load(module), wrap_show(module))
            return spec

    sys.meta_path.insert(0, Hook())
    from app.__main__ import main

    main(["--settings", os.path.join(tempfile.mkdtemp(), "bench.ini"), "--lang", "en"])


def _report_app_frames(win) -> None:
    """One JSON line at the window's first frame, one at the first frame that shows an engine result; then
    the window closes (its engine thread stops) and the app quits."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    gl_widget = win.scene.gl
    seen = []

    def swapped():
        if not seen:
            seen.append("frame")
            print(json.dumps({"frame": True, "torch": "torch" in sys.modules, "heavy": _heavy_loaded()}), flush=True)
        if win.state.trace is not None and gl_widget.shown_version >= win.scene.trace_version and len(seen) == 1:
            seen.append("trace")
            print(json.dumps({"trace": True}), flush=True)
            gl_widget.frameSwapped.disconnect(swapped)
            QTimer.singleShot(0, win.close)
            QTimer.singleShot(0, QApplication.instance().quit)

    gl_widget.frameSwapped.connect(swapped)
    QTimer.singleShot(60000, QApplication.instance().quit)


def _report_first_frame(app, glwidget) -> None:
    def done():
        print(json.dumps({"frame": True, "torch": "torch" in sys.modules, "heavy": _heavy_loaded()}), flush=True)
        glwidget.frameSwapped.disconnect(done)
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, app.quit)

    glwidget.frameSwapped.connect(done)


def _time_start(kind: str) -> dict:
    """{'start_ms', 'heavy'} and for the app also 'trace_ms' (launch -> first result on screen)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    t1 = time.perf_counter()
    if not line:
        proc.kill()
        raise RuntimeError(f"{kind} child showed no frame")
    out = {"start_ms": (t1 - t0) * 1000.0, "heavy": json.loads(line)["heavy"]}
    if kind == "app":
        line = proc.stdout.readline()
        if not line:
            proc.kill()
            raise RuntimeError("app child showed no engine result")
        out["trace_ms"] = (time.perf_counter() - t0) * 1000.0
    proc.wait(timeout=60)
    return out


def _pump(ms: int) -> None:
    """Run the event loop for ms milliseconds. Not QTest.qWait: it keeps the GIL, so the engine thread would
    stall while we wait (the real app's exec() releases it)."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def _child_interact() -> None:
    from PySide6.QtCore import QCoreApplication, QElapsedTimer, QEventLoop, QPoint, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionSlider

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication([])
    from app.export.image import render_view, save_png
    from app.window.main_window import MainWindow

    tmp = tempfile.mkdtemp()
    win = MainWindow(settings_path=os.path.join(tmp, "bench.ini"), language="en")
    win.show()
    gl_widget = win.scene.gl
    deadline = time.monotonic() + 120
    while (win.state.trace is None or win.engine.busy or not win.late_docks_built
           or not win.engine.kernels_settled) and time.monotonic() < deadline:
        _pump(5)
    explain = win.docks["ExplainDock"]
    mode = os.environ.get("K3_BENCH_EXPLAIN", "default")
    if mode == "route":
        explain.show3d.set_values(True, True, 30, True)
    elif mode == "off":
        explain.show3d.set_values(False, False, 30, False)
    two = os.environ.get("K3_BENCH_TWO_STACKS") == "1"
    side = win.side
    if two:
        win.registry.actions["side_by_side"].trigger()
        while (side.result is None or side.busy()) and time.monotonic() < deadline + 300:
            _pump(5)
    win.activateWindow()
    _pump(300)

    def idle():
        while (win.engine.busy or win.engine._pending is not None or (two and side.busy())) \
                and time.monotonic() < deadline + 300:
            _pump(5)

    engine_ms = []
    engine_by_alpha = {}
    win.engine.trace_published.connect(lambda _t, s: engine_ms.append(s * 1000.0))
    win.engine.trace_published.connect(lambda t, s: engine_by_alpha.__setitem__(t.knobs.alpha, s * 1000.0))

    # --- UI stall while dragging the alpha slider with the mouse -----------------------------------
    slider = win.docks["ControlsDock"].slider("alpha")
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    handle = slider.style().subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderHandle, slider).center()
    clock = QElapsedTimer()
    clock.start()
    gaps = []
    last = [clock.elapsed()]

    def tick():
        now = clock.nsecsElapsed() / 1e6
        gaps.append(now - last[0])
        last[0] = now

    ticker = QTimer()
    ticker.setTimerType(Qt.PreciseTimer)
    ticker.timeout.connect(tick)
    last[0] = clock.nsecsElapsed() / 1e6
    ticker.start(2)
    QTest.mousePress(slider, Qt.LeftButton, Qt.NoModifier, handle)
    span = slider.width() // 3
    for i in range(120):  # 2 s at 60 moves per second, left then right
        dx = -span * i // 60 if i < 60 else -span + span * (i - 60) // 60
        QTest.mouseMove(slider, QPoint(handle.x() + dx, handle.y()))
        _pump(16)
    QTest.mouseRelease(slider, Qt.LeftButton, Qt.NoModifier, handle)
    idle()
    _pump(200)
    ticker.stop()
    max_stall = max(0.0, max(gaps) - 2.0) if gaps else float("nan")
    drag_runs = len(engine_ms)

    # --- slider change -> trace with that value on screen -------------------------------------------
    latencies, non_engine, second = [], [], []
    engine_ms.clear()
    for value in (20, 35, 50, 65, 80, 30, 45, 60, 75, 25, 40, 55, 70, 85, 15):
        idle()
        _pump(50)
        swapped = []
        target = slider.maximum() * value // 100
        loop = QEventLoop()  # wait like the app does (asleep until an event), not by polling the UI thread
        t0 = time.perf_counter()
        slider.setValue(target)
        want = win.state.knobs.alpha

        side_swapped = []

        def on_swap():
            trace = win.state.trace
            if trace is not None and trace.knobs.alpha == want and gl_widget.shown_version >= \
                    win.scene.trace_version and not swapped:
                swapped.append(time.perf_counter())
                if not two or side_swapped:
                    loop.quit()

        def on_side_swap():
            sv = side.pane.scene
            if side.trace is not None and side.trace.knobs.alpha == want and sv.gl.shown_version >= \
                    sv.trace_version and not side_swapped:
                side_swapped.append(time.perf_counter())
                if swapped:
                    loop.quit()

        gl_widget.frameSwapped.connect(on_swap)
        if two:
            side.pane.scene.gl.frameSwapped.connect(on_side_swap)
        QTimer.singleShot(60000, loop.quit)
        loop.exec()
        gl_widget.frameSwapped.disconnect(on_swap)
        if two:
            side.pane.scene.gl.frameSwapped.disconnect(on_side_swap)
            if side_swapped:
                second.append((side_swapped[0] - t0) * 1000.0)
        if swapped:
            latencies.append((swapped[0] - t0) * 1000.0)
            if want in engine_by_alpha:
                non_engine.append(latencies[-1] - engine_by_alpha[want])

    # --- 4K export -----------------------------------------------------------------------------------
    idle()
    exports = []
    for i in range(3):
        t0 = time.perf_counter()
        img = render_view(win.scene, 3840, 2160)
        save_png(img, os.path.join(tmp, f"4k-{i}.png"))
        exports.append((time.perf_counter() - t0) * 1000.0)
    print(json.dumps({
        "max_ui_stall_ms": round(max_stall, 1),
        "drag_engine_runs": drag_runs,
        "slider_to_screen_ms_median": _median(latencies),
        "slider_to_screen_ms_p90": _p90(latencies),
        "engine_run_ms_median": _median(engine_ms),
        "slider_to_screen_non_engine_ms_median": _median(non_engine),
        "slider_to_screen_non_engine_ms_p90": _p90(non_engine),
        "export_4k_ms": round(statistics.median(exports), 1),
        "engine_kernels": win.engine.kernels,
        "explain_3d": {"default": "lens+arcs", "route": "lens+arcs+route", "off": "off"}[mode],
        "explain_3d_drawn": win.scene.explanation is not None,
        **({"two_stacks": True, "second_stack_model": side.model,
            "second_stack_to_screen_ms_median": _median(second), "second_stack_to_screen_ms_p90": _p90(second),
            "second_stack_explain_drawn": side.pane.scene.explanation is not None} if two else {}),
    }), flush=True)
    win.close()


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _p90(values: list[float]) -> float | None:
    """The 90th percentile (linear between order statistics, as numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    pos = 0.9 * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo), 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", choices=("floor", "app", "interact"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("start", "interact"), help="measure only start-up or interaction")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--route", action="store_true", help="interaction with the contribution route drawn too")
    shown.add_argument("--no-explain", action="store_true", help="interaction without the 3D explanation")
    parser.add_argument("--two-stacks", action="store_true",
                        help="interaction with the compared model's stack beside the window's (View -> Side by side)")
    args = parser.parse_args()
    if args.two_stacks:
        os.environ["K3_BENCH_TWO_STACKS"] = "1"
    if args.route or args.no_explain:
        os.environ["K3_BENCH_EXPLAIN"] = "route" if args.route else "off"  # the interaction child reads it
    if args.child:
        sys.path.insert(0, str(ROOT))
        {"floor": _child_floor, "app": _child_app, "interact": _child_interact}[args.child]()
        return
    # bench/ is sys.path[0] when run as a script
    from xdisplay import x_display

    with x_display("bench/app.py"):
        _measure(args)


def _measure(args) -> None:
    result = {}
    if args.only != "interact":
        result.update(_measure_start(args.runs))
    if args.only != "start":
        result.update(_measure_interaction())
    print(json.dumps({**result, "runs": args.runs}))


def _byte_compile() -> None:
    """The project's packages byte-compiled, as an install has them (see the module docstring)."""
    import compileall

    for package in ("app", "compute", "scene"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


def _measure_start(runs: int) -> dict:
    _byte_compile()
    floor, start, trace, heavy = [], [], [], set()
    for _ in range(runs):  # interleaved so both see the same machine load
        floor.append(_time_start("floor")["start_ms"])
        run = _time_start("app")
        start.append(run["start_ms"])
        trace.append(run["trace_ms"])
        heavy.update(run["heavy"])
    return {
        "start_ms": round(statistics.median(start), 1),
        "floor_start_ms": round(statistics.median(floor), 1),
        "start_over_floor": round(statistics.median(start) / statistics.median(floor), 3),
        "torch_at_first_frame": "torch" in heavy,
        "heavy_at_first_frame": sorted(heavy),
        "first_trace_ms": _median([t - s for s, t in zip(start, trace)]),
        "first_trace_from_launch_ms": _median(trace),
        "start_ms_each": [round(v) for v in start],
        "floor_start_ms_each": [round(v) for v in floor],
        "first_trace_ms_each": [round(t - s) for s, t in zip(start, trace)],
    }


def _measure_interaction() -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", "interact"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        sys.exit(f"interaction child failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


if __name__ == "__main__":
    main()
