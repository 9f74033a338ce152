"""One X display for the GUI benches: the current DISPLAY, or a private Xvfb started for the run.

    with x_display("bench/scene.py"):
        ...   # Qt (xcb) can open windows here
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path


@contextlib.contextmanager
def x_display(who: str):
    """Yield with DISPLAY set and QT_QPA_PLATFORM=xcb; start (and finally stop) an Xvfb when DISPLAY is unset."""
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if not xvfb:
        raise SystemExit(f"{who} needs an X display: install xvfb or set DISPLAY")
    for n in range(150, 200):
        if not Path(f"/tmp/.X{n}-lock").exists():
            break
    else:
        raise SystemExit("no free X display number in :150-:199")
    proc = subprocess.Popen([xvfb, f":{n}", "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    os.environ["DISPLAY"] = f":{n}"
    try:
        yield os.environ["DISPLAY"]
    finally:
        _close_qt()  # the X server must outlive every connection to it
        proc.terminate()
        proc.wait(timeout=10)


def _close_qt() -> None:
    import sys

    if "PySide6" not in sys.modules:
        return
    import shiboken6
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is not None:
        for w in QApplication.topLevelWidgets():
            w.close()
        app.processEvents()
        if "scene.frames" in sys.modules:  # render threads end before Qt (and its GL) goes away
            sys.modules["scene.frames"].stop_all()
        shiboken6.delete(app)
