"""Ctrl+C (SIGINT) and SIGTERM in the terminal close the window the way its close button does.

Python runs a signal handler only between two bytecodes, and while Qt's event loop waits in C++ no bytecode
runs: by default Ctrl+C did nothing until the next Python slot, then raised KeyboardInterrupt out of it (a
traceback, the window stayed). Here the signal's C-level handler writes a byte to a socket
(`signal.set_wakeup_fd`) that a QSocketNotifier watches, so the event loop wakes at once; the Python handler
then asks for the close through a zero-delay timer, never from inside whatever code it interrupted. Closing
goes through every top-level window's closeEvent (the main window saves its settings and stops its engine),
then the event loop ends. A second signal while that runs gets the default action (a stuck close can still be
interrupted). `app.exec()`'s caller returns 128 + the signal number (130 / 143), as a shell expects of a
program that a signal stopped.

    stopper = SignalStopper(app)     # after the QApplication, before app.exec()
    code = app.exec()
    code = stopper.exit_code(code)   # 130 / 143 when a signal closed it
    stopper.uninstall()
"""
from __future__ import annotations

import logging
import signal
import socket

from PySide6.QtCore import QObject, QSocketNotifier, QTimer

SIGNALS = (signal.SIGINT, signal.SIGTERM)
log = logging.getLogger(__name__)


class SignalStopper(QObject):
    def __init__(self, app, signals=SIGNALS):
        super().__init__(app)
        self.app = app
        self.signum: int | None = None
        self._read, self._write = socket.socketpair()
        for sock in (self._read, self._write):
            sock.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        self._notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Read, self)
        self._notifier.activated.connect(self._drain)
        self._previous = {sig: signal.signal(sig, self._on_signal) for sig in signals}

    def _drain(self, *_args) -> None:
        """The event loop woke for the wakeup byte (the Python handler has run before this slot's first line)."""
        try:
            while self._read.recv(64):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _on_signal(self, signum, _frame) -> None:
        if self.signum is not None:
            return
        self.signum = signum
        for sig in self._previous:  # a second Ctrl+C / SIGTERM: the default action, should closing hang
            signal.signal(sig, signal.SIG_DFL)
        log.info("%s: closing the window", signal.Signals(signum).name)
        QTimer.singleShot(0, self._close)

    def _close(self) -> None:
        self.app.closeAllWindows()  # every closeEvent runs: the main window saves its settings
        self.app.quit()  # also ends a modal dialog's own event loop

    def exit_code(self, code: int) -> int:
        return 128 + self.signum if self.signum is not None else code

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            if signal.getsignal(sig) in (self._on_signal, signal.SIG_DFL):
                signal.signal(sig, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._notifier.setEnabled(False)
        self._read.close()
        self._write.close()
