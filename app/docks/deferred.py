"""Work that only pays off while a dock's content can be seen.

Qt keeps the covered tabs of a tabbed dock area "visible" (isVisible() stays True, no hideEvent), so a widget
cannot rely on show/hide events alone: `on_screen` also asks whether its dock is the tab on top, and
`watch_dock` calls back when the dock's tab is raised or covered (QDockWidget.visibilityChanged).
"""
from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QDockWidget, QWidget

from app.slot_guard import guarded


def enclosing_dock(widget: QWidget) -> QDockWidget | None:
    p = widget.parentWidget()
    while p is not None and not isinstance(p, QDockWidget):
        p = p.parentWidget()
    return p


def on_screen(widget: QWidget) -> bool:
    """Visible, and not inside a dock whose tab is covered by another dock's."""
    if not widget.isVisible():
        return False
    dock = enclosing_dock(widget)
    return dock is None or not dock.visibleRegion().isEmpty()


def watch_dock(widget: QWidget, callback) -> bool:
    """Call callback(shown: bool) after the widget's dock tab is raised (True) or covered (False), once the
    layout has settled (the next event-loop turn, with the last state of the changes made meanwhile). Returns
    False when the widget is not (yet) inside a dock.

    The turn's delay is a single-shot QTimer that is the dock's child. A `QTimer.singleShot(0, dock, fn)` per change
    kept fn for good when the dock went before it fired (a window closed hides its docks, then goes): fn held the
    widget and through it the whole window — each closed window stayed in memory (~120 MB)."""
    dock = enclosing_dock(widget)
    if dock is None:
        return False
    timer = QTimer(dock)  # the dock's child: it and its connection go with the dock
    timer.setSingleShot(True)
    timer.setInterval(0)
    seen = {"shown": False}
    timer.timeout.connect(guarded(lambda: callback(seen["shown"])))
    dock.visibilityChanged.connect(guarded(lambda shown: (seen.update(shown=bool(shown)), timer.start())))
    return True


class DeferredRefreshMixin:
    """For a QWidget with a `refresh()` that re-reads the trace: a refresh asked for while the widget cannot be
    seen (hidden, or in a covered dock tab) is postponed until it can (covered tabs cost nothing on a token /
    layer / trace change).

    `refresh()` starts with `if self.postpone_while_hidden(): return`."""

    _dirty = True
    _watching = False

    @guarded
    def showEvent(self, event):  # noqa: N802
        super().showEvent(event)
        if not self._watching:
            self._watching = watch_dock(self, self._dock_shown)
        if self._dirty:
            guarded(self.refresh, where=f"{type(self).__name__}.refresh")()  # a virtual override: nothing leaves it

    @guarded
    def _dock_shown(self, shown: bool) -> None:
        if shown and self._dirty:
            self.refresh()

    def postpone_while_hidden(self) -> bool:
        if not on_screen(self):
            self._dirty = True
            return True
        self._dirty = False
        return False


class VisibleTimerMixin:
    """For a QWidget with `self.timer` (QTimer) driving an animation: the timer runs only while the widget can
    be seen (not hidden, not in a covered dock tab). With restart_clock_on_show, `self.clock` (QElapsedTimer)
    restarts when the animation resumes (its wall-clock steps then never include the time it was unseen)."""

    restart_clock_on_show = True
    _watching = False

    @guarded
    def showEvent(self, event):  # noqa: N802
        super().showEvent(event)
        if not self._watching:
            self._watching = watch_dock(self, self._dock_shown)
        if on_screen(self):
            self._resume()

    def _dock_shown(self, shown: bool) -> None:
        if shown and self.isVisible():
            self._resume()
        else:
            self.timer.stop()

    @guarded
    def hideEvent(self, event):  # noqa: N802
        self.timer.stop()
        super().hideEvent(event)

    def _resume(self) -> None:
        if self.restart_clock_on_show:
            self.clock.start()
        self.timer.start()
