"""An X server without GLX (VNC, X forwarding; here `Xvfb -extension GLX`, started by the test): Qt makes its GL
contexts through EGL, so PyOpenGL must look for them there. Both the window and `k3-explorer export` draw the 3D
view; if PyOpenGL is forced onto the wrong platform, the view says why and the export fails in one line, never
with a traceback per frame."""
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from tests.app.test_cli_contract import free_display

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")


@pytest.fixture(scope="module")
def no_glx_display():
    display = free_display()
    server = subprocess.Popen(["Xvfb", display, "-extension", "GLX", "-screen", "0", "1600x1000x24",
                               "-nolisten", "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket = f"/tmp/.X11-unix/X{display[1:]}"
    deadline = time.monotonic() + 20
    while not os.path.exists(socket) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(socket), "Xvfb did not start"
    yield display
    server.terminate()
    server.wait(10)


def _env(display: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYOPENGL_PLATFORM", "QT_XCB_GL_INTEGRATION",
                                                           "WAYLAND_DISPLAY")}
    env.update(DISPLAY=display, QT_QPA_PLATFORM="xcb", **extra)
    return env


def _scene_pixels(path: Path) -> float:
    """Share of the picture that is not the background colour (the 3D blocks; labels are left out)."""
    from PySide6.QtGui import QImage

    img = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB32)
    a = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)
    a = a[:, :img.width(), :3].astype(int)
    return float((np.abs(a - a[0, 0]).max(axis=-1) > 30).mean())


def test_the_probe_sees_no_glx_and_picks_egl(no_glx_display):
    from scene.display import display_problem, gl_platform_for, probe_x11, release_probe

    try:
        assert probe_x11(no_glx_display).glx is False
        assert gl_platform_for({"DISPLAY": no_glx_display}) == "egl"
        assert gl_platform_for({"DISPLAY": no_glx_display, "PYOPENGL_PLATFORM": "glx"}) is None  # user's choice
        assert display_problem({"DISPLAY": no_glx_display}) is None
    finally:
        release_probe()  # the server is left without clients, as under xvfb-run, for the tests below


def test_cli_export_draws_the_3d_view_without_glx(no_glx_display, tmp_path):
    out = tmp_path / "noglx.png"
    r = subprocess.run([sys.executable, "-m", "app", "export", "--size", "640x400", "--no-labels", "--out", str(out)],
                       cwd=ROOT, env=_env(no_glx_display), capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert _scene_pixels(out) > 0.03  # blocks were drawn, not just the clear colour


def test_cli_export_with_pyopengl_on_the_wrong_platform_fails_in_one_line(no_glx_display, tmp_path):
    out = tmp_path / "x.png"
    r = subprocess.run([sys.executable, "-m", "app", "export", "--size", "320x200", "--out", str(out)], cwd=ROOT,
                       env=_env(no_glx_display, PYOPENGL_PLATFORM="glx"), capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("k3-explorer export: error:")]
    assert len(errors) == 1 and "could not be rendered" in errors[0], r.stderr
    assert not out.exists()


WINDOW = textwrap.dedent("""
    # `python -m app` as a person starts it; the event loop is replaced by a check of what the window shows
    import os, sys, tempfile, time
    sys.path.insert(0, {root!r})
    import numpy as np
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtGui import QImage
    from PySide6.QtWidgets import QApplication

    def wait(ms):
        loop = QEventLoop(); QTimer.singleShot(ms, loop.quit); loop.exec()

    def check(app):
        win = next(w for w in app.topLevelWidgets() if w.objectName() == "MainWindow")
        gl = win.scene.gl
        deadline = time.monotonic() + 150
        while (win.state.trace is None or gl.shown_version < gl.version) and not gl.gl_error \\
                and time.monotonic() < deadline:
            wait(50)
        wait(500)
        print("platform", os.environ.get("PYOPENGL_PLATFORM"))
        print("gl_error", repr(gl.gl_error))
        print("frames", gl.renderer.frames if gl.renderer else 0)
        img = gl.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
        a = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)
        a = a[:, :img.width(), :3].astype(int)
        print("drawn", float((np.abs(a - a[0, 0]).max(axis=-1) > 30).mean()))
        win.close()
        return 0

    QApplication.exec = check
    from app.__main__ import main
    sys.exit(main(["--settings", os.path.join(tempfile.mkdtemp(), "s.ini"), "--lang", "en"]))
""")


def _run_window(env) -> tuple[subprocess.CompletedProcess, dict]:
    r = subprocess.run([sys.executable, "-c", WINDOW.format(root=str(ROOT))], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    values = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    return r, values


def test_the_window_draws_the_3d_view_without_glx(no_glx_display):
    r, v = _run_window(_env(no_glx_display))
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert v["platform"] == "egl"
    assert v["gl_error"] == "''" and int(v["frames"]) > 0
    assert float(v["drawn"]) > 0.05


def test_the_window_says_why_when_pyopengl_cannot_find_the_context(no_glx_display):
    r, v = _run_window(_env(no_glx_display, PYOPENGL_PLATFORM="glx"))
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "no valid context" in v["gl_error"]  # the view shows the no-GL message with this reason
    assert float(v["drawn"]) > 0.002  # the message is drawn where the picture would be
