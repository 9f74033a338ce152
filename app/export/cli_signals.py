"""The export command's signal handling: SIGINT and SIGTERM unwind the export like KeyboardInterrupt (Stopped),
so every writer removes its temporary file; sections where an exception must not be raised record the signal
and raise it when they end (app/cli.py's main installs the handler)."""
from __future__ import annotations

import signal

class Stopped(BaseException):
    """SIGINT or SIGTERM arrived: unwinds like KeyboardInterrupt, so every writer removes its temporary file."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_stopped: list[int] = []  # the signal that arrived (a slot run by Qt may swallow the exception: see check_stop)


_shield: list[int] = []  # non-empty while code runs that must not see an exception (see _shielded)


def _on_signal(signum, _frame) -> None:
    _stopped.append(signum)
    for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal does not interrupt the clean-up
        signal.signal(sig, signal.SIG_IGN)
    if _shield:  # raised by check_stop() when the shielded section ends
        return
    raise Stopped(signum)


class _shielded:
    """A section where a signal is only recorded and raised when it ends. shiboken6 runs Python code while it
    initialises (its signature module): an exception raised there is a fatal error (abort, exit -6, 'could not
    initialize part 2'), not an exception, so the first PySide6 imports run shielded."""

    def __enter__(self):
        _shield.append(1)

    def __exit__(self, *exc):
        _shield.pop()
        if exc[0] is None:
            check_stop()
        return False


def check_stop() -> None:
    """Raise Stopped if a signal arrived (called between frames: an exception raised inside a Qt slot is
    swallowed by Qt)."""
    if _stopped:
        raise Stopped(_stopped[0])


def _quiet_stop(hook):
    """hook, except that a Stopped raised where it cannot propagate (a ctypes callback of numba's compiler, a
    slot called by Qt) prints nothing: the next check_stop() raises it again."""
    def quiet(*args):
        first = args[0]
        exc_type = getattr(first, "exc_type", first)  # unraisablehook: one argument; excepthook: (type, ...)
        if isinstance(exc_type, type) and issubclass(exc_type, Stopped):
            return None
        return hook(*args)

    return quiet
