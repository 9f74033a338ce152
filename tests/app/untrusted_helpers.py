"""Helpers for the untrusted-text tests: a FIFO that reports being opened, hostile strings, and
what a widget really shows."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from PySide6.QtCore import Qt

from app.widgets.safe_text import might_be_rich


_WATCHER = r"""
import os, sys, time
fifo, log, barrier, barrier_log = sys.argv[1:5]


def serve(path, log_path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: nobody is reading
        return False
    with open(log_path, "a") as fh:
        fh.write("open\n")
    os.close(fd)
    return True


while os.path.exists(fifo):
    served = serve(fifo, log)  # the trap first: a barrier asked for later is served after it
    served = serve(barrier, barrier_log) or served
    time.sleep(0.005 if served else 0.002)
"""


class FifoTrap:
    """A FIFO whose opening for reading is seen. A reader's open() blocks until a writer comes; a watcher
    process (not a thread: a UI thread blocked in open() inside Qt may hold the GIL) keeps trying to open it
    for writing without blocking, which succeeds only while a reader waits, logs it and closes it again, so the
    reader gets an empty file and never hangs."""

    def __init__(self, path):
        self.path = str(path)
        self.log = self.path + ".log"
        self.barrier = self.path + ".barrier"  # a second FIFO the same watcher serves, after the trap
        os.mkfifo(self.path)
        os.mkfifo(self.barrier)
        open(self.log, "w").close()
        self._proc = subprocess.Popen([sys.executable, "-c", _WATCHER, self.path, self.log, self.barrier,
                                       self.barrier + ".log"])

    def logged(self) -> int:
        """How many times the FIFO was opened so far, each open made before this call in the count: opens the
        barrier FIFO (without blocking) and waits until the watcher has served it (its writer came and went:
        POLLHUP on the read end). The watcher serves the trap first in each round and logs an open before it
        lets the reader go, so by then every earlier open of the trap is in the log — no wait for a while that
        may be too short on a loaded machine."""
        import select

        fd = os.open(self.barrier, os.O_RDONLY | os.O_NONBLOCK)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLHUP)
            deadline = time.monotonic() + 20
            while not any(ev & select.POLLHUP for _fd, ev in poller.poll(1000)):
                assert time.monotonic() < deadline and self._proc.poll() is None, "the FIFO watcher stopped"
        finally:
            os.close(fd)
        return self.opened

    @property
    def opened(self) -> int:
        with open(self.log) as fh:
            return sum(1 for _ in fh)

    def close(self) -> None:
        for path in (self.path, self.barrier):
            try:
                os.unlink(path)
            except OSError:
                pass
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)


def rich_shown(widget) -> bool:
    """True when the widget (QLabel, QMessageBox) renders its text as rich text."""
    fmt = widget.textFormat()
    return fmt == Qt.TextFormat.RichText or (fmt in (Qt.TextFormat.AutoText,) and might_be_rich(widget.text()))


MARK = "k3probe"
# raw markup of ours, seen unescaped in a rich text: markup Qt obeys (escaped, none of these can match)
_MARKUP = [re.compile(p, re.IGNORECASE) for p in (
    r"<\s*img\b[^>]*" + MARK, r"<\s*a\b[^>]*" + MARK, r"<\s*style\b[^>]*>[^<]*" + MARK, r"<b>" + MARK + "-bold",
    r"!\[[^\]]*\]\([^)]*" + MARK)]


def hostile(fifo: str, pad: int = 0) -> str:
    """One string with an image (a FIFO: opening it is seen), a link, a style sheet and bold markup, each
    carrying MARK, and `pad` characters more."""
    return (f'<img src="{fifo}"><a href="{MARK}-link">{MARK}-anchor</a>'
            f"<style>.{MARK}-css{{color:red}}</style><b>{MARK}-bold</b>" + "x" * pad)


def markup_in(text: str) -> bool:
    return any(p.search(text or "") for p in _MARKUP)


def rich_text_leaks(widgets=None, actions=()) -> list[str]:
    """Every widget, item and action showing hostile markup (MARK inside a tag) as rich text: labels and
    message boxes (RichText, or AutoText that looks like markup), text edits (their document holds an image
    or link of ours, or the style sheet text vanished), tooltips of widgets, list / table / tree items,
    tab bars and actions."""
    from PySide6.QtWidgets import (QAbstractItemView, QApplication, QLabel, QMessageBox, QTabBar, QTextEdit, QGraphicsView, QGraphicsTextItem)

    out = []
    for w in (QApplication.allWidgets() if widgets is None else widgets):
        name = f"{type(w).__name__}({w.objectName()})"
        if isinstance(w, (QLabel, QMessageBox)):
            if rich_shown(w) and markup_in(w.text()):
                out.append(f"{name}.text: {w.text()[:160]!r}")
            if isinstance(w, QMessageBox) and might_be_rich(w.informativeText()) \
                    and markup_in(w.informativeText()):
                out.append(f"{name}.informativeText")
        if isinstance(w, QTextEdit):
            if _document_obeys(w.document()):
                out.append(f"{name}.document: {w.toPlainText()[:160]!r}")
        if isinstance(w, QGraphicsView) and w.scene() is not None:  # pyqtgraph's labels are HTML
            for item in w.scene().items():
                if isinstance(item, QGraphicsTextItem) and _document_obeys(item.document()):
                    out.append(f"{name}.scene text item: {item.toPlainText()[:160]!r}")
        tip = w.toolTip()
        if might_be_rich(tip) and markup_in(tip):
            out.append(f"{name}.toolTip: {tip[:160]!r}")
        if isinstance(w, QTabBar):
            for i in range(w.count()):
                t = w.tabToolTip(i)
                if might_be_rich(t) and markup_in(t):
                    out.append(f"{name}.tabToolTip[{i}]")
        if isinstance(w, QAbstractItemView) and w.model() is not None:
            m = w.model()
            for r in range(500):
                if not m.index(r, 0).isValid():
                    break
                for c in range(50):
                    idx = m.index(r, c)
                    if not idx.isValid():
                        break
                    t = m.data(idx, Qt.ItemDataRole.ToolTipRole)
                    if isinstance(t, str) and might_be_rich(t) and markup_in(t):
                        out.append(f"{name}.item[{r},{c}].toolTip")
        for a in w.actions():
            t = a.toolTip()
            if might_be_rich(t) and markup_in(t):
                out.append(f"{name}.action({a.objectName() or a.text()[:40]}).toolTip")
    for a in actions:
        t = a.toolTip()
        if might_be_rich(t) and markup_in(t):
            out.append(f"action({a.objectName() or a.text()[:40]}).toolTip")
    return sorted(set(out))


def _document_obeys(doc) -> bool:
    """The document holds an image or link of ours, or shows our bold text without its tags."""
    html_text, plain = doc.toHtml(), doc.toPlainText()
    return bool(re.search(r"<img[^>]*" + MARK, html_text) or re.search(r"<a href=\"" + MARK, html_text)
                or (MARK + "-bold" in plain and "<b>" + MARK + "-bold" not in plain))


def shown_plain(widget) -> str:
    """The text a QLabel / QMessageBox / QTextEdit shows, as plain text (rich text rendered by a document that
    loads no resource)."""
    from PySide6.QtWidgets import QTextEdit

    from app.widgets.safe_text import SafeTextDocument

    if isinstance(widget, QTextEdit):
        return widget.toPlainText()
    if not rich_shown(widget):
        return widget.text()
    doc = SafeTextDocument()
    doc.setHtml(widget.text())
    return doc.toPlainText()
