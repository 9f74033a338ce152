"""Shipping it like a desktop app: set-up on a bare desktop, terminal conventions, launcher files."""
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from scene import display

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

ROOT = Path(__file__).resolve().parents[2]
X11 = {"DISPLAY": ":99"}


def _missing(*sonames):
    def load(soname):
        if soname in sonames:
            raise OSError(f"{soname}: cannot open shared object file: No such file or directory")
    return load


# --- the app's own check, before Qt aborts ---------------------------------------------------------------

def test_a_missing_xcb_library_is_named_with_its_package():
    missing = display.missing_libraries(X11, load=_missing("libxcb-cursor.so.0"), platform="linux")
    assert missing == [("libxcb-cursor.so.0", "libxcb-cursor0")]
    assert display.install_command(missing) == "sudo apt-get install libxcb-cursor0"
    two = display.missing_libraries(X11, load=_missing("libxcb-icccm.so.4", "libglib-2.0.so.0"), platform="linux")
    assert display.install_command(two) == "sudo apt-get install libxcb-icccm4 libglib2.0-0"


def test_nothing_missing_on_this_machine_and_other_platforms_not_checked():
    assert display.missing_libraries(X11) == []  # the real loader: every library is installed here
    everything = _missing(*(soname for soname, _ in display.QT_XCB_LIBRARIES))
    assert len(display.missing_libraries(X11, load=everything, platform="linux")) == len(display.QT_XCB_LIBRARIES)
    for env in ({"WAYLAND_DISPLAY": "wayland-0"}, {"QT_QPA_PLATFORM": "offscreen"}, {"QT_QPA_PLATFORM": "wayland"}):
        assert display.missing_libraries(env, load=everything, platform="linux") == []
    assert display.missing_libraries(X11, load=everything, platform="darwin") == []


def _needed(path: Path) -> set[str]:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) not installed")
def test_the_list_covers_what_qts_xcb_plugin_links_against():
    import PySide6

    qt = Path(PySide6.__file__).parent / "Qt"
    needed = set()
    for lib in (qt / "plugins/platforms/libqxcb.so", qt / "lib/libQt6XcbQpa.so.6", qt / "lib/libQt6Gui.so.6"):
        needed |= _needed(lib)
    base = {"libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6", "libz.so.1", "libgthread-2.0.so.0"}
    outside_qt = {name for name in needed if not name.startswith("libQt6")} - base
    assert outside_qt <= {soname for soname, _ in display.QT_XCB_LIBRARIES}, outside_qt


def test_makefile_run_packages_hold_every_library_package():
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    run_packages = set(re.search(r"^RUN_DEB_PACKAGES := (.*)$", text, flags=re.M).group(1).split())
    assert {package for _, package in display.QT_XCB_LIBRARIES} <= run_packages


STARTS = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    import scene.display as display
    def load(soname):  # the loader finds every library but libxcb-cursor.so.0, as on a bare Debian desktop
        if soname == "libxcb-cursor.so.0":
            raise OSError("libxcb-cursor.so.0: cannot open shared object file: No such file or directory")
    display._load_library = load
    from app.__main__ import main
    code = main({argv!r})
    sys.stderr.write("rc=%s qt=%s" % (code, any(m.startswith("PySide6.Qt") for m in sys.modules)))
