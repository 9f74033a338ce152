"""The main window's docks (a part the window owns: `MainWindow.dock_builder`): `Docks`, the docks by name; the eager
docks built before the first frame; the late ones (those that start behind a tab) built one per event-loop turn
once the first engine result is on screen (or the engine failed, or LATE_DOCKS_AT_LATEST_MS passed), or at once
when asked for by name, on Reset layout and on closing; and what follows once all exist (translations, tooltips,
the Explain dock's 3D controls, the knock-out menu, the layout again, `late_docks_ready` and `first_frame`).
The part reads the window's public names only (.state, .settings, .scene, .engine, .registry, .docks,
.window_menu_actions, .first_frame_done, .dock_layout, its signals).
"""
from __future__ import annotations

from PySide6.QtCore import QTimer

from app.window import focus, knockout_menu, tooltips
from app.docks.registry import DOCKS
from app.window.window_layout import scroll_if_wide

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


class DockBuilder:
    """MainWindow's dock building: the registry entry of every dock built (`entries`), the late docks still to
    build and whether all exist (`built`)."""

    def __init__(self, window):
        self.window = window
        self.entries: dict = {}  # dock objectName -> its registry entry
        self.pending: list = []  # registry entries of the docks built after the first engine result
        self.made: list = []  # (entry, dock) built but not yet registered (they join together: finish)
        self.built = False  # every dock of the registry exists
        self.scheduled = False

    def make_docks(self, eager: bool) -> list:
        """Build the registry's eager docks (before the first frame); the others wait in `pending`."""
        made = []
        for entry in DOCKS:
            if entry.eager == eager:
                made.append(self.make_dock(entry))
            elif not entry.eager:
                self.pending.append(entry)
        self.window.dock_layout.raise_group_heads()
        return made

    def make_dock(self, entry, register: bool = True):
        """Build and place one registry dock; register=False leaves it out of the window's docks (the late docks
        join together once all are built and laid out, see finish)."""
        w = self.window
        cls = entry.load()
        dock = cls(w.state, w)
        if not dock.objectName():
            dock.setObjectName(cls.__name__)
        scroll_if_wide(dock)
        w.dock_layout.place(entry, dock)
        if register:
            self._register(entry, dock)
        if w.registry is not None:
            self.add_window_toggle(dock)
        return dock

    def _register(self, entry, dock) -> None:
        self.window.docks[dock.objectName()] = dock
        self.entries[dock.objectName()] = entry

    def fill_window_menu(self) -> None:
        """A Window-menu toggle for every dock built so far (the registry's menus exist now)."""
        for dock in self.window.docks.values():
            self.add_window_toggle(dock)

    def add_window_toggle(self, dock) -> None:
        w = self.window
        action = dock.toggleViewAction()
        action.setObjectName(f"toggle_{dock.objectName()}")
        w.registry.menus["window"].addAction(action)
        w.window_menu_actions.append(action)

    def after_first_trace(self) -> None:
        """The engine starts now: the late docks once its first trace is on screen, or it failed, or by
        LATE_DOCKS_AT_LATEST_MS."""
        w = self.window
        w.state.trace_changed.connect(self._after_trace)
        w.state.engine_error.connect(self.schedule)
        w.engine.load_failed.connect(self.schedule)
        QTimer.singleShot(LATE_DOCKS_AT_LATEST_MS, w, self.schedule)

    def _after_trace(self, _trace=None) -> None:
        """The first trace is set: the late docks once a frame drawn from it is on screen."""
        w = self.window
        try:
            w.state.trace_changed.disconnect(self._after_trace)
        except (RuntimeError, TypeError):
            pass
        gl = w.scene.gl
        if gl.gl_error:
            self.schedule()
            return

        def swapped():
            if gl.shown_version >= w.scene.trace_version:
                gl.frameSwapped.disconnect(swapped)
                self.schedule()

        gl.frameSwapped.connect(swapped)

    def schedule(self, *_args) -> None:
        """Build the late docks one per event-loop turn (input and frames are handled in between)."""
        if self.built or self.scheduled:
            return
        self.scheduled = True
        QTimer.singleShot(0, self.window, self._build_step)

    def _build_step(self) -> None:
        if self.built:
            return
        if self.pending:
            entry = self.pending.pop(0)
            self.made.append((entry, self.make_dock(entry, register=False)))
            QTimer.singleShot(0, self.window, self._build_step)
            return
        self._finish()

    def build_all(self) -> bool:
        """Build every late dock now (a dock asked for by name, a reset of the layout, closing); True when
        they exist. Not before the first frame: the layout needs the window on screen."""
        if not self.window.first_frame_done:
            return False
        if not self.built:
            while self.pending:
                entry = self.pending.pop(0)
                self.made.append((entry, self.make_dock(entry, register=False)))
            self._finish()
        return True

    def _finish(self) -> None:
        w = self.window
        self.built = True
        for entry, dock in self.made:
            self._register(entry, dock)
            if not getattr(dock, "retranslates_itself", False):  # translated when built
                dock.retranslate()
        w.dock_layout.raise_group_heads()
        tooltips.apply(w)
        focus.untrap_tab(w)
        explain = w.docks.get("ExplainDock")
        if explain is not None:  # its 3D view controls, as last left
            explain.show3d.set_values(*w.settings.explain_3d(explain.show3d.values()))
            explain.show3d.changed.connect(lambda: w.settings.set_explain_3d(*explain.show3d.values()))
            explain.set_tour(w.registry.actions["tour"])  # the dock's tour button starts Help -> Tour
        knockout_menu.install(w)  # right-click a 3D block / cell or a token chip: knock it out
        w.dock_layout.lay_out()  # now also places the late docks
        w.late_docks_ready.emit()
        w.first_frame.emit()
