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
