"""What the display offers, probed before Qt and OpenGL load (ctypes and libxcb only: no Qt, no OpenGL here).

Two things must be known before the QApplication and before `import OpenGL`:

- Whether Qt's xcb platform can connect at all: when it cannot, Qt aborts the process (SIGABRT) with a
  message about xcb-cursor that misleads. `display_problem()` says "missing" or "unreachable" instead.
- Which GL window system Qt will use. Qt draws through GLX when the X server has the GLX extension and
  through EGL otherwise (VNC, X forwarding, `Xvfb -extension GLX`). PyOpenGL picks its platform once, when
  `OpenGL` is first imported (pyqtgraph imports it), and must look for the context where Qt made it, else
  every GL call raises "Attempt to retrieve context when no valid context". `prepare_gl_platform()` sets
  PYOPENGL_PLATFORM to match (a value the user set is kept).

    from scene.display import display_problem, prepare_gl_platform
    problem = display_problem()      # None, "missing" or "unreachable"
    prepare_gl_platform()            # before anything imports OpenGL / pyqtgraph
    ...                              # the QApplication connects
    release_probe()

Before both, `missing_libraries()` looks for the shared libraries Qt's xcb platform plugin and QtGui link
against (dlopen by soname, as the dynamic loader will): without one of them Qt aborts with "could not load
the Qt platform plugin". It returns each missing soname with the Debian/Ubuntu package that holds it, so
the caller can say in one line what to install.

The probe's connection stays open until release_probe(): an X server with no other client (a bare Xvfb, as
under `xvfb-run`) resets when its last client leaves, and a client connecting during that reset is refused —
Qt would then abort just after the probe said the display was fine.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from dataclasses import dataclass
from typing import Mapping

EGL_PLATFORMS = ("wayland", "wayland-egl", "eglfs", "minimalegl")

# What PySide6's libqxcb.so, libQt6XcbQpa.so.6 and libQt6Gui.so.6 (6.11) list as NEEDED outside Qt and libc
# (readelf -d), with the Debian 12 / Ubuntu package of each (dpkg -S); without any of them Qt cannot start
# on X11. (libxcb-glx0 is left out: without it Qt's GLX integration is skipped, the app still starts.) The
# Makefile's RUN_DEB_PACKAGES holds every one of these packages: a test keeps the two in step.
QT_XCB_LIBRARIES: tuple[tuple[str, str], ...] = (
    ("libxcb.so.1", "libxcb1"),
    ("libX11.so.6", "libx11-6"),
    ("libX11-xcb.so.1", "libx11-xcb1"),
    ("libxcb-cursor.so.0", "libxcb-cursor0"),
    ("libxcb-icccm.so.4", "libxcb-icccm4"),
    ("libxcb-image.so.0", "libxcb-image0"),
    ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
    ("libxcb-randr.so.0", "libxcb-randr0"),
    ("libxcb-render.so.0", "libxcb-render0"),
    ("libxcb-render-util.so.0", "libxcb-render-util0"),
    ("libxcb-shape.so.0", "libxcb-shape0"),
    ("libxcb-shm.so.0", "libxcb-shm0"),
    ("libxcb-sync.so.1", "libxcb-sync1"),
    ("libxcb-util.so.1", "libxcb-util1"),
    ("libxcb-xfixes.so.0", "libxcb-xfixes0"),
    ("libxcb-xkb.so.1", "libxcb-xkb1"),
    ("libxkbcommon.so.0", "libxkbcommon0"),
    ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    ("libGL.so.1", "libgl1"),
    ("libEGL.so.1", "libegl1"),
    ("libglib-2.0.so.0", "libglib2.0-0"),
    ("libfontconfig.so.1", "libfontconfig1"),
    ("libfreetype.so.6", "libfreetype6"),
    ("libdbus-1.so.3", "libdbus-1-3"),
)
_held: list = []  # (libxcb, connection) of probes kept open until release_probe()


@dataclass(frozen=True)
class X11Probe:
    """One look at an X display: could it be opened, and does it have GLX (None: not known)."""
    reachable: bool
    glx: bool | None


def qt_platform(env: Mapping[str, str] = os.environ) -> str:
    """The first platform plugin Qt will try ('' when QT_QPA_PLATFORM does not name one)."""
    value = env.get("QT_QPA_PLATFORM", "")
    return value.split(";")[0].split(":")[0].strip().lower()


def uses_x11(env: Mapping[str, str] = os.environ) -> bool:
    """True when Qt will draw through its xcb platform: named, or the default with no Wayland display."""
    platform = qt_platform(env)
    return platform == "xcb" or (platform == "" and not env.get("WAYLAND_DISPLAY"))


class _XcbQueryExtensionCookie(ctypes.Structure):
    _fields_ = [("sequence", ctypes.c_uint)]


class _XcbQueryExtensionReply(ctypes.Structure):
    _fields_ = [("response_type", ctypes.c_uint8), ("pad0", ctypes.c_uint8), ("sequence", ctypes.c_uint16),
                ("length", ctypes.c_uint32), ("present", ctypes.c_uint8), ("major_opcode", ctypes.c_uint8),
                ("first_event", ctypes.c_uint8), ("first_error", ctypes.c_uint8)]


def _load_library(soname: str) -> None:
    """dlopen one shared library by soname (the loader's own search: ld.so.cache, LD_LIBRARY_PATH); OSError when
    it, or a library it needs, cannot be found."""
    ctypes.CDLL(soname)


def missing_libraries(env: Mapping[str, str] = os.environ, load=None,
                      platform: str = sys.platform) -> list[tuple[str, str]]:
    """(soname, Debian package) of every library Qt's xcb platform needs that cannot be loaded (by `load`,
    default _load_library); [] when all load, or when Qt will not use xcb (Wayland, offscreen, …) or the
    system is not Linux."""
    if not platform.startswith("linux") or not uses_x11(env):
        return []
    load = load or _load_library
    missing = []
    for soname, package in QT_XCB_LIBRARIES:
        try:
            load(soname)
        except OSError:
            missing.append((soname, package))
    return missing


def install_command(missing: list[tuple[str, str]]) -> str:
    """The one apt-get line that installs the packages of `missing` (each package once, in order)."""
    packages = list(dict.fromkeys(package for _, package in missing))
    return "sudo apt-get install " + " ".join(packages)


def _libxcb():
    name = ctypes.util.find_library("xcb") or "libxcb.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.xcb_connect.restype = ctypes.c_void_p
    lib.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    lib.xcb_connection_has_error.restype = ctypes.c_int
    lib.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    lib.xcb_disconnect.restype = None
    lib.xcb_disconnect.argtypes = [ctypes.c_void_p]
    lib.xcb_query_extension.restype = _XcbQueryExtensionCookie
    lib.xcb_query_extension.argtypes = [ctypes.c_void_p, ctypes.c_uint16, ctypes.c_char_p]
    lib.xcb_query_extension_reply.restype = ctypes.POINTER(_XcbQueryExtensionReply)
    lib.xcb_query_extension_reply.argtypes = [ctypes.c_void_p, _XcbQueryExtensionCookie, ctypes.c_void_p]
    return lib


def probe_x11(display: str | None) -> X11Probe | None:
    """Open the X display the way Qt's xcb platform does and ask whether it has GLX; the connection is kept
    until release_probe(). None when libxcb cannot be loaded (then Qt's xcb platform cannot run either)."""
    lib = _libxcb()
    if lib is None:
        return None
    conn = lib.xcb_connect(display.encode() if display else None, None)
    if not conn:
        return X11Probe(reachable=False, glx=None)
    if lib.xcb_connection_has_error(conn):
        lib.xcb_disconnect(conn)  # frees a connection in error
        return X11Probe(reachable=False, glx=None)
    _held.append((lib, conn))
    cookie = lib.xcb_query_extension(conn, 3, b"GLX")
    reply = lib.xcb_query_extension_reply(conn, cookie, None)
    if not reply:
        return X11Probe(reachable=True, glx=None)
    glx = bool(reply.contents.present)
    _free(reply)
    return X11Probe(reachable=True, glx=glx)


def release_probe() -> None:
    """Close the probes' connections (call once Qt holds its own connection to the display)."""
    while _held:
        lib, conn = _held.pop()
        lib.xcb_disconnect(conn)


def _free(pointer) -> None:
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(ctypes.cast(pointer, ctypes.c_void_p))


def display_problem(env: Mapping[str, str] = os.environ, probe=probe_x11) -> str | None:
    """None when Qt can open its display; "missing" when no display is set for the xcb platform,
    "unreachable" when DISPLAY names an X server that cannot be opened. Other platforms are not checked."""
    if not uses_x11(env):
        return None
    display = env.get("DISPLAY", "")
    if not display:
        return "missing"
    result = probe(display)
    if result is not None and not result.reachable:
        return "unreachable"
    return None


def gl_platform_for(env: Mapping[str, str] = os.environ, probe=probe_x11) -> str | None:
    """The PYOPENGL_PLATFORM that matches Qt's GL window system ("glx" or "egl"), or None to leave
    PyOpenGL's own choice (a value already set, no GL integration, a platform not known here)."""
    if env.get("PYOPENGL_PLATFORM"):
        return None
    platform = qt_platform(env)
    if platform in EGL_PLATFORMS:
        return "egl"
    if not uses_x11(env) or not env.get("DISPLAY"):
        return None
    integration = env.get("QT_XCB_GL_INTEGRATION", "").strip().lower()
    if integration == "xcb_egl":
        return "egl"
    if integration == "xcb_glx":
        return "glx"
    if integration:  # "none" or unknown: no GL context will be made to match
        return None
    result = probe(env["DISPLAY"])
    if result is None or not result.reachable or result.glx is None:
        return None
    return "glx" if result.glx else "egl"


def prepare_gl_platform(env=os.environ) -> str | None:
    """Set PYOPENGL_PLATFORM to match Qt (see the module docstring) unless OpenGL is already imported;
    returns the value set, or None when nothing was changed."""
    if "OpenGL" in sys.modules:
        return None
    choice = gl_platform_for(env)
    if choice is not None:
        env["PYOPENGL_PLATFORM"] = choice
    return choice
