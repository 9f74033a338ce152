"""Help for support: Help -> Open log folder (the rotating log of app/log.py, in the file manager) and the text of
About -> Copy system info (what a bug report needs: versions, engine tier, GL renderer, display, paths)."""
from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices

from app import __version__, log
from app.i18n import tr

LIBRARIES = (("PySide6-Essentials", "PySide6"), ("numpy", "NumPy"), ("numba", "numba"), ("pyqtgraph", "pyqtgraph"),
             ("PyOpenGL", "PyOpenGL"), ("imageio-ffmpeg", "imageio-ffmpeg"), ("torch", "PyTorch"))


def open_log_folder(window=None) -> bool:
    """Open log.log_dir() in the desktop's file manager (made first when missing); a status-bar line says where
    it is, and why not when no file manager answers."""
    folder = log.log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    opened = QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
    if window is not None:
        key = "support.log_opened" if opened else "support.log_not_opened"
        window.statusBar().showMessage(tr(key, path=str(folder)), 15000)
    return opened


def _versions() -> list[str]:
    parts = [f"Python {platform.python_version()} ({sys.executable})"]
    for dist, label in LIBRARIES:
        try:
            parts.append(f"{label} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{label} -")
    from PySide6.QtCore import qVersion

    parts.insert(1, f"Qt {qVersion()}")
    return parts


def _engine(window) -> str:
    engine = getattr(window, "engine", None)
    if engine is None:
        return "-"
    device = getattr(engine, "device_text", "") or "loading"
    kernels = getattr(engine, "kernels", "?")
    no_numba = " (K3_NO_NUMBA set)" if os.environ.get("K3_NO_NUMBA") else ""
    return f"{device}; CPU kernels: {kernels}{no_numba}"


def _gl() -> str:
    try:
        return log.gl_strings()
    except Exception as exc:  # noqa: BLE001 - information only
        return f"unavailable ({type(exc).__name__}: {exc})".splitlines()[0]


def system_info(window=None) -> str:
    """Plain text, one fact a line, in English (what a bug report is read in)."""
    from PySide6.QtGui import QGuiApplication

    from compute import fused_nb

    settings = getattr(getattr(window, "settings", None), "path", "-")
    frozen = " (standalone bundle)" if getattr(sys, "frozen", False) else ""
    lines = [
        f"K3 Explorer {__version__}{frozen}",
        f"OS: {platform.platform()}; glibc {platform.libc_ver()[1] or '-'}; {platform.machine()}, "
        f"{os.cpu_count()} CPUs",
        "Libraries: " + " · ".join(_versions()),
        f"Engine: {_engine(window)}",
        f"OpenGL: {_gl()}",
        f"Display: Qt platform {QGuiApplication.platformName()}; DISPLAY={os.environ.get('DISPLAY', '-')}; "
        f"WAYLAND_DISPLAY={os.environ.get('WAYLAND_DISPLAY', '-')}",
        f"Settings: {settings}",
        f"Log: {log.log_file()}",
        f"Kernel cache: {fused_nb.cache_dir()}",
        f"Installed at: {os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))}",
    ]
    return "\n".join(lines) + "\n"
