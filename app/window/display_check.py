"""Can Qt use the display? One translated line saying why not, or None: the check the GUI (app/__main__.py), the
CLI export (app/cli.py) and the Python API (app/api.py) make before they create a QApplication, so a missing
X11 library or display is one clear line instead of Qt's abort."""
from __future__ import annotations

import os

from app.i18n import tr


def missing_libraries_error() -> str | None:
    """One translated line naming the libraries Qt's xcb platform needs that are missing and the apt-get line that
    installs them (Qt would abort with "could not load the Qt platform plugin"), or None."""
    from scene.display import install_command, missing_libraries

    missing = missing_libraries()
    if not missing:
        return None
    return tr("ship.missing_libraries", libraries=", ".join(soname for soname, _ in missing),
              command=install_command(missing))


_private = None  # the Xvfb process this process started for an off-screen export, or None
XVFB_START_S = 20.0  # how long Xvfb may take to say which display it took


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the Xvfb child gets SIGTERM when this process ends, however it ends (no X connection of ours can
    outlive its server, and no server outlives us)."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_private_display() -> bool:
    """Start a private Xvfb (1920x1080, 24-bit; Xvfb picks a free display number and writes it to a pipe,
    -displayfd) and point DISPLAY at it, once per process; Xvfb ends with this process. For the commands that draw
    off screen (`k3-explorer export`), never for the window. False when Xvfb is not installed or does not start
    in XVFB_START_S (the caller then says how to get a display)."""
    global _private
    if _private is not None:
        return True
    import select
    import shutil
    import subprocess
    import time

    exe = shutil.which("Xvfb")
    if exe is None:
        return False
    rfd, wfd = os.pipe()
    try:
        proc = subprocess.Popen([exe, "-displayfd", str(wfd), "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
                                pass_fds=[wfd], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    except OSError:
        os.close(rfd)
        os.close(wfd)
        return False
    os.close(wfd)
    text, deadline = b"", time.monotonic() + XVFB_START_S
    try:
        while not text.endswith(b"\n") and time.monotonic() < deadline:
            if select.select([rfd], [], [], 0.1)[0]:
                chunk = os.read(rfd, 16)
                if not chunk:  # Xvfb exited without a display
                    break
                text += chunk
    finally:
        os.close(rfd)
    if not text.strip().isdigit():
        proc.kill()
        proc.wait()
        return False
    _private = proc
    os.environ["DISPLAY"] = f":{int(text)}"
    os.environ.pop("WAYLAND_DISPLAY", None)  # Qt would pick Wayland over the new X display
    return True


def display_error(private: bool = False) -> str | None:
    """One translated line when Qt could not use the display (a library Qt's xcb platform needs is missing,
    no display is set, or no X server answers there). private: first try a private Xvfb of this process when
    there is no usable display (start_private_display)."""
    from scene.display import display_problem

    missing = missing_libraries_error()
    if missing:
        return missing
    problem = display_problem()
    if problem is not None and private and start_private_display():
        problem = display_problem()
    if problem is None:
        return None
    key = "app.cli.no_display" if problem == "missing" else "app.cli.display_unreachable"
    return tr(key, display=os.environ.get("DISPLAY", ""))