""")


@pytest.mark.parametrize("argv", [["--lang", "en"], ["export", "--out", "never.png"]])
def test_the_app_says_which_package_to_install_and_exits_3(argv, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = env.get("DISPLAY") or ":99"
    done = subprocess.run([sys.executable, "-c", STARTS.format(root=str(ROOT), argv=argv)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == "rc=3 qt=False", done.stderr
    assert len(lines) == 2, done.stderr  # one line of message, then the probe's own line
    assert "libxcb-cursor.so.0" in lines[0] and lines[0].endswith("sudo apt-get install libxcb-cursor0"), lines[0]
    assert not (tmp_path / "never.png").exists()


# --- make run's set-up on a bare desktop ----------------------------------------------------------------

def _fake_bin(tmp_path: Path, uid: int) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        # dpkg-query -W -f=... PACKAGE: libxcb-cursor0 and libxcb-icccm4 are not installed, all else is
        "dpkg-query": 'for a; do p=$a; done; case $p in libxcb-cursor0|libxcb-icccm4) exit 1;; esac; '
                      'echo "install ok installed"',
        "id": f"echo {uid}",
        "apt-get": f'echo "$@" >> {tmp_path}/apt-get.log',
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return bin_dir


def _make(tmp_path, bin_dir, *targets):
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    return subprocess.run(["make", "-s", "-C", str(ROOT), *targets, f"VENV={tmp_path}/venv", "PYTHON=false"],
                          env=env, capture_output=True, text=True, timeout=60)


def test_make_run_prints_the_apt_line_and_stops_before_launching(tmp_path):
    done = _make(tmp_path, _fake_bin(tmp_path, uid=1000), "run")
    assert done.returncode != 0
    assert "  sudo apt-get install -y --no-install-recommends libxcb-cursor0 libxcb-icccm4\n" in done.stdout
    assert not (tmp_path / "venv").exists()  # stopped before the venv, the install and the launch
    assert not (tmp_path / "apt-get.log").exists()


def test_make_run_as_root_installs_the_missing_packages(tmp_path):
    done = _make(tmp_path, _fake_bin(tmp_path, uid=0), "run-sysdeps")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = (tmp_path / "apt-get.log").read_text().splitlines()
    assert calls == ["update -qq", "install -y -qq --no-install-recommends libxcb-cursor0 libxcb-icccm4"]


# --- terminal conventions: Ctrl+C / SIGTERM close the window cleanly --------------------------------------

def _wait_for(path: Path, text: str, proc, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = path.read_text(errors="replace") if path.exists() else ""
        if text in got or proc.poll() is not None:
            return got
        time.sleep(0.2)
    return path.read_text(errors="replace")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_terminal_signal_closes_the_window_and_saves_its_settings(sig, tmp_path):
    """The real app in a child process on the test's Xvfb display: once its first trace ran, SIGTERM / SIGINT
    (Ctrl+C) close it as the close button would: exit 143 / 130, settings written (the language given on the
    command line, the window geometry), no traceback."""
    assert os.environ.get("DISPLAY"), "pytest-xvfb gives the tests a display"
    settings, err = tmp_path / "s.ini", tmp_path / "stderr.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    with open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "app", "--settings", str(settings), "--lang", "ko",
                                 "--verbose"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        text = _wait_for(err, "engine: run 1", proc, timeout=120)
        assert proc.poll() is None and "engine: run 1" in text, text
        assert not settings.exists()  # nothing saved yet: what follows is the signal's doing
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.read_text(errors="replace")
    assert code == 128 + sig, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert f"{signal.Signals(sig).name}: closing the window" in text
    saved = settings.read_text()
    assert "language=ko" in saved and "geometry" in saved, saved


def test_the_stopper_leaves_the_handlers_it_found(qapp):
    from app.window.terminal_signals import SignalStopper

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    stopper = SignalStopper(qapp)
    assert signal.getsignal(signal.SIGTERM) == stopper._on_signal
    assert stopper.exit_code(0) == 0
    stopper.uninstall()
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert signal.set_wakeup_fd(-1) == -1  # the wakeup descriptor was handed back too


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_shortcuts_dialog_lists_the_mouse_gestures(main_window, qtbot, lang):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from app import i18n

    i18n.set_language(lang)
    try:
        QTest.keyClick(main_window.scene.gl, Qt.Key_F1)  # Help -> Keyboard shortcuts
        from app.window.actions import ShortcutsDialog

        shown = lambda: [d for d in main_window.findChildren(ShortcutsDialog) if d.isVisible()]  # noqa: E731
        qtbot.waitUntil(lambda: len(shown()) == 1, timeout=3000)
        dialog = shown()[0]
        qtbot.waitExposed(dialog)
        table = dialog.gestures
        rows = [(table.item(r, 0).text(), table.item(r, 1).text()) for r in range(table.rowCount())]
        gestures = " | ".join(g for g, _ in rows)
        if lang == "en":
            for word in ("Drag", "Wheel", "Shift+drag", "middle-button", "Click", "Double-click"):
                assert word in gestures, word
        else:
            assert "드래그" in gestures and "휠" in gestures and "더블 클릭" in gestures
        assert all(effect for _, effect in rows)
        assert table.isVisible() and table.visibleRegion().boundingRect().height() >= table.rowViewportPosition(
            table.rowCount() - 1)  # every row on screen, none scrolled away
        assert dialog.table.rowCount() > 10  # the keyboard table is still there
        dialog.close()
    finally:
        i18n.set_language("en")



# --- README and CLI true for a pip user -------------------------------------------------------------------

def test_config_takes_a_bundled_name_or_a_path(tmp_path, monkeypatch):
    from app.cli import bundled_config_names, config_argument

    assert bundled_config_names() == ["deepseek-v3", "kimi-k2", "kimi-k3", "kimi-linear-48b"]
    monkeypatch.chdir(tmp_path)  # a folder without assets/: what a pip user has
    for given in ("kimi-k2", "kimi-k2.json"):
        path = Path(config_argument(given))
        assert path.is_file() and path.name == "kimi-k2.json" and path.parent.name == "configs"
    (tmp_path / "kimi-k2").write_text("{}")  # a file of that name here wins: a path is a path
    assert config_argument("kimi-k2") == "kimi-k2"
    assert config_argument("kimi-k9") == "kimi-k9" and config_argument("") == ""  # the loader refuses these
    from app.__main__ import _gui_args

    assert Path(_gui_args(["--config", "deepseek-v3"]).config).name == "deepseek-v3.json"


def test_export_with_a_bundled_name_runs_that_model(tmp_path):
    """From a folder with no assets/ in it: --config kimi-k2 loads Kimi K2 (61 layers), so layer 62 is refused
    naming K2's count (exit 2, before any display is needed)."""
    done = subprocess.run([sys.executable, "-m", "app", "export", "--config", "kimi-k2", "--layer", "62",
                           "--out", str(tmp_path / "x.png")], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "61" in done.stderr, done.stderr


def test_export_help_names_every_output_format():
    done = subprocess.run([sys.executable, "-m", "app", "export", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    text = " ".join(done.stdout.split())
    for fmt in ("PNG", "MP4", "WebM", "GIF"):
        assert fmt in text, fmt
    assert "to a PNG" not in text and "kimi-k2" in text


def test_install_hints_name_what_exists():
    import tomllib

    from compute.engine import TORCH_HINT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "k3-explorer[" not in TORCH_HINT and "pip install torch" in TORCH_HINT  # not on any index yet
    readme = (ROOT / "README.md").read_text() + (ROOT / "docs/user-guide.md").read_text()  # the README's details
    assert not re.findall(r"pip install [^'\"\s]*\[", readme)  # brackets quoted (zsh globs them)
    assert "pip install '.[cuda]'" in readme and "pip install '.[train]'" in readme
    cpu = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    assert readme.index(cpu) < readme.index("pip install '.[train]'")
    assert "--config assets/configs" not in readme and "--config kimi-k2" in readme
    assert set(project["optional-dependencies"]) >= {"cuda", "train", "test"}
    # imageio: only the tests read videos back; the app needs an ffmpeg binary alone, imageio-ffmpeg's from the
    # `video` extra (make run and the bundle install it) or the system's (issue 43.7: 165 MB off a pip install)
    assert not any(d.startswith("imageio") for d in project["dependencies"])
    assert any(d.startswith("imageio-ffmpeg") for d in project["optional-dependencies"]["video"])
    assert any(d.startswith("imageio-ffmpeg") for d in project["optional-dependencies"]["test"])
    assert any(d.startswith("imageio>") for d in project["optional-dependencies"]["test"])
    for folder in ("app", "compute", "scene"):
        for path in (ROOT / folder).rglob("*.py"):
            assert not re.search(r"^\s*(import imageio\b(?!_)|from imageio\b(?!_))", path.read_text(), re.M), path


# --- launcher: icons, window icon and desktop file name (the desktop entry, metainfo, MIME type and
# --install-desktop: tests/app/test_desktop_citizen.py) -----------------------------------------------------


def test_icons_are_the_svg_rendered_at_every_size(qapp):
    import numpy as np
    from PySide6.QtGui import QImage

    from app.files import desktop
    from scene.palette import role_qcolor_tuple

    svg = desktop.icon_svg().read_text()
    for part in ("kda", "mla", "dense"):  # drawn in the scene's own colours: the layer stack
        assert "#%02x%02x%02x" % role_qcolor_tuple(part)[:3] in svg, part
    for size in desktop.ICON_SIZES:
        shipped = QImage(str(desktop.icon_png(size))).convertToFormat(QImage.Format_ARGB32)
        assert (shipped.width(), shipped.height()) == (size, size)
        fresh = desktop.render_icon(size)
        a = np.frombuffer(shipped.constBits(), np.uint8).reshape(size, size, 4).astype(int)
        b = np.frombuffer(fresh.constBits(), np.uint8).reshape(size, size, 4).astype(int)
        assert np.abs(a - b).max() <= 2, size  # re-render with `python -m app.files.desktop --render-icons`
        assert a[size // 2, size // 2, 3] == 255 and a[0, 0, 3] == 0  # opaque drawing, transparent corner
    assert sorted(s.width() for s in desktop.app_icon().availableSizes()) == list(desktop.ICON_SIZES)


LAUNCH = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    exec_ = QApplication.exec

    def report():
        app = QApplication.instance()
        window = [w for w in app.topLevelWidgets() if w.objectName() == "main_window" or hasattr(w, "registry")][0]
        print("desktop", app.desktopFileName())
        print("sizes", sorted(s.width() for s in app.windowIcon().availableSizes()))
        print("window_icon", not window.windowIcon().isNull())
        app.closeAllWindows()

    def patched(self):
        QTimer.singleShot(500, report)
        return exec_()

    QApplication.exec = patched
    from app.__main__ import main
    sys.exit(main(["--settings", {settings!r}, "--lang", "en"]))
""")


def test_the_window_has_the_icon_and_the_desktop_file_name(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    done = subprocess.run([sys.executable, "-c", LAUNCH.format(root=str(ROOT), settings=str(tmp_path / "s.ini"))],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "desktop io.github.k3explorer.K3Explorer" in done.stdout  # app.files.desktop.APP_ID, the reverse-DNS id
    assert "sizes [16, 24, 32, 48, 64, 128, 256, 512]" in done.stdout and "window_icon True" in done.stdout
