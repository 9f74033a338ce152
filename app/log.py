"""Logging for K3 Explorer: one compact stderr handler on the root logger.

Default level WARNING (engine errors and failed exports show up; a normal session prints nothing);
`--verbose` sets DEBUG (also the OpenGL renderer, the engine device and run times, exported file paths).
Modules log through `logging.getLogger(__name__)`.
"""
from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
DATE_FORMAT = "%H:%M:%S"
_HANDLER_NAME = "k3-explorer"

log = logging.getLogger(__name__)
_gl_logged = False


def setup(verbose: bool = False, stream=None) -> logging.Handler:
    """Install (or replace) the app's stderr handler and set the root level: DEBUG if verbose, else WARNING."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(logging.Formatter(FORMAT, DATE_FORMAT))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    for noisy in ("OpenGL", "PIL", "matplotlib"):  # their DEBUG chatter would drown ours; their INFO only if verbose
        logging.getLogger(noisy).setLevel(logging.INFO if verbose else logging.WARNING)
    return handler


def log_gl_info() -> None:
    """Log the OpenGL vendor / renderer / version once per process (INFO), from a short-lived context on the
    UI thread; a missing OpenGL is logged as a warning."""
    global _gl_logged
    if _gl_logged or not log.isEnabledFor(logging.INFO):
        return  # (no context is made just to be thrown away unlogged)
    _gl_logged = True
    try:
        info = gl_strings()
    except Exception as exc:  # noqa: BLE001 - information only
        log.warning("OpenGL: no context (%s)", exc)
        return
    log.info("OpenGL: %s", info)


def gl_strings() -> str:
    """'vendor · renderer · version' of a context in the application's share group (needs a QGuiApplication)."""
    from OpenGL import GL

    from scene.frames import PAINT_LOCK, new_context

    surface, context = new_context()
    try:
        with PAINT_LOCK:
            if not context.makeCurrent(surface):
                raise RuntimeError("makeCurrent failed")
            try:
                parts = [GL.glGetString(name) for name in (GL.GL_VENDOR, GL.GL_RENDERER, GL.GL_VERSION)]
            finally:
                context.doneCurrent()
    finally:
        surface.destroy()
    return " · ".join(p.decode("utf-8", "replace") if isinstance(p, bytes) else str(p) for p in parts)
