"""Application speed (issue 4), measured under Xvfb; prints one JSON object.

    python bench/app.py [--runs 3]     # under Xvfb; starts its own Xvfb when DISPLAY is unset

- start_ms: process launch -> first frame of the main window's 3D view (median over runs, each a fresh
  process). floor_start_ms: the same for a bare pyqtgraph GLViewWidget window started the same way, in the
  same run. start_over_floor = start_ms / floor_start_ms. torch_at_first_frame says whether torch had been
  imported when that frame was shown (it must not: it loads in the engine thread).
- max_ui_stall_ms: the longest gap of a 2 ms UI-thread timer while the α slider is dragged with the mouse
  (60 moves/s for 2 s) and the traces it causes arrive and are drawn.
- slider_to_screen_ms_median: slider value change -> the trace computed with that value is on screen (the
  first frame of the 3D view drawn from it, i.e. after set_trace), median over separate changes; the UI thread
  waits in its event loop meanwhile, as in the app. engine_run_ms_median: the engine's own time
  for those runs (the floor of this latency).
- export_4k_ms: 3840x2160 render of the 3D view with labels + PNG encoding to a file.
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


def _child_app() -> None:
    from PySide6.QtCore import QCoreApplication, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication([])
    from app.main_window import MainWindow

    win = MainWindow(settings_path=os.path.join(tempfile.mkdtemp(), "bench.ini"), language="en")
    _report_first_frame(app, win.scene.gl)
    win.show()
    QTimer.singleShot(20000, app.quit)
    app.exec()
    win.engine.stop()


def _report_first_frame(app, glwidget) -> None:
    def done():
        print(json.dumps({"frame": True, "torch": "torch" in sys.modules}), flush=True)
        glwidget.frameSwapped.disconnect(done)
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, app.quit)

    glwidget.frameSwapped.connect(done)


def _time_start(kind: str) -> tuple[float, bool]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    t1 = time.perf_counter()
    proc.wait(timeout=60)
    if not line:
        raise RuntimeError(f"{kind} child showed no frame")
    return (t1 - t0) * 1000.0, bool(json.loads(line)["torch"])


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
    from app.export import render_view, save_png
    from app.main_window import MainWindow

    tmp = tempfile.mkdtemp()
    win = MainWindow(settings_path=os.path.join(tmp, "bench.ini"), language="en")
    win.show()
    gl_widget = win.scene.gl
    deadline = time.monotonic() + 120
    while (win.state.trace is None or win.engine.busy) and time.monotonic() < deadline:
        _pump(5)
    win.activateWindow()
    _pump(300)

    def idle():
        while (win.engine.busy or win.engine._pending is not None) and time.monotonic() < deadline + 300:
            _pump(5)

    engine_ms = []
    win.engine.trace_published.connect(lambda _t, s: engine_ms.append(s * 1000.0))

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
    latencies = []
    engine_ms.clear()
    for value in (20, 35, 50, 65, 80, 30, 45, 60, 75):
        idle()
        _pump(50)
        swapped = []
        target = slider.maximum() * value // 100
        loop = QEventLoop()  # wait like the app does (asleep until an event), not by polling the UI thread
        t0 = time.perf_counter()
        slider.setValue(target)
        want = win.state.knobs.alpha

        def on_swap():
            trace = win.state.trace
            if trace is not None and trace.knobs.alpha == want and gl_widget.shown_version >= \
                    win.scene.trace_version and not swapped:
                swapped.append(time.perf_counter())
                loop.quit()

        gl_widget.frameSwapped.connect(on_swap)
        QTimer.singleShot(60000, loop.quit)
        loop.exec()
        gl_widget.frameSwapped.disconnect(on_swap)
        if swapped:
            latencies.append((swapped[0] - t0) * 1000.0)

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
        "slider_to_screen_ms_median": round(statistics.median(latencies), 1) if latencies else None,
        "engine_run_ms_median": round(statistics.median(engine_ms), 1) if engine_ms else None,
        "export_4k_ms": round(statistics.median(exports), 1),
    }), flush=True)
    win.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", choices=("floor", "app", "interact"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        {"floor": _child_floor, "app": _child_app, "interact": _child_interact}[args.child]()
        return
    # bench/ is sys.path[0] when run as a script
    from xdisplay import x_display

    with x_display("bench/app.py"):
        _measure(args)


def _measure(args) -> None:
    floor, start, torch_seen = [], [], []
    for _ in range(args.runs):  # interleaved so both see the same machine load
        floor.append(_time_start("floor")[0])
        ms, torch_loaded = _time_start("app")
        start.append(ms)
        torch_seen.append(torch_loaded)
    proc = subprocess.run([sys.executable, __file__, "--child", "interact"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        sys.exit(f"interaction child failed:\n{proc.stderr[-3000:]}")
    inter = json.loads(lines[-1])
    result = {
        "start_ms": round(statistics.median(start), 1),
        "floor_start_ms": round(statistics.median(floor), 1),
        "start_over_floor": round(statistics.median(start) / statistics.median(floor), 3),
        "torch_at_first_frame": any(torch_seen),
        **inter,
        "runs": args.runs,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
