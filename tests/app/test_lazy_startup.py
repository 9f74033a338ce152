"""Start-up order: the first frame comes without the modules only later features need, the engine
starts right after it, and the docks that start behind a tab wait for the first engine result on screen (they
are built on demand when asked for earlier).

The first two tests start the real app (`python -m app`'s entry point) in a subprocess on the test's display;
the driver below wraps QMainWindow.show to find the window and prints one JSON line per moment."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("imageio", "PIL", "torch", "numba")  # only later features (or the engine thread) need these
LATE = ("ExpertGridDock", "SiliconDock", "RoutingDock", "ExperimentsDock", "LearnDock")

DRIVER = textwrap.dedent("""
    import json, sys, time
    from PySide6.QtWidgets import QMainWindow

    HEAVY, LATE = {heavy!r}, {late!r}
    show = QMainWindow.show
    work = {{"config_reads": 0, "layouts": 0}}  # start-up work done more than once shows here

    from compute import config as _config
    from scene import layout as _layout  # pure numpy: imports neither Qt's GL nor OpenGL

    _from_json, _build_layout = _config.ModelConfig.from_json.__func__, _layout.build_layout

    def counted_from_json(cls, path):
        work["config_reads"] += str(path) == str(_config.DEFAULT_CONFIG)
        return _from_json(cls, path)

    def counted_build_layout(*args, **kwargs):
        work["layouts"] += 1
        return _build_layout(*args, **kwargs)

    _config.ModelConfig.from_json = classmethod(counted_from_json)
    _layout.build_layout = counted_build_layout  # before scene.view binds the name

    def report(moment, win, **more):
        built = [name for name in LATE if name in win.docks]
        print(json.dumps({{"moment": moment, "heavy": [m for m in HEAVY if m in sys.modules], "late": built,
                          **work, **more}}), flush=True)

    def first_show(win):
        QMainWindow.show = show
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication

        gl, seen, first = win.scene.gl, [], []

        def swapped():
            if not seen:
                seen.append("frame")
                first.append(time.monotonic())
                report("first_frame", win)
            if gl.paint_count and len(first) == 1:  # the first complete frame (the labels too)
                first.append(time.monotonic())
                report("complete_frame", win, after_first_ms=(first[1] - first[0]) * 1000)
            if len(seen) == 1 and win.state.trace is not None and gl.shown_version >= win.scene.trace_version:
                seen.append("trace")
                report("first_trace", win)

        def ready():
            report("late_docks_ready", win)
            QTimer.singleShot(0, win.close)
            QTimer.singleShot(0, QApplication.instance().quit)

        gl.frameSwapped.connect(swapped)
        win.late_docks_ready.connect(ready)
        QTimer.singleShot(120000, QApplication.instance().quit)
        show(win)

    QMainWindow.show = first_show
    from app.__main__ import main
    sys.exit(main(sys.argv[1:]))
""").format(heavy=HEAVY, late=LATE)


ORDER_DRIVER = textwrap.dedent("""
    import importlib.abc, os, sys

    seen = []

    class Watch(importlib.abc.MetaPathFinder):  # sees each module's first import, finds nothing itself
        def find_spec(self, name, path, target=None):
            if name in ("numpy", "OpenGL.GL", "PySide6") and name not in seen:
                seen.append(name)
                if name == "PySide6":
                    print(" ".join(seen), flush=True)
                    os._exit(0)
            return None

    sys.meta_path.insert(0, Watch())
    from app.__main__ import main
    main(sys.argv[1:])
""")


def test_numpy_and_pyopengl_load_before_qt(tmp_path):
    """Modules imported after PySide6 each cost a source scan by shiboken (app/__main__.py): the entry point
    imports numpy and PyOpenGL (after choosing its GL platform) before Qt."""
    if not os.environ.get("DISPLAY"):
        pytest.skip("needs the X display pytest-xvfb provides")
    proc = subprocess.run([sys.executable, "-c", ORDER_DRIVER, "--settings", str(tmp_path / "s.ini"), "--lang", "en"],
                          cwd=ROOT, env=dict(os.environ, QT_QPA_PLATFORM="xcb"), capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split() == ["numpy", "OpenGL.GL", "PySide6"], proc.stderr[-2000:]


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """The moments of one real start of the app: {moment: {'heavy': [...], 'late': [...]}}."""
    if not os.environ.get("DISPLAY"):
        pytest.skip("needs the X display pytest-xvfb provides")
    settings = tmp_path_factory.mktemp("lazy") / "settings.ini"
    env = dict(os.environ, QT_QPA_PLATFORM="xcb")
    proc = subprocess.run([sys.executable, "-c", DRIVER, "--settings", str(settings), "--lang", "en"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    moments = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            moments[record.pop("moment")] = record
    assert "first_frame" in moments, f"the app showed no frame (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    return moments


def test_no_heavy_module_at_the_first_frame(started):
    assert started["first_frame"]["heavy"] == [], "imported before the first frame: " + \
        ", ".join(started["first_frame"]["heavy"])


def test_start_reads_the_model_config_once_and_lays_the_scene_out_once(started):
    """The window, the scene's layout and the labels' dims share one read of Kimi K3's config, and the scene is
    laid out once, with that config."""
    assert started["first_frame"]["config_reads"] == 1
    assert started["first_frame"]["layouts"] == 1


def test_labels_follow_the_first_frame_within_the_first_second(started):
    """The first frame is the 3D picture without its labels (scene/frames.py); the complete frame follows."""
    assert "complete_frame" in started, "no frame with the labels was shown"
    assert started["complete_frame"]["after_first_ms"] < 1000


def test_first_engine_result_does_not_wait_for_the_tabbed_docks(started):
    assert started["first_frame"]["late"] == []
    assert "first_trace" in started, "no engine result was shown"
    assert started["first_trace"]["late"] == [], "the docks behind tabs were built before the first result"
    assert started["late_docks_ready"]["late"] == list(LATE)


def test_a_late_dock_asked_for_by_name_is_built_then(make_window, qtbot, monkeypatch):
    """An engine that has said nothing yet (start() does nothing here): the late docks are not built on their
    own, but `docks[name]` builds them, with their Window menu entries."""
    from app.engine.worker import EngineController

    started = []
    monkeypatch.setattr(EngineController, "start", lambda self: started.append(1))
    win = make_window("lazy.ini", wait_trace=False)
    # the first frame is on screen and the window has done what follows it (asking the engine to start is last)
    qtbot.waitUntil(lambda: win.first_frame_done and bool(started), timeout=30000)
    assert not any(name in win.docks for name in LATE)
    dock = win.docks["ExpertGridDock"]
    assert dock.objectName() == "ExpertGridDock" and dock.widget() is not None
    assert all(name in win.docks for name in LATE)
    toggles = {a.objectName() for a in win.window_menu_actions}
    assert {f"toggle_{name}" for name in LATE} <= toggles
    assert win.docks.get("NoSuchDock") is None
    assert win.show_dock("SiliconDock")
