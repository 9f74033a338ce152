"""The main window: the 3D scene in the centre, the docks around it, menus/toolbar/shortcuts from the one
action registry, a status bar (layer + type, trace step, engine device), the engine worker, persistence.
"""
from __future__ import annotations

import logging
import math
import os
import sys

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (QLabel, QMainWindow, QMessageBox, QScrollArea, QStyle, QTabBar, QToolBar, QVBoxLayout,
                               QWidget)

from app import focus, i18n, knockout_menu, player, qt_translator, tooltips
from app.actions import ActionRegistry, ShortcutsDialog
from app.docks.registry import DOCKS
from app.i18n import tr
from app.settings import Settings
from app.state import AppState
from app.slot_guard import guarded
from app.view_menu import ViewActions
from app.widgets import safe_text
from app.widgets.paint import css
from app.widgets.safe_text import plain_tip
from app.worker import EngineController
from compute.config import default_config
from scene.block_kinds import mixer_key
from scene.steps import text_args
from scene.view import SceneView

log = logging.getLogger(__name__)
CAMERA_PRESETS = ("front", "side", "top", "stack")
PRESENTATION_LABEL_SCALE = 1.5  # labels, header and legend in presentation mode (F11)
LATE_DOCKS_AT_LATEST_MS = 20000  # the late docks are built by then even if the engine has said nothing yet
SCENE_SHARE = 0.56  # the default layout leaves the 3D view at least this share of the window area
MIN_COLUMN = 300  # the narrowest side column of the default layout (one column below that)
MIN_PANELS = 440  # the right column's panels (diagrams, calculators) need this much not to scroll sideways


