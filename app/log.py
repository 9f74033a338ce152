"""Logging for K3 Explorer: one compact stderr handler on the root logger, and for the window a rotating log file
a user can find when the app was started from the app menu (no terminal): log_dir()/k3-explorer.log, i.e.
$XDG_STATE_HOME/k3-explorer/ (default ~/.local/state/k3-explorer/), 1 MB then rotated, three older files kept.
Help -> Open log folder opens that folder; About -> Copy system info names it.

Default level WARNING (engine errors with their tracebacks, failed exports; a normal session prints nothing and
the file gets one line per session); `--verbose` sets DEBUG (also the OpenGL renderer, the engine device and
run times, exported file paths). Modules log through `logging.getLogger(__name__)`.
"""
from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
DATE_FORMAT = "%H:%M:%S"
_HANDLER_NAME = "k3-explorer"
_FILE_HANDLER_NAME = "k3-explorer-file"
LOG_NAME = "k3-explorer.log"
FILE_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
MAX_BYTES = 1 << 20
BACKUPS = 3

log = logging.getLogger(__name__)
_gl_logged = False


def log_dir() -> Path:
    """The folder of the log file: $XDG_STATE_HOME/k3-explorer, else ~/.local/state/k3-explorer (XDG base
    directories: a relative $XDG_STATE_HOME is ignored)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "k3-explorer"


def log_file() -> Path:
    return log_dir() / LOG_NAME


def file_handler() -> logging.Handler | None:
    """The rotating file handler installed by setup(to_file=True), or None."""
    return next((h for h in logging.getLogger().handlers if h.get_name() == _FILE_HANDLER_NAME), None)


def _add_file_handler(root: logging.Logger) -> logging.Handler | None:
    """A RotatingFileHandler on log_file() whose first line says which session follows; None (and one warning
    on stderr) when the folder cannot be made or the file cannot be opened."""
    from app import __version__

    path = log_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                       encoding="utf-8", delay=False)
    except OSError as exc:
        log.warning("no log file (%s): %s", path, exc.strerror or exc)
        return None
    handler.set_name(_FILE_HANDLER_NAME)
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    root.addHandler(handler)
    import platform

    record = logging.LogRecord("app.log", logging.INFO, __file__, 0, "session start: k3-explorer %s, Python %s, "
                               "pid %d", (__version__, platform.python_version(), os.getpid()), None)
    handler.handle(record)  # whatever the level: the session's first line
    return handler


def setup(verbose: bool = False, stream=None, to_file: bool = False) -> logging.Handler:
    """Install (or replace) the app's stderr handler and set the root level: DEBUG if verbose, else WARNING.
    to_file: also the rotating log file (the window; see log_dir())."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() in (_HANDLER_NAME, _FILE_HANDLER_NAME):
            root.removeHandler(handler)
            if handler.get_name() == _FILE_HANDLER_NAME:
                handler.close()
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(logging.Formatter(FORMAT, DATE_FORMAT))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    if to_file:
        _add_file_handler(root)
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
