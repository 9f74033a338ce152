"""Tabs of the expert dock that redraw from the trace only while visible."""
from __future__ import annotations


class DeferredRefreshMixin:
    """For a QWidget with a `refresh()` that re-reads the trace: a refresh asked for while the widget is hidden
    is postponed until it is shown (hidden tabs cost nothing on a token / layer / trace change).

    `refresh()` starts with `if self.postpone_while_hidden(): return`."""

    _dirty = True

    def showEvent(self, event):  # noqa: N802
        super().showEvent(event)
        if self._dirty:
            self.refresh()

    def postpone_while_hidden(self) -> bool:
        if not self.isVisible():
            self._dirty = True
            return True
        self._dirty = False
        return False