def _clip(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def window_size_for(avail_w: int, avail_h: int) -> tuple[int, int]:
    """92% of a screen's available area (an unscaled 3840 x 2160 screen too: it opened at 1880 x 1040, a quarter
    of it), at most 3200 x 1800 logical pixels."""
    return min(3200, int(avail_w * 0.92)), min(1800, int(avail_h * 0.92))


def default_window_size() -> tuple[int, int]:
    """window_size_for the primary screen."""
    screen = QGuiApplication.primaryScreen()
    if screen is None:
        return 1600, 960
    avail = screen.availableGeometry()
    return window_size_for(avail.width(), avail.height())


def fit_to_screen(window) -> None:
    """Shrink and move the window into its screen's available area (a geometry saved when something had
    widened the window past the screen must not come back)."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    avail = screen.availableGeometry()
    geo = window.geometry()
    w, h = min(geo.width(), avail.width()), min(geo.height(), avail.height())
    if (w, h) != (geo.width(), geo.height()):
        window.resize(w, h)
        x = min(max(geo.x(), avail.left()), avail.right() + 1 - w)
        y = min(max(geo.y(), avail.top()), avail.bottom() + 1 - h)
        window.move(x, y)


def _height_for(widget, width: int) -> int:
    """The height a widget wants at `width` (its height-for-width where it has one)."""
    if widget.hasHeightForWidth():
        return widget.heightForWidth(width)
    layout = widget.layout()
    if layout is not None and layout.hasHeightForWidth():
        return layout.totalHeightForWidth(width)
    return widget.sizeHint().height()


def _scroll_if_wide(dock, max_w: int = 480, max_h: int = 440) -> None:
    """Wrap a dock body that refuses to shrink in a scroll area, so one wide panel cannot squeeze the scene."""
    body = dock.widget()
    if body is None:
        return
    hint = body.minimumSizeHint()
    if hint.width() <= max_w and hint.height() <= max_h and not getattr(dock, "scroll_body", False):
        return
    area = QScrollArea(dock)
    area.setObjectName(f"{dock.objectName()}_scroll")
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.NoFrame)
    area.setWidget(body)
    dock.setWidget(area)


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


class MainWindow(QMainWindow):
    first_frame = Signal()  # once: the 3D view has drawn its first frame and the late docks exist (after the
    # first engine result when the engine runs: see _after_first_show)
    late_docks_ready = Signal()  # once: the docks built after the first engine result exist

    def __init__(self, settings_path: str | None = None, start_engine: bool = True, device: str = "auto",
                 language: str | None = None, weights: str | None = None):
        """weights: "trained" | "random" for this session (--weights); None = the remembered choice."""
        super().__init__()
        self.setObjectName("MainWindow")
        self.settings = Settings(settings_path)
        self.state = AppState(self)
        self.config = default_config()  # the one the scene's first layout used: read once per process
        self.state.set_config(self.config)
        self._start_engine = start_engine
        self._shown_once = False
        self._first_frame_done = False
        self._focused_kind = None
        self._hover_message = ""
        self._export_dir = os.path.expanduser("~")
        self.export_run = None  # the last export of the 3D view (app/export.py ExportRun)
        self._presentation = None  # while in presentation mode: what to restore when it ends
        self._leave_presentation_key = None

        lang = language or self.settings.language(i18n.system_language())
        i18n.set_language(lang)
        qt_translator.follow_language()  # Qt's own strings (OK / Cancel ...) in the same language
        n_layers = len(self.config.mixer_types)
        self.state.layer = self.settings.layer(self.state.layer, n_layers)
        self.state.knobs = self.settings.knobs()
        self.state.prompt = self.settings.prompt(self.state.prompt)

        self.scene = SceneView(self, self.config)  # laid out once, with this config
        self.scene.set_translator(tr)
        self.scene.set_layer(self.state.layer, animate=False)
        self.setCentralWidget(self._scene_with_strip())

        self.docks = Docks(self._build_late_docks)
        self._late_pending = []  # registry entries of the docks built after the first engine result
        self._late_made = []
        self._late_built = False
        self._late_scheduled = False
        self._entries = {}
        self._group_heads = {}
        self.registry = None
        self._make_docks(eager=True)

        self.registry = ActionRegistry(self, self._handlers())
        self.window_menu_actions = []
        self.registry.build_menus(self.menuBar())
        self._fill_window_menu()
        self.views = ViewActions(self)  # File -> Open view… / Save view… / Recent views (app/view_menu.py)
        self.toolbar = QToolBar(self)
        self.toolbar.setObjectName("main_toolbar")
        self.toolbar.setToolButtonStyle(Qt.ToolButtonTextOnly)
        self.toolbar.setMovable(False)
        self.registry.build_toolbar(self.toolbar)
        self.addToolBar(Qt.TopToolBarArea, self.toolbar)
        self.registry.actions[f"lang_{i18n.language()}"].setChecked(True)

        self.layer_label = QLabel()
        self.layer_label.setObjectName("status_layer")
        self.step_label = QLabel()
        self.step_label.setObjectName("status_step")
        self.device_label = QLabel()
        self.device_label.setObjectName("status_device")
        self.engine_note = QLabel()  # shown while the engine runs on the CPU in place of CUDA, or not at all
        self.engine_note.setObjectName("status_engine_note")
        self.engine_note.setStyleSheet(f"color: {css('status_note_text')}; background: {css('status_note_fill')};"
                                       " border-radius: 3px; padding: 1px 6px;")
        self.engine_note.hide()
        for label in (self.layer_label, self.step_label, self.device_label, self.engine_note):
            label.setContentsMargins(8, 0, 8, 0)
            label.setTextFormat(Qt.PlainText)  # step titles name the model, the note quotes an error (untrusted)
            self.statusBar().addPermanentWidget(label)

        self.engine = EngineController(self.state, max_new_tokens=self.settings.tokens(), device=device, parent=self)
        self.engine.set_after_run(self.scene.precolour)  # cell colours computed in the engine thread
        self.engine.device_ready.connect(lambda _d: self._update_status())
        self.engine.device_fallback.connect(lambda _d, _r: self._update_status())
        self.engine.load_failed.connect(lambda _r: self._update_status())
        self.engine.busy_changed.connect(lambda _b: self._update_status())
        self.engine.trace_published.connect(self._gate_next_run)
        self.scene.gl.frameSwapped.connect(self._frame_shown)
        from app.model_menu import ModelActions

        self.models = ModelActions(self)  # the Model menu, File -> Open model config…, dropped config.json
        from app.weights_choice import WeightsActions

        self.weights = WeightsActions(self, weights)  # Model -> Trained / Random weights, status bar label
        self._connect_state()
        from app.history import History

        self.history = History(self)  # Edit -> Undo / Redo / History…, dropped *.k3view files, the title

        self.resize(*default_window_size())
        self._restored = self.settings.restore_window(self)
        fit_to_screen(self)
        self.tabifiedDockWidgetActivated.connect(lambda _d: self._unelide_tabs())
        camera = self.settings.camera()
        # the camera and the player step are restored together: the saved camera is the view of that step
        self._restore_step = max(0, self.settings._int("player_step", 0)) if camera else 0
        if camera:
            try:
                self.scene.set_camera_state(camera)
            except (KeyError, TypeError, ValueError):
                self._restore_step = 0  # a camera saved by an older scene version: default view, first step
        self.retranslate()
        if self.settings.notes:  # values refused from the settings file, a cut prompt
            self.statusBar().showMessage(" ".join(self.settings.note_texts()), 30000)

    # --- construction ------------------------------------------------------------------------
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
        _scroll_if_wide(dock)
        self._place(entry, dock)
        if register:
            self._register(entry, dock)
        if self.registry is not None:
            self._add_window_toggle(dock)
        return dock

    def _register(self, entry, dock) -> None:
        self.docks[dock.objectName()] = dock
        self._entries[dock.objectName()] = entry

    def _place(self, entry, dock) -> None:
        """Put a dock in its default area / tab group."""
        dock.setFloating(False)
        self.addDockWidget(entry.area, dock)
        head = self._group_heads.get(entry.group)
        if head is None or head is dock:
            self._group_heads[entry.group] = dock
        else:
            self.tabifyDockWidget(head, dock)
        dock.show()

    def _default_sizes(self) -> None:
        """The default layout for the window's current size: the scene keeps SCENE_SHARE of the window area.
        Two side columns (trace player left; controls over the tabbed panels right) when both fit beside such
        a scene, else one column on the left with every panel as a tab, the trace player in front (up to about
        2200 px wide: 1280 x 720, 1366 x 768, 1920 x 1080); in two columns the controls only as tall as they need,
        the rest to the panels below them."""
        budget = self._side_budget()
        left_min, right_min = self._column_min_widths()
        if budget < left_min + right_min:
            self._one_column(max(left_min, right_min, budget))
        else:
            self._two_columns(budget, left_min, right_min)
        self._unelide_tabs()

    @guarded
    def _reveal_inspector(self, block_id: str) -> None:
        """A picked block brings the inspector's tab to the front when it hides behind another panel's tab
        (the one-column layout of small screens)."""
        dock = self.docks.get("inspectorDock")
        if block_id and dock is not None and not dock.isFloating() and dock.toggleViewAction().isChecked() \
                and dock.visibleRegion().isEmpty():
            dock.raise_()

    def _side_budget(self) -> int:
        """Pixels the side columns (and their separators) may take beside a scene of SCENE_SHARE."""
        strip = getattr(self, "answer_strip", None)  # under the scene, in the central widget
        scene_h = max(1, self.centralWidget().height() - (strip.sizeHint().height() if strip is not None else 0))
        gap = self.style().pixelMetric(QStyle.PM_DockWidgetSeparatorExtent, None, self)
        need_w = math.ceil(SCENE_SHARE * self.width() * self.height() / scene_h)
        return self.width() - need_w - 2 * gap

    def _column_min_widths(self) -> tuple[int, int]:
        """The narrowest each column may be: its docks' own minimum, also of a body that scrolls (a scroll
        area would shrink to nothing), and never under MIN_COLUMN."""
        left, right = MIN_COLUMN, MIN_PANELS
        for name, dock in self.docks.items():
            body = dock.widget()
            w = dock.minimumSizeHint().width()
            if isinstance(body, QScrollArea) and body.widget() is not None:
                w = max(w, min(480, body.widget().minimumSizeHint().width() + 16))
            if self._entries[name].area == Qt.LeftDockWidgetArea:
                left = max(left, w)
            else:
                right = max(right, w)
        return left, right

    def _two_columns(self, budget: int, left_min: int, right_min: int) -> None:
        heads = self._group_heads
        left = [d for d in heads.values() if self.dockWidgetArea(d) == Qt.LeftDockWidgetArea]
        right = [d for d in heads.values() if self.dockWidgetArea(d) == Qt.RightDockWidgetArea]
        lw = min(440, max(left_min, int(budget * 0.45)))
        rw = min(520, max(right_min, budget - lw))
        if left:
            self.resizeDocks(left[:1], [lw], Qt.Horizontal)
        if right:
            self.resizeDocks(right[:1], [rw], Qt.Horizontal)
        controls = heads.get("right_top")
        if controls is not None and len(right) > 1:
            rest = [d for d in right if d is not controls][:1]
            body = controls.widget()
            inner = body.widget() if isinstance(body, QScrollArea) else body
            h = controls.sizeHint().height() - body.sizeHint().height() + _height_for(inner, rw) + 2
            h = min(h, int(self.centralWidget().height() * 0.45))
            self.resizeDocks([controls] + rest, [h, max(200, self.centralWidget().height() - h)], Qt.Vertical)

    def _one_column(self, width: int) -> None:
        """Every dock a tab of the left column, the trace player in front."""
        first = None
        for entry in DOCKS:
            dock = next((d for n, d in self.docks.items() if self._entries[n] is entry), None)
            if dock is None:
                continue
            if dock.isFloating():
                dock.setFloating(False)
            if first is None:
                if self.dockWidgetArea(dock) != Qt.LeftDockWidgetArea:
                    self.addDockWidget(Qt.LeftDockWidgetArea, dock)
                first = dock
            elif dock not in self.tabifiedDockWidgets(first):
                # straight into the tab group: added to the area first, the docks would stand one above the other
                # for a moment and their summed minimum heights would grow the window past the screen
                self.tabifyDockWidget(first, dock)
            dock.show()
        if first is not None:
            first.raise_()
            self.resizeDocks([first], [min(460, width)], Qt.Horizontal)

    def _unelide_tabs(self) -> None:
        """Dock tab bars show whole titles (scroll arrows instead of 'I…', 'Ex…')."""
        for bar in self.findChildren(QTabBar):
            if bar.parent() is self:
                bar.setElideMode(Qt.ElideNone)
                bar.setUsesScrollButtons(True)

    def _fill_window_menu(self) -> None:
        for dock in self.docks.values():
            self._add_window_toggle(dock)

    def _add_window_toggle(self, dock) -> None:
        action = dock.toggleViewAction()
        action.setObjectName(f"toggle_{dock.objectName()}")
        self.registry.menus["window"].addAction(action)
        self.window_menu_actions.append(action)

    def _handlers(self) -> dict:
        player = self.state.player
        h = {
            "export_image": lambda: self.open_export_dialog("view"),
            "export_window": lambda: self.open_export_dialog("window"),
            "copy_view": self.copy_view,
            "export_animation": self.open_animation_dialog,
            "open_model": lambda: self.models.open_dialog(),
            "open_view": lambda: self.views.open_dialog(),
            "save_view": lambda: self.views.save_dialog(),
            "quit": self.close,
            "camera_reset": lambda: self.scene.set_camera_preset("reset"),
            "layer_prev": lambda: self._layer_by(-1),
            "layer_next": lambda: self._layer_by(1),
            "reset_layout": self.reset_layout,
            "presentation": self.toggle_presentation,
            "play_pause": player.toggle_play,
            "step_back": lambda: player.step_by(-1),
            "step_forward": lambda: player.step_by(1),
            "step_first": player.first,
            "step_last": player.last,
            "run_prompt": self._run_prompt,
            "weights_trained": lambda: self.weights.choose("trained"),
            "weights_random": lambda: self.weights.choose("random"),
            "lang_en": lambda: self.state.set_language("en"),
            "lang_ko": lambda: self.state.set_language("ko"),
            "undo": lambda: self.history.undo(),
            "redo": lambda: self.history.redo(),
            "history": lambda: self.history.show_dialog(),
            "shortcuts": self.show_shortcuts,
            "about": self.show_about,
        }
        for name in CAMERA_PRESETS:
            h[f"camera_{name}"] = lambda name=name: self.scene.set_camera_preset(name)
        return h

    def _connect_state(self) -> None:
        st, sc = self.state, self.scene
        st.trace_arriving.connect(sc.set_trace)  # before every panel: the render thread starts the frame at once
        st.trace_changed.connect(self._on_trace)
        st.layer_changed.connect(sc.set_layer)
        st.pass_changed.connect(sc.set_pass)
        st.token_changed.connect(sc.set_token)
        st.step_changed.connect(self._on_step)
        st.block_selected.connect(sc.select_block)
        st.block_selected.connect(self._reveal_inspector)
        st.set_dock_opener(self.show_dock)
        st.expert_selected.connect(sc.select_expert)
        st.explanation_shown.connect(sc.set_explanation)  # the Explain dock's lens column / route (issue 21)
        st.engine_error.connect(self._on_error)
        st.language_changed.connect(lambda _l: self.retranslate())
        st.layer_changed.connect(lambda _l: self._update_status())
        sc.block_clicked.connect(st.select_block)
        sc.cell_clicked.connect(st.select_cell)
        sc.layer_clicked.connect(st.select_layer)
        sc.expert_clicked.connect(st.select_expert)
        sc.block_hovered.connect(self._on_hover)

    # --- state -> scene / status -------------------------------------------------------------
    @guarded
    def _on_trace(self, trace) -> None:
        """After the panels' own handlers of the new trace (the 3D view has it already: trace_arriving)."""
        if self._restore_step:  # the first trace: back to the step whose camera was restored
            step, self._restore_step = self._restore_step, 0
            self.state.player.seek(step)
        self._focus_step()  # only when the step's kind changed: a new trace alone must not move the camera
        self._update_status()

    def _gate_next_run(self, _trace, _seconds: float) -> None:
        """The engine's next run waits until the frame of this trace is on screen (app/worker.py, frame gate)."""
        gl = self.scene.gl
        if not gl.gl_error and gl.isVisible() and gl.shown_version < self.scene.trace_version:
            self.engine.hold_until_shown()

    def _frame_shown(self) -> None:
        if self.scene.gl.shown_version >= self.scene.trace_version:
            self.engine.release()

    @guarded
    def _on_step(self, index: int) -> None:
        self._focus_step()
        self._update_status()

    def _focus_step(self) -> None:
        step = self.state.player.current()
        if step is not None:
            kind = step.kind
            if kind != self._focused_kind:
                self._focused_kind = kind
                self.scene.set_step_focus(kind)

    @guarded
    def _on_error(self, message: str) -> None:
        self.statusBar().showMessage(tr("app.status.engine_error", message=message), 15000)

    @guarded
    def _on_hover(self, block_id: str) -> None:
        """Name the hovered block in the status bar ('L37/kda.state · state S (d_k × d_v)')."""
        bar = self.statusBar()
        if not block_id:
            if bar.currentMessage() and bar.currentMessage() == self._hover_message:
                bar.clearMessage()  # only our own hover text, never an error message
            return
        kind = block_id.split("/", 1)[-1]
        name = tr(f"block.{kind}") if f"block.{kind}" in i18n.table() else kind
        self._hover_message = f"{block_id} · {name}"
        bar.showMessage(self._hover_message, 4000)

    def _update_status(self) -> None:
        layer = self.state.layer
        mixer = self.config.mixer_types[layer]
        ffn = self.config.ffn_types[layer]
        self.layer_label.setText(tr("app.status.layer", n=layer + 1, total=len(self.config.mixer_types),
                                    mixer=tr(f"app.type.{mixer_key(mixer, self.config.mla_output_gate is not None)}"),
                                    ffn=tr(f"app.type.{ffn}")))
        step = self.state.player.current()
        if step is not None:
            self.step_label.setText(tr("app.status.step", caption=player.step_caption(step, tr, len(self.state.player.steps)),
                                       title=tr(step.title_key, **text_args(self.config, tr))))
        elif not self.engine.load_error:
            self.step_label.setText(tr("app.status.engine_loading"))
        else:
            self.step_label.setText("")
        device = self.engine.device_text or ("—" if self.engine.load_error else tr("app.status.device_loading"))
        busy = " · " + tr("app.status.computing") if self.engine.busy else ""
        self.device_label.setText(tr("app.status.device", device=device) + busy)
        self._update_engine_note()

    def _update_engine_note(self) -> None:
        """The persistent note: the engine runs on the CPU because the device asked for failed, or no engine
        could be made at all (the full reason in the tooltip)."""
        note = self.engine_note
        if self.engine.load_error:
            reason = self.engine.load_error
            note.setText(tr("app.status.engine_failed", message=_clip(reason)))
        elif self.engine.fallback is not None:
            device, reason = self.engine.fallback
            note.setText(tr("app.status.device_fallback", device="CUDA" if device in ("cuda", "auto") else device))
            reason = tr("app.status.device_fallback_tip", device=device, message=reason)
        else:
            note.hide()
            return
        note.setToolTip(plain_tip(reason))
        note.show()

    # --- actions -----------------------------------------------------------------------------
    def _run_prompt(self) -> None:
        dock = self.docks.get("TracePlayerDock")
        if dock is not None:
            dock.run_prompt()

    def show_dock(self, name: str, tab: str = "") -> bool:
        """Show and raise the panel `name` (a dock's objectName), on its tab `tab` when it has tabs; False
        when there is no such panel (yet) or it has no such tab."""
        dock = self.docks.get(name)
        if dock is None or (tab and not hasattr(dock, "show_tab")):
            return False
        if tab:
            dock.show_tab(tab)
        else:
            dock.show()
            dock.raise_()
        return True

    def _layer_by(self, delta: int) -> None:
        n = len(self.config.mixer_types)
        self.state.select_layer(max(0, min(n - 1, self.state.layer + delta)))

    def reset_layout(self) -> None:
        """Every dock back to its registry place, shown, group heads in front, default sizes."""
        self._build_late_docks()
        self._group_heads = {}
        for name, dock in self.docks.items():
            self._place(self._entries[name], dock)
        for dock in self._group_heads.values():
            dock.raise_()
        self._default_sizes()

    # --- presentation mode (F11) ------------------------------------------------------------------
    @property
    def presenting(self) -> bool:
        return self._presentation is not None

    def toggle_presentation(self) -> None:
        if self.presenting:
            self.leave_presentation()
        else:
            self.enter_presentation()

    def enter_presentation(self) -> None:
        """Full screen with the 3D view alone (no panels, toolbar, menu or status bar) and larger labels."""
        if self.presenting:
            return
        if self._first_frame_done:
            self._build_late_docks()  # none may appear (and show) during the presentation
        self._presentation = (self.saveState(), self.isMaximized(), self.menuBar().isVisible(),
                              self.statusBar().isVisible())
        for dock in self.docks.values():
            dock.hide()
        self.toolbar.hide()
        self.menuBar().hide()
        self.statusBar().hide()
        self.scene.set_label_scale(PRESENTATION_LABEL_SCALE)
        if self._leave_presentation_key is None:  # Esc leaves (a window shortcut, only while presenting)
            self._leave_presentation_key = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
            self._leave_presentation_key.activated.connect(self.leave_presentation)
        self._leave_presentation_key.setEnabled(True)
        self.showFullScreen()
        self.scene.gl.setFocus()

    def leave_presentation(self) -> None:
        """Back to the window as it was: its panels, bars, size and label size."""
        if not self.presenting:
            return
        state, maximized, menu, status = self._presentation
        self._presentation = None
        self._leave_presentation_key.setEnabled(False)
        if maximized:
            self.showMaximized()
        else:
            self.showNormal()
        self.toolbar.show()
        self.restoreState(state)
        self.menuBar().setVisible(menu)
        self.statusBar().setVisible(status)
        self.scene.set_label_scale(1.0)

    def set_tokens(self, n: int) -> None:
        """Tokens to generate (1-64, or 0: until the end of the sentence; the Controls dock's spin box):
        remembered, and the prompt on screen runs again with it."""
        n = int(n)
        if n == self.engine.max_new_tokens:
            return
        self.engine.max_new_tokens = n
        self.settings.set_tokens(n)
        self.state.tokens_changed.emit(n)  # the Controls dock shows it, Edit -> Undo records it
        self.engine.request(self.engine._current_prompt(), self.state.knobs)

    def scene_pixel_size(self) -> tuple[int, int]:
        ratio = self.scene.devicePixelRatioF()
        return max(1, int(self.scene.width() * ratio)), max(1, int(self.scene.height() * ratio))

    def open_export_dialog(self, target: str = "view"):
        from app.export import ExportDialog  # only for exports: not imported before the first frame

        default = os.path.join(self._export_dir, f"k3-layer{self.state.layer + 1}-step{self.state.step + 1}.png")
        dialog = ExportDialog(self.scene_pixel_size(), default, self, target=target)
        dialog.accepted.connect(lambda: self._export_accepted(dialog))
        dialog.open()
        return dialog

    def _export_accepted(self, dialog):
        """Render, encode and write in the render thread (app/export.py ExportRun): the window keeps
        answering, with a busy cursor and, past half a second, a progress dialog."""
        from app.export import ExportRun

        choice = dialog.choice()
        run = ExportRun(choice, self.scene, self)
        self.export_run = run
        run.finished.connect(lambda image, error: self._export_finished(choice, image, error))
        return run.start()

    def _export_finished(self, choice, image, error: str) -> None:
        if error:
            safe_text.warn(self, tr("app.export.title"), error)  # plain: it quotes a path
            return
        if choice.destination == "file":
            self._export_dir = os.path.dirname(os.path.abspath(choice.path))
            self.statusBar().showMessage(tr("app.export.saved", path=choice.path, w=image.width(),
                                            h=image.height()), 8000)
        else:
            self.statusBar().showMessage(tr("app.export.copied", w=image.width(), h=image.height()), 8000)

    def open_animation_dialog(self):
        """File -> Export animation…: the dialog, then the export with a progress dialog (app/animate_dialog.py)."""
        from app.animate_dialog import AnimationDialog, run_export

        default = os.path.join(self._export_dir, f"k3-{self.config.name.lower().replace(' ', '-')}-steps.mp4")
        dialog = AnimationDialog(default, self)
        dialog.accepted.connect(lambda: run_export(self, *dialog.choice()))
        dialog.open()
        return dialog

    def copy_view(self) -> None:
        from app.export import ExportError, copy_to_clipboard, render_view

        w, h = self.scene_pixel_size()
        try:
            copy_to_clipboard(render_view(self.scene, w, h))
        except ExportError as exc:
            self.statusBar().showMessage(str(exc), 8000)
            return
        self.statusBar().showMessage(tr("app.export.copied", w=w, h=h), 8000)

    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self.registry, self)
        dialog.open()
        return dialog

    def show_about(self):
        from app.about import AboutDialog  # importlib.metadata, platform: only when asked for

        dialog = AboutDialog(self)
        dialog.open()
        return dialog

    # --- language ----------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.setWindowTitle(self.history.title() if getattr(self, "history", None) else "K3 Explorer")
        self.registry.retranslate()
        self.registry.actions[f"lang_{i18n.language()}"].setChecked(True)
        self.toolbar.setWindowTitle(tr("app.toolbar"))
        self.scene.set_translator(tr)
        for dock in self.docks.values():
            if not getattr(dock, "retranslates_itself", False):  # a TabbedDock follows language_changed itself
                dock.retranslate()
        tooltips.apply(self)
        self._update_status()

    # --- lifecycle ---------------------------------------------------------------------------
    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._shown_once:
            self._shown_once = True
            self.scene.gl.frameSwapped.connect(self._on_first_frame)
            # no GL frame will come when GL is missing (the view says why): start at once; else a safety net
            QTimer.singleShot(0 if self.scene.gl.gl_error else 3000, self, self._on_first_frame)

    def _on_first_frame(self) -> None:
        if self._first_frame_done:
            return
        self._first_frame_done = True
        if self.scene.gl.gl_error:
            log.warning("OpenGL unavailable, the 3D view shows why: %s", self.scene.gl.gl_error)
        else:
            from app.log import log_gl_info

            log_gl_info()
        try:
            self.scene.gl.frameSwapped.disconnect(self._on_first_frame)
        except (RuntimeError, TypeError):
            pass
        QTimer.singleShot(0, self, self._after_first_show)  # with the window as context: never after it is gone

    def _after_first_show(self) -> None:
        """Right after the first frame the engine starts loading in its thread (torch, the trained weights);
        the docks that start behind a tab wait until its first result is on screen (building them takes the
        UI thread, and with it the GIL, for a second or more, which the engine needs now) or until it failed.
        Without an engine they are built at once. Asked for by name earlier (`docks[name]`), they are built
        then."""
        self._lay_out()  # the docks built so far, as saved or by default (again once the late ones exist)
        focus.untrap_tab(self)
        if not self._start_engine:
            self._schedule_late_docks()
            return
        self.state.trace_changed.connect(self._late_after_trace)
        self.state.engine_error.connect(self._schedule_late_docks)
        self.engine.load_failed.connect(self._schedule_late_docks)
        QTimer.singleShot(LATE_DOCKS_AT_LATEST_MS, self, self._schedule_late_docks)
        self.engine.start()  # torch loads in the worker thread once the first frame is on screen

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

    def _scene_with_strip(self) -> QWidget:
        """The 3D view with the answer strip under it (issue 21 I5): the drawn word and the top-5 bars stay in
        view whatever the dock layout."""
        from app.widgets.answer_strip import AnswerStrip

        box = QWidget(self)
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.scene, 1)
        self.answer_strip = AnswerStrip(self.state, box)
        lay.addWidget(self.answer_strip)
        return box

    def _lay_out(self) -> None:
        if self._restored:
            self.settings.restore_window(self, geometry=False)
        else:
            self._default_sizes()
        self._unelide_tabs()

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
        knockout_menu.install(self)  # right-click a 3D block / cell or a token chip: knock it out
        self._lay_out()  # now also places the late docks
        self.late_docks_ready.emit()
        self.first_frame.emit()

    def save_settings(self) -> None:
        self.settings.save_window(self)
        try:
            camera = self.scene.camera_state()
        except Exception:  # noqa: BLE001 - camera is a convenience; never block closing
            camera = None
        self.settings.save_values(language=i18n.language(), layer=self.state.layer, knobs=self.state.knobs,
                                  prompt=self.state.prompt, camera=camera)
        self.settings.q.setValue("player_step", int(self.state.step))  # restored with the camera
        problem = self.settings.sync()
        if problem:  # the old file is unchanged; say why where it can still be read
            print(problem, file=sys.stderr)
            self.statusBar().showMessage(problem, 15000)

    def closeEvent(self, event) -> None:
        self.leave_presentation()  # the settings keep the window's own layout, not the presentation
        if self._first_frame_done:
            self._build_late_docks()  # the saved layout places every dock
        self.state.player.pause()
        self.save_settings()
        self.engine.stop()
        self.state.detach_language()  # a later switch must not reach a closed window
        super().closeEvent(event)
