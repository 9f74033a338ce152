"""Logging through Python's logging: --verbose, engine errors, GL info, export paths."""
import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import log as applog

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def captured():
    """The app's handler writing into a buffer at DEBUG (as --verbose), restored afterwards."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    buf = io.StringIO()
    applog.setup(verbose=True, stream=buf)
    yield buf
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)


def test_setup_levels_and_one_handler():
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        applog.setup(verbose=False, stream=io.StringIO())
        assert root.level == logging.WARNING
        applog.setup(verbose=True, stream=io.StringIO())
        assert root.level == logging.DEBUG
        assert sum(h.get_name() == "k3-explorer" for h in root.handlers) == 1  # replaced, not stacked
    finally:
        for h in list(root.handlers):
            if h not in before:
                root.removeHandler(h)


def test_verbose_flag_reaches_the_root_logger():
    code = ("import logging, sys\nimport app.__main__ as m\n"
            "from app import log\n"
            "args = m._gui_args(sys.argv[1:])\nlog.setup(verbose=args.verbose)\n"
            "logging.getLogger('app.test').debug('hello debug')\n"
            "print(logging.getLevelName(logging.getLogger().level))")
    for flags, level, shown in (([], "WARNING", False), (["--verbose"], "DEBUG", True)):
        done = subprocess.run([sys.executable, "-c", code, *flags], cwd=ROOT, capture_output=True, text=True,
                              timeout=60)
        assert done.stdout.strip() == level, done.stderr
        assert ("DEBUG   app.test: hello debug" in done.stderr) is shown, done.stderr


def test_engine_error_is_logged_with_its_traceback(main_window, qtbot, captured):
    from tests.app.gui_helpers import wait_idle

    win = main_window
    wait_idle(qtbot, win)
    model = win.engine.engine.model
    original = model.run

    def broken(*_a, **_k):
        raise ValueError("broken on purpose")
    model.run = broken
    try:
        win.state.request_prompt("로그 시험")
        qtbot.waitUntil(lambda: "broken on purpose" in captured.getvalue(), timeout=30000)
    finally:
        model.run = original
    wait_idle(qtbot, win)
    text = captured.getvalue()
    assert "ERROR   app.engine.worker: engine: run" in text and "Traceback" in text and "ValueError" in text
    win.state.request_prompt(win.engine._good.text)  # the trace on screen again, as the module expects
    wait_idle(qtbot, win)


def test_export_path_is_logged(main_window, tmp_path, captured):
    from app.export.image import render_view, save_png

    out = tmp_path / "shot.png"
    save_png(render_view(main_window.scene, 320, 200), str(out))
    assert out.is_file()
    assert f"INFO    app.export.image: export: wrote {out} (320 x 200)" in captured.getvalue()


def test_gl_renderer_is_logged_once(main_window, captured):
    if main_window.scene.gl.gl_error:
        pytest.skip("no OpenGL here")
    applog._gl_logged = False
    applog.log_gl_info()
    applog.log_gl_info()
    lines = [l for l in captured.getvalue().splitlines() if "OpenGL:" in l]
    assert len(lines) == 1 and lines[0].startswith(tuple("0123456789")) and "INFO    app.log: OpenGL: " in lines[0]
    assert len(lines[0].split(" · ")) == 3  # vendor · renderer · version


def test_export_command_takes_verbose(tmp_path):
    from app import cli

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        assert cli.main(["--out", str(tmp_path / "x.txt"), "--verbose"]) == 2  # not a .png: fails early
        assert root.level == logging.DEBUG
    finally:
        for h in list(root.handlers):
            if h not in handlers:
                root.removeHandler(h)
        root.setLevel(level)


def test_a_plain_export_prints_nothing_to_stderr(tmp_path):
    """Without --verbose a good export is silent (no library INFO such as PyOpenGL's 'No OpenGL_accelerate');
    the CLI's one-line messages are the only thing a script has to read."""
    import os
    import subprocess
    import sys

    out = tmp_path / "x.png"
    proc = subprocess.run([sys.executable, "-m", "app", "export", "--size", "320x200", "--out", str(out)],
                          capture_output=True, text=True, timeout=240, env=dict(os.environ, QT_QPA_PLATFORM="xcb"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.stat().st_size > 0
    assert proc.stderr.strip() == ""
