"""No exception leaves a Qt slot.

An exception that leaves a slot, a timer callback or a virtual override is printed by PySide and leaves the
panel half drawn; one escaping a worker thread dies there unseen. Here is the one place that handles them:

- `guarded(fn)` / `@guarded` wraps a slot: any exception is logged with its traceback (app/log.py's root
  handler) and said in one line in the main window's status bar; the slot returns None and the app goes on.
  Qt's extra signal arguments beyond those the function takes are dropped (as PySide does for a plain slot).
- `report(exc, where)` is what the guard does, for code that catches an exception itself and shows it in its
  own panel too (the trace player).
- `install_excepthook()` (the app's entry point): anything that still reaches `sys.excepthook` or
  `threading.excepthook` is reported the same way; the app never aborts on it.

Tests register an observer (`observe`) and fail on any report: a guarded exception is a bug even though the
user only sees a status line (tests/app/conftest.py).
"""
from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading
import traceback
from typing import Callable

log = logging.getLogger(__name__)
STATUS_MS = 15000
_observers: list[Callable[[BaseException, str], None]] = []
_bridge = None  # a QObject living in the GUI thread: reports from other threads reach the status bar through it
_installed = False


def one_line(exc: BaseException, limit: int = 200) -> str:
    """'TypeError: first line of the message', cut to `limit` characters."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text and text[0] else type(exc).__name__
    return line if len(line) <= limit else line[:limit - 1] + "…"


def observe(observer: Callable[[BaseException, str], None]) -> None:
    """Call observer(exc, where) on every report (tests fail on them)."""
    _observers.append(observer)


def unobserve(observer: Callable[[BaseException, str], None]) -> None:
    if observer in _observers:
        _observers.remove(observer)


def report(exc: BaseException, where: str = "") -> None:
    """Log `exc` with its traceback and show one line in the main window's status bar (from any thread)."""
    try:
        log.error("unexpected error in %s: %s\n%s", where or "a slot", one_line(exc),
                  "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
    except Exception:  # noqa: BLE001 - reporting must never raise
        pass
    for observer in list(_observers):
        try:
            observer(exc, where)
        except Exception:  # noqa: BLE001
            pass
    try:
        _show(exc, where)
    except Exception:  # noqa: BLE001 - no window (yet), or it is being deleted: the log has it
        pass


def _message(exc: BaseException, where: str) -> str:
    from app.i18n import tr

    return tr("guard.slot.error", where=where or "?", message=one_line(exc))


def _show(exc: BaseException, where: str) -> None:
    from PySide6.QtCore import QCoreApplication, QThread

    app = QCoreApplication.instance()
    if app is None:
        return
    text = _message(exc, where)
    if QThread.currentThread() is app.thread():
        _show_text(text)
    else:
        _gui_bridge().message.emit(text)  # queued into the GUI thread


def _show_text(text: str) -> None:
    window = main_window()
    if window is not None:
        window.statusBar().showMessage(text, STATUS_MS)


def main_window():
    """The application's main window (the active one when there are several), or None."""
    from PySide6.QtWidgets import QApplication, QMainWindow

    active = QApplication.activeWindow()
    if isinstance(active, QMainWindow):
        return active
    windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMainWindow) and w.isVisible()]
    return windows[0] if windows else None


def _gui_bridge():
    global _bridge
    if _bridge is None:
        from PySide6.QtCore import QCoreApplication, QObject, Signal

        class _Bridge(QObject):
            message = Signal(str)

        _bridge = _Bridge()
        _bridge.moveToThread(QCoreApplication.instance().thread())
        _bridge.message.connect(_show_text)
    return _bridge


def _positional_count(fn) -> int | None:
    """How many positional arguments `fn` takes (None: any number)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def guarded(fn=None, *, where: str | None = None):
    """Wrap a slot (function, bound method, or a method when used as a decorator): exceptions are reported
    (log + status bar), never let out into Qt. Extra positional arguments Qt passes are dropped."""
    if fn is None:
        return lambda f: guarded(f, where=where)
    name = where or getattr(fn, "__qualname__", None) or repr(fn)
    n_args = _positional_count(fn)

    @functools.wraps(fn)
    def slot(*args, **kwargs):
        try:
            return fn(*(args if n_args is None else args[:n_args]), **kwargs)
        except Exception as exc:  # noqa: BLE001 - the point of the guard
            report(exc, name)
            return None

    slot.__k3_guarded__ = True
    return slot


def _excepthook(exc_type, exc, tb) -> None:
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    if exc is None:
        exc = exc_type()
    if exc.__traceback__ is None and tb is not None:
        exc = exc.with_traceback(tb)
    report(exc, "Qt event loop")


def _thread_excepthook(args) -> None:
    if args.exc_type is SystemExit:
        return
    exc = args.exc_value if args.exc_value is not None else args.exc_type()
    report(exc, f"thread {getattr(args.thread, 'name', '?')}")


def install_excepthook() -> None:
    """The app's last line: an exception reaching sys.excepthook (a slot, timer or virtual override PySide
    called) or threading.excepthook is logged and shown in one status line; the app keeps running."""
    global _installed
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    _installed = True
