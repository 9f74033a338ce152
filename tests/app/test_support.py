"""Logs and support: the rotating log file under the XDG state folder (warnings, errors, engine tracebacks),
Help -> Open log folder, About -> Copy system info."""
import logging
import platform
import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

import app
from app import log as applog
from app.i18n import tr

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


@pytest.fixture
def log_home(tmp_path, monkeypatch):
    """XDG_STATE_HOME in tmp_path; the root logger's handlers and level restored afterwards."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield tmp_path / "state" / "k3-explorer"
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
            h.close()
    root.setLevel(level)


def test_the_log_lives_in_the_xdg_state_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    assert applog.log_file() == tmp_path / "s" / "k3-explorer" / "k3-explorer.log"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/path")  # not absolute: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert applog.log_dir() == tmp_path / "home" / ".local" / "state" / "k3-explorer"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert applog.log_dir() == tmp_path / "home" / ".local" / "state" / "k3-explorer"


def test_warnings_errors_and_tracebacks_go_to_the_file(log_home, capsys):
    applog.setup(to_file=True)
    logging.getLogger("app.test").info("not at the default level")
    logging.getLogger("app.test").warning("a warning for the file")
    try:
        raise RuntimeError("an engine failure")
    except RuntimeError:
        logging.getLogger("app.engine.worker").exception("engine: run 3 failed")
    applog.file_handler().flush()
    text = (log_home / "k3-explorer.log").read_text()
    first = text.splitlines()[0]
    assert f"session start: k3-explorer {app.__version__}, Python {platform.python_version()}" in first
    assert "WARNING app.test: a warning for the file" in text and "not at the default level" not in text
    assert "ERROR   app.engine.worker: engine: run 3 failed" in text
    assert "Traceback (most recent call last)" in text and "RuntimeError: an engine failure" in text
    assert "a warning for the file" in capsys.readouterr().err  # stderr still gets it
    applog.setup(to_file=True)  # a second set-up replaces the handler (one file handler, not two)
    assert sum(h.get_name() == "k3-explorer-file" for h in logging.getLogger().handlers) == 1


def test_the_file_rotates_and_keeps_three_old_ones(log_home, monkeypatch):
    monkeypatch.setattr(applog, "MAX_BYTES", 4000)
    applog.setup(to_file=True)
    for i in range(400):
        logging.getLogger("app.test").warning("line %d %s", i, "x" * 60)
    names = sorted(p.name for p in log_home.iterdir())
    assert names == ["k3-explorer.log", "k3-explorer.log.1", "k3-explorer.log.2", "k3-explorer.log.3"]
    assert all(p.stat().st_size <= 4000 + 200 for p in log_home.iterdir())
    assert "line 399" in (log_home / "k3-explorer.log").read_text()


def test_an_unwritable_state_folder_is_one_warning_and_no_file(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))  # a file where the folder should be
    root = logging.getLogger()
    handlers = list(root.handlers)
    try:
        applog.setup(to_file=True)
        assert applog.file_handler() is None
        assert "no log file" in capsys.readouterr().err
    finally:
        for h in list(root.handlers):
            if h not in handlers:
                root.removeHandler(h)


def test_an_engine_traceback_in_the_window_reaches_the_log_file(main_window, qtbot, log_home):
    from tests.app.gui_helpers import wait_idle

    applog.setup(to_file=True)
    win = main_window
    wait_idle(qtbot, win)
    model = win.engine.engine.model
    original = model.run

    def broken(*_a, **_k):
        raise ValueError("broken for the log file")
    model.run = broken
    path = log_home / "k3-explorer.log"
    try:
        win.state.request_prompt("로그 파일 시험")
        qtbot.waitUntil(lambda: "broken for the log file" in path.read_text(), timeout=30000)
    finally:
        model.run = original
    wait_idle(qtbot, win)
    text = path.read_text()
    assert "ERROR   app.engine.worker: engine: run" in text and "Traceback" in text
    win.state.request_prompt(win.engine._good.text)  # the trace on screen again, as the module expects
    wait_idle(qtbot, win)


def test_help_opens_the_log_folder(main_window, qtbot, log_home, monkeypatch):
    from PySide6.QtGui import QDesktopServices

    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) or True)
    action = main_window.registry.actions["open_log_folder"]
    assert action.text() == tr("app.action.open_log_folder")
    action.trigger()
    assert opened == [str(log_home)] and log_home.is_dir()
    assert str(log_home) in main_window.statusBar().currentMessage()


def test_about_copies_the_system_info(main_window, qtbot, log_home):
    from app.window.about import AboutDialog

    QApplication.clipboard().clear()
    main_window.show_about()
    dialog = [d for d in main_window.findChildren(AboutDialog) if d.isVisible()][-1]
    try:
        button = dialog.copy_info
        assert button.text() == tr("support.copy_info")
        qtbot.mouseClick(button, Qt.LeftButton)
        text = QApplication.clipboard().text()
        assert button.text() == tr("support.copied")
    finally:
        dialog.close()
    lines = dict(line.split(": ", 1) for line in text.splitlines()[1:])
    assert text.splitlines()[0].startswith(f"K3 Explorer {app.__version__}")
    assert f"Python {platform.python_version()} ({sys.executable})" in lines["Libraries"]
    from importlib import metadata

    from PySide6.QtCore import qVersion

    assert f"Qt {qVersion()}" in lines["Libraries"] and f"NumPy {metadata.version('numpy')}" in lines["Libraries"]
    engine = main_window.engine
    assert lines["Engine"].startswith(engine.device_text) and f"CPU kernels: {engine.kernels}" in lines["Engine"]
    assert lines["OpenGL"] == applog.gl_strings() and "unavailable" not in lines["OpenGL"]
    assert lines["Settings"] == main_window.settings.path
    assert lines["Log"] == str(log_home / "k3-explorer.log")
    assert "xcb" in lines["Display"] or "offscreen" in lines["Display"]
    assert "glibc" in lines["OS"]
