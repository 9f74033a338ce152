"""The main window's docks (mixed into app/main_window.py's MainWindow): `Docks`, the docks by name; the eager
docks built before the first frame; the late ones (those that start behind a tab) built one per event-loop turn
once the first engine result is on screen (or the engine failed, or LATE_DOCKS_AT_LATEST_MS passed), or at once
when asked for by name, on Reset layout and on closing; and what follows once all exist (translations, tooltips,
the Explain dock's 3D controls, the knock-out menu, the layout again, `late_docks_ready` and `first_frame`).
"""
from __future__ import annotations

from PySide6.QtCore import QTimer

from app import focus, knockout_menu, tooltips
from app.docks.registry import DOCKS
from app.window_layout import scroll_if_wide

LATE_DOCKS_AT_LATEST_MS = 20000  # the late docks are built by then even if the engine has said nothing yet


class Docks(dict):
    """The window's docks by objectName. A registry dock that is not built yet (the late ones wait for the
    first engine result, see MainWindow._after_first_show) is built when asked for by name: `docks[name]` and
    `docks.get(name)` always find it; `name in docks` and iteration see only the docks built so far."""

    def __init__(self, build_late):
        super().__init__()
        self._build_late = build_late
        self.late_names = {entry.cls for entry in DOCKS if not entry.eager}

    def __missing__(self, name: str):
        if name in self.late_names and self._build_late():
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default


class LateDocks:
    """MainWindow's dock building (a mixin: it uses the window's `state`, `settings`, `scene`, `engine`,
    `registry`, `docks`, `_entries`, `_group_heads`, `_first_frame_done` and its layout, app/window_layout.py)."""

    def _make_docks(self, eager: bool) -> list:
        """Build the registry's eager docks (before the first frame); the others wait in _late_pending."""
        made = []
        for entry in DOCKS:
            if entry.eager == eager:
                made.append(self._make_dock(entry))
            elif not entry.eager:
                self._late_pending.append(entry)
        for dock in self._group_heads.values():
            dock.raise_()
        return made

    def _make_dock(self, entry, register: bool = True):
        """Build and place one registry dock; register=False leaves it out of self.docks (the late docks join
        together once all are built and laid out, see _finish_late_docks)."""
        cls = entry.load()
        dock = cls(self.state, self)
        if not dock.objectName():
            dock.setObjectName(cls.__name__)
        scroll_if_wide(dock)
        self._place(entry, dock)
        if register:
            self._register(entry, dock)
        if self.registry is not None:
            self._add_window_toggle(dock)
        return dock

    def _register(self, entry, dock) -> None:
        self.docks[dock.objectName()] = dock
        self._entries[dock.objectName()] = entry

    def _fill_window_menu(self) -> None:
        for dock in self.docks.values():
            self._add_window_toggle(dock)

    def _add_window_toggle(self, dock) -> None:
        action = dock.toggleViewAction()
        action.setObjectName(f"toggle_{dock.objectName()}")
        self.registry.menus["window"].addAction(action)
        self.window_menu_actions.append(action)

    def _late_docks_after_first_trace(self) -> None:
        """The engine starts now: the late docks once its first trace is on screen, or it failed, or by
        LATE_DOCKS_AT_LATEST_MS."""
        self.state.trace_changed.connect(self._late_after_trace)
        self.state.engine_error.connect(self._schedule_late_docks)
        self.engine.load_failed.connect(self._schedule_late_docks)
        QTimer.singleShot(LATE_DOCKS_AT_LATEST_MS, self, self._schedule_late_docks)

    def _late_after_trace(self, _trace=None) -> None:
        """The first trace is set: the late docks once a frame drawn from it is on screen."""
        try:
            self.state.trace_changed.disconnect(self._late_after_trace)
        except (RuntimeError, TypeError):
            pass
        gl = self.scene.gl
        if gl.gl_error:
            self._schedule_late_docks()
            return

        def swapped():
            if gl.shown_version >= self.scene.trace_version:
                gl.frameSwapped.disconnect(swapped)
                self._schedule_late_docks()

        gl.frameSwapped.connect(swapped)

    def _schedule_late_docks(self, *_args) -> None:
        """Build the late docks one per event-loop turn (input and frames are handled in between)."""
        if self._late_built or self._late_scheduled:
            return
        self._late_scheduled = True
        QTimer.singleShot(0, self, self._build_late_step)

    def _build_late_step(self) -> None:
        if self._late_built:
            return
        if self._late_pending:
            entry = self._late_pending.pop(0)
            self._late_made.append((entry, self._make_dock(entry, register=False)))
            QTimer.singleShot(0, self, self._build_late_step)
            return
        self._finish_late_docks()

    def _build_late_docks(self) -> bool:
        """Build every late dock now (a dock asked for by name, a reset of the layout, closing); True when
        they exist. Not before the first frame: the layout needs the window on screen."""
        if not self._first_frame_done:
            return False
        if not self._late_built:
            while self._late_pending:
                entry = self._late_pending.pop(0)
                self._late_made.append((entry, self._make_dock(entry, register=False)))
            self._finish_late_docks()
        return True

    @property
    def late_docks_built(self) -> bool:
        """True once every dock of the registry exists (see _after_first_show)."""
        return self._late_built

    def _finish_late_docks(self) -> None:
        self._late_built = True
        for entry, dock in self._late_made:
            self._register(entry, dock)
            if not getattr(dock, "retranslates_itself", False):  # translated when built
                dock.retranslate()
        for dock in self._group_heads.values():
            dock.raise_()
        tooltips.apply(self)
        focus.untrap_tab(self)
        explain = self.docks.get("ExplainDock")
        if explain is not None:  # its 3D view controls, as last left
            explain.show3d.set_values(*self.settings.explain_3d(explain.show3d.values()))
            explain.show3d.changed.connect(lambda: self.settings.set_explain_3d(*explain.show3d.values()))
            explain.set_tour(self.registry.actions["tour"])  # the dock's tour button starts Help -> Tour
        knockout_menu.install(self)  # right-click a 3D block / cell or a token chip: knock it out
        self._lay_out()  # now also places the late docks
        self.late_docks_ready.emit()
        self.first_frame.emit()
