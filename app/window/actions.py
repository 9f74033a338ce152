"""The one action registry: every menu item, toolbar button and keyboard shortcut is declared here once.

`ACTIONS` is plain data (id, menu, text key, shortcut, toolbar?, checkable group). `ActionRegistry` turns it
into QActions bound to handlers, fills menus and the toolbar, retranslates them, and produces the rows of
Help -> Keyboard shortcuts. A test checks no two actions share a key binding.

Keys go to the focused control: a bare-key shortcut (arrows, Home / End, PgUp / PgDn, Space) does not fire
while an input control that uses that key has the keyboard focus (a slider, spin box, combo box, text field,
list or table; Space also for a button) — the control gets the key. With the focus on the 3D view or on
nothing that takes keys, the shortcut drives the player / the layer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSlider, QAbstractSpinBox, QApplication,
                               QComboBox, QDialog, QDialogButtonBox, QHeaderView, QLabel, QLineEdit, QMenu, QMenuBar,
                               QPlainTextEdit, QTableWidget, QTableWidgetItem, QTextEdit, QToolBar,
                               QVBoxLayout, QWidget)

from app import i18n
from app.window.focus import in_window
from app.i18n import tr
from app.slot_guard import guarded

MENUS: tuple[str, ...] = ("file", "edit", "view", "player", "language", "window", "help")


@dataclass(frozen=True)
class ActionSpec:
    id: str
    menu: str  # one of MENUS
    shortcut: str = ""  # portable QKeySequence text, "" for none
    toolbar: bool = False
    group: str = ""  # exclusive checkable group ("" = plain action)
    separator_before: bool = False
    text_input_safe: bool = True  # False: a bare key that a focused input control gets instead

    @property
    def text_key(self) -> str:
        return f"app.action.{self.id}"

    @property
    def tip_key(self) -> str:
        """Its tooltip's key (assets/i18n/tips.*.json); the action's text when the catalogue has none."""
        return f"tip.action.{self.id}"


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("open_view", "file", "Ctrl+O"),
    ActionSpec("save_view", "file", "Ctrl+Alt+S"),
    ActionSpec("export_image", "file", "Ctrl+S", toolbar=True, separator_before=True),
    ActionSpec("copy_view", "file", "Ctrl+Shift+C"),
    ActionSpec("export_window", "file", "Ctrl+Shift+S"),
    ActionSpec("export_animation", "file", "Ctrl+Shift+E"),
    ActionSpec("export_comparison", "file", "Ctrl+Alt+E"),  # app/export/compare_export.py: the Compare dock's two models
    ActionSpec("open_model", "file", "Ctrl+Shift+O", separator_before=True),
    ActionSpec("quit", "file", "Ctrl+Q", separator_before=True),
    ActionSpec("undo", "edit", "Ctrl+Z"),  # app/window/history.py
    ActionSpec("redo", "edit", "Ctrl+Shift+Z"),
    ActionSpec("history", "edit", "Ctrl+H", separator_before=True),
    ActionSpec("camera_front", "view", "Ctrl+1", toolbar=True),
    ActionSpec("camera_side", "view", "Ctrl+2", toolbar=True),
    ActionSpec("camera_top", "view", "Ctrl+3", toolbar=True),
    ActionSpec("camera_stack", "view", "Ctrl+4", toolbar=True),
    ActionSpec("camera_reset", "view", "Ctrl+0"),
    ActionSpec("layer_prev", "view", "PgDown", separator_before=True, text_input_safe=False),
    ActionSpec("layer_next", "view", "PgUp", text_input_safe=False),
    ActionSpec("reset_layout", "view", "", separator_before=True),
    ActionSpec("presentation", "view", "F11"),  # full screen, no panels, larger labels; Esc leaves it
    ActionSpec("side_by_side", "view", "Ctrl+Alt+B", separator_before=True),  # app/window/side_stack.py: checkable
    ActionSpec("play_pause", "player", "Space", toolbar=True, text_input_safe=False),
    ActionSpec("step_back", "player", "Left", text_input_safe=False),
    ActionSpec("step_forward", "player", "Right", text_input_safe=False),
    ActionSpec("step_first", "player", "Home", text_input_safe=False),
    ActionSpec("step_last", "player", "End", text_input_safe=False),
    ActionSpec("run_prompt", "player", "Ctrl+Return", separator_before=True),
    ActionSpec("weights_trained", "model", "", group="weights"),  # placed in the Model menu (app/weights_choice.py)
    ActionSpec("weights_random", "model", "", group="weights"),
    ActionSpec("lang_en", "language", "", group="language"),
    ActionSpec("lang_ko", "language", "", group="language"),
    ActionSpec("tour", "help", ""),  # app/window/tour.py: the guided tour "why this word"
    ActionSpec("shortcuts", "help", "F1"),
    ActionSpec("show_hint", "help", ""),  # app/window/first_run_hint.py
    ActionSpec("open_log_folder", "help", "", separator_before=True),  # app/window/support.py
    ActionSpec("about", "help", ""),
)


def duplicate_shortcuts(specs=ACTIONS) -> dict[str, list[str]]:
    """Key bindings used by more than one action: {portable key text: [action ids]} (empty when fine)."""
    seen: dict[str, list[str]] = {}
    for spec in specs:
        if spec.shortcut:
            key = QKeySequence(spec.shortcut).toString(QKeySequence.PortableText)
            seen.setdefault(key, []).append(spec.id)
    return {key: ids for key, ids in seen.items() if len(ids) > 1}


def plain(text: str) -> str:
    """Menu text without its mnemonic: '&File' -> 'File', '파일(&F)' -> '파일'."""
    return re.sub(r"\(&\w\)", "", text).replace("&", "").strip()


# controls that use the bare navigation keys themselves (arrows, Home / End, PgUp / PgDn, Space)
KEY_CONTROLS = (QAbstractSlider, QAbstractSpinBox, QComboBox, QLineEdit, QTextEdit, QPlainTextEdit,
                QAbstractItemView)


def control_wants_key(widget, key: int) -> bool:
    """True when `widget` (the focus widget) uses `key` itself, so a bare-key shortcut must yield to it."""
    if widget is None:
        return False
    if isinstance(widget, KEY_CONTROLS):
        return widget.isEnabled()
    return isinstance(widget, QAbstractButton) and key == Qt.Key_Space


class _BareKeysToFocusedControl(QObject):
    """Event filter on the focus widget: a bare-key shortcut of `window` that the focused control uses is given
    to the control (its ShortcutOverride, which Qt sends to the focus widget, is accepted, so Qt delivers the
    key press instead of the shortcut). It follows the focus rather than filtering the whole application: an
    application filter runs Python, and takes the GIL from the engine and render threads, for every event of
    every object (paints, timers, the threads' queued signals), which stalled the UI thread in a slider drag."""

    def __init__(self, window: QWidget, keys: set[int]):
        super().__init__(window)
        self.window = window
        self.keys = keys
        self._watched: QWidget | None = None
        app = QApplication.instance()
        app.focusChanged.connect(self._follow_focus)
        self._follow_focus(None, app.focusWidget())

    def _follow_focus(self, _old, new) -> None:
        try:
            if self._watched is not None:
                self._watched.removeEventFilter(self)
        except RuntimeError:  # the widget is already deleted
            pass
        self._watched = new if isinstance(new, QWidget) and in_window(new, self.window) else None
        # only this window's controls, its floated docks' included (another window has its own guard)
        if self._watched is not None:
            self._watched.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.ShortcutOverride and event.modifiers() in (Qt.NoModifier, Qt.KeypadModifier):
            key = event.key()
            if key in self.keys and isinstance(obj, QWidget) and in_window(obj, self.window) \
                    and control_wants_key(obj, key):
                event.accept()
                return True
        return False


class ActionRegistry:
    """QActions for ACTIONS, owned by `window` (so shortcuts work with menus closed)."""

    def __init__(self, window: QWidget, handlers: dict[str, Callable[[], None]], specs=ACTIONS):
        self.window = window
        self.specs = tuple(specs)
        self.actions: dict[str, QAction] = {}
        self.menus: dict[str, QMenu] = {}
        self.groups: dict[str, QActionGroup] = {}
        for spec in self.specs:
            action = QAction(window)
            action.setObjectName(f"action_{spec.id}")
            if spec.shortcut:
                action.setShortcut(QKeySequence(spec.shortcut))
                action.setShortcutContext(Qt.WindowShortcut)
            if spec.group:
                group = self.groups.setdefault(spec.group, QActionGroup(window))
                group.setExclusive(True)
                action.setCheckable(True)
                group.addAction(action)
            handler = handlers.get(spec.id)
            if handler is None:
                raise KeyError(f"no handler for action {spec.id!r}")
            slot = guarded(handler, where=f"action {spec.id}")  # an exception in it: one status line, logged
            action.triggered.connect(lambda _checked=False, slot=slot: slot())
            window.addAction(action)
            self.actions[spec.id] = action
        bare = {QKeySequence(s.shortcut)[0].key() for s in self.specs if s.shortcut and not s.text_input_safe}
        self._key_guard = _BareKeysToFocusedControl(window, bare)
        self.retranslate()

    def build_menus(self, menubar: QMenuBar, extra: dict[str, QMenu] | None = None) -> None:
        """One menu per MENUS entry, in order; `extra` supplies menus filled elsewhere (Window)."""
        for name in MENUS:
            menu = menubar.addMenu("")
            menu.setObjectName(f"menu_{name}")
            self.menus[name] = menu
            for spec in self.specs:
                if spec.menu == name:
                    if spec.separator_before:
                        menu.addSeparator()
                    menu.addAction(self.actions[spec.id])
        self._retranslate_menus()

    def build_toolbar(self, toolbar: QToolBar) -> None:
        for spec in self.specs:
            if spec.toolbar:
                if spec.separator_before:
                    toolbar.addSeparator()
                toolbar.addAction(self.actions[spec.id])

    def retranslate(self) -> None:
        for spec in self.specs:
            action = self.actions[spec.id]
            action.setText(tr(spec.text_key))
            tip = tr(spec.tip_key) if spec.tip_key in i18n.table() else plain(tr(spec.text_key)).rstrip("…")
            if spec.shortcut:
                tip += f" ({QKeySequence(spec.shortcut).toString(QKeySequence.NativeText)})"
            action.setToolTip(tip)
        self._retranslate_menus()

    def _retranslate_menus(self) -> None:
        for name, menu in self.menus.items():
            menu.setTitle(tr(f"app.menu.{name}"))

    def shortcut_rows(self) -> list[tuple[str, str, str]]:
        """(menu title, action text, key) for every action with a shortcut — the shortcuts dialog's rows."""
        rows = []
        for spec in self.specs:
            if spec.shortcut:
                rows.append((plain(tr(f"app.menu.{spec.menu}")), plain(tr(spec.text_key)).rstrip("…"),
                             QKeySequence(spec.shortcut).toString(QKeySequence.NativeText)))
        return rows


GESTURES = ("drag", "wheel", "pan", "click", "double", "hover", "drop")  # scene/input.py, the window's drop


def gesture_rows() -> list[tuple[str, str]]:
    """(gesture, what it does) for the mouse in the 3D view — the shortcuts dialog's second table."""
    return [(tr(f"ship.gesture.{g}"), tr(f"ship.gesture.{g}.do")) for g in GESTURES] + \
        [(tr("edit.gesture.drop_view"), tr("edit.gesture.drop_view.do"))]


def key_rows() -> list[tuple[str, str, str]]:
    """Keys that are no registry action: in the prompt box (app/docks/trace_player.py) and Esc, which leaves
    presentation mode (MainWindow.enter_presentation)."""
    def native(key: str) -> str:
        return QKeySequence(key).toString(QKeySequence.NativeText)

    prompt = plain(tr("edit.shortcuts.prompt"))
    return [(prompt, tr("edit.shortcuts.prompt_return"), native("Return")),
            (prompt, tr("edit.shortcuts.prompt_return"), native("Ctrl+Return")),
            (prompt, tr("edit.shortcuts.prompt_undo"), native("Ctrl+Z")),
            (plain(tr("app.menu.view")), tr("edit.shortcuts.esc"), native("Esc"))]


def filter_rows(table: QTableWidget, text: str) -> int:
    """Hide the rows of `table` in which no cell contains `text` (case-insensitive); the rows left shown."""
    needle = text.strip().casefold()
    shown = 0
    for r in range(table.rowCount()):
        cells = (table.item(r, c) for c in range(table.columnCount()))
        match = not needle or any(item is not None and needle in item.text().casefold() for item in cells)
        table.setRowHidden(r, not match)
        shown += match
    return shown


def _read_only_table(rows, headers, parent, name: str) -> QTableWidget:
    table = QTableWidget(len(rows), len(headers), parent)
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(headers)
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            item = QTableWidgetItem(text)
            item.setFlags(item.flags() & ~Qt.ItemIsEditable)
            table.setItem(r, c, item)
    table.setTabKeyNavigation(False)  # Tab leaves the table (to the next one, the Close button)
    table.verticalHeader().setVisible(False)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


class ShortcutsDialog(QDialog):
    """Help -> Keyboard shortcuts: a table generated from the registry, then the mouse gestures."""

    def __init__(self, registry: ActionRegistry, parent=None):
        super().__init__(parent)
        self.setObjectName("shortcuts_dialog")
        self.setWindowTitle(tr("app.shortcuts.title"))
        table = _read_only_table(registry.shortcut_rows() + key_rows(), [tr("app.shortcuts.menu"), tr("app.shortcuts.action"),
                                                            tr("app.shortcuts.key")], self, "shortcuts_table")
        self.gestures = _read_only_table(gesture_rows(), [tr("ship.gestures.gesture"), tr("ship.gestures.effect")],
                                         self, "gestures_table")
        self.gestures.setMaximumHeight(self.gestures.verticalHeader().length() +
                                       self.gestures.horizontalHeader().height() + 4)
        gestures_heading = QLabel(tr("ship.gestures.heading"))
        gestures_heading.setObjectName("gestures_heading")
        buttons = QDialogButtonBox(QDialogButtonBox.Close, self)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.Close).setText(tr("app.common.close"))
        self.search = QLineEdit(self)  # filters the rows of both tables as one types
        self.search.setObjectName("shortcuts_search")
        self.search.setPlaceholderText(tr("edit.shortcuts.search"))
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.filter)
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(table)
        layout.addWidget(gestures_heading)
        layout.addWidget(self.gestures)
        layout.addWidget(buttons)
        self.table = table
        self.resize(560, 640)
        self.search.setFocus()

    def filter(self, text: str) -> tuple[int, int]:
        """Only the rows (of both tables) that contain `text`; (shortcut rows, gesture rows) left shown."""
        return filter_rows(self.table, text), filter_rows(self.gestures, text)
