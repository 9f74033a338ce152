"""The main window: the 3D scene in the centre, the docks around it, menus/toolbar/shortcuts from the one
action registry, a status bar (layer + type, trace step, engine device), the engine worker, persistence.

It owns five parts, each an object with its own state that reads the window's public names only: the dock
layout, default sizes and Reset layout (`dock_layout`, app/window/window_layout.py), the docks and the late ones built
after the first frame (`dock_builder`, app/window/late_docks.py), presentation mode (`presentation`,
app/window/presentation.py), the status bar (`status`, app/window/window_status.py) and the compared model's stack beside the
3D view (`side`, app/window/side_stack.py: View -> Side by side).
"""
from __future__ import annotations

import logging
import os
import sys

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QMainWindow, QToolBar, QVBoxLayout, QWidget

from app.window import focus, qt_translator, support, tooltips
from app import i18n
from app.window.actions import ActionRegistry, ShortcutsDialog
from app.export.compare_export import export_comparison
from app.i18n import tr
from app.window.late_docks import DockBuilder, Docks
from app.window.presentation import Presentation
from app.files.settings import Settings
from app.state import AppState
from app.slot_guard import guarded
from app.window.tour import start_tour
from app.window.view_menu import ViewActions
from app.widgets import safe_text
from app.window.window_layout import DockLayout, default_window_size, fit_to_screen
from app.window.window_status import StatusBar
from app.engine.worker import EngineController
from compute.config import default_config
from compute.model_defaults import default_layer
from scene.view import SceneView

log = logging.getLogger(__name__)
CAMERA_PRESETS = ("front", "side", "top", "stack")


class MainWindow(QMainWindow):
    first_frame = Signal()  # once: the 3D view has drawn its first frame and the late docks exist (after the
    # first engine result when the engine runs: see _after_first_show)
    late_docks_ready = Signal()  # once: the docks built after the first engine result exist

    def __init__(self, settings_path: str | None = None, start_engine: bool = True, device: str = "auto",
                 language: str | None = None, weights: str | None = None, explain: bool = True):
        """weights: "trained" | "random" for this session (--weights); None = the remembered choice.
        explain=False: the Explain dock computes no explanation (the test suite's windows that never look at it)."""
        super().__init__()
        self.setObjectName("MainWindow")
        self.explain_auto = explain  # read by the Explain dock when it is built (app/docks/explain/dock.py)
        self.settings = Settings(settings_path)
        self.state = AppState(self)
        self.config = default_config()  # the one the scene's first layout used: read once per process
        self.state.set_config(self.config)
        self._start_engine = start_engine
        self._shown_once = False
        self.first_frame_done = False  # the first frame is on screen (the late docks may be built from now)
        self._focused_kind = None
        self._export_dir = os.path.expanduser("~")
        self.export_run = None  # the last export of the 3D view (app/export/image.py ExportRun)

        lang = language or self.settings.language(i18n.system_language())
        i18n.set_language(lang)
        qt_translator.follow_language()  # Qt's own strings (OK / Cancel ...) in the same language
        n_layers = len(self.config.mixer_types)
        self.state.layer = self.settings.layer(default_layer(self.config) - 1, n_layers)
        self.state.knobs = self.settings.knobs()
        self.state.prompt = self.settings.prompt(self.state.prompt)

        self.scene = SceneView(self, self.config)  # laid out once, with this config
        self.scene.set_translator(tr)
        self.scene.set_layer(self.state.layer, animate=False)
        from app.window.side_stack import SideStack

        self.side = SideStack(self)  # the compared model's stack beside this one (View -> Side by side)
        self.setCentralWidget(self._scene_with_strip())

        self.dock_layout = DockLayout(self)
        self.dock_builder = DockBuilder(self)
        self.presentation = Presentation(self)
        self.docks = Docks(self.dock_builder.build_all)
        self.registry = None
        self.window_menu_actions = []
        self.dock_builder.make_docks(eager=True)

        self.registry = ActionRegistry(self, self._handlers())
        self.registry.build_menus(self.menuBar())
        self.dock_builder.fill_window_menu()
        self.views = ViewActions(self)  # File -> Open view… / Save view… / Recent views (app/window/view_menu.py)
        self.toolbar = QToolBar(self)
        self.toolbar.setObjectName("main_toolbar")
        self.toolbar.setToolButtonStyle(Qt.ToolButtonTextOnly)
        self.toolbar.setMovable(False)
        self.registry.build_toolbar(self.toolbar)
        self.addToolBar(Qt.TopToolBarArea, self.toolbar)
        self.registry.actions[f"lang_{i18n.language()}"].setChecked(True)
        self.status = StatusBar(self)

        self.engine = EngineController(self.state, max_new_tokens=self.settings.tokens(), device=device, parent=self)
        self.engine.set_after_run(self.scene.precolour)  # cell colours computed in the engine thread
        self.engine.device_ready.connect(lambda _d: self.status.update())
        self.engine.device_fallback.connect(lambda _d, _r: self.status.update())
        self.engine.load_failed.connect(lambda _r: self.status.update())
        self.engine.busy_changed.connect(lambda _b: self.status.update())
        self.engine.trace_published.connect(self._gate_next_run)
        self.scene.gl.frameSwapped.connect(self._frame_shown)
        from app.window.model_menu import ModelActions

        self.models = ModelActions(self)  # the Model menu, File -> Open model config…, dropped config.json
        from app.weights_choice import WeightsActions

        self.weights = WeightsActions(self, weights)  # Model -> Trained / Random weights, status bar label
        self._connect_state()
        self.side.connect()
        from app.window.history import History

        self.history = History(self)  # Edit -> Undo / Redo / History…, dropped *.k3view files, the title

        self.resize(*default_window_size())
        self.restored = self.settings.restore_window(self)  # a saved geometry and dock layout (lay_out uses it)
        fit_to_screen(self)
        self.tabifiedDockWidgetActivated.connect(lambda _d: self.dock_layout.unelide_tabs())
        camera = self.settings.camera()
        # the camera and the player step are restored together: the saved camera is the view of that step
        self._restore_step = max(0, self.settings._int("player_step", 0)) if camera else 0
        if camera:
            try:
                self.scene.set_camera_state(camera)
            except (KeyError, TypeError, ValueError):
                self._restore_step = 0  # a camera saved by an older scene version: default view, first step
        from app.window.first_run_hint import FirstRunHint

        self.hint = FirstRunHint(self, self.scene)  # shown on the first frame of a first start
        self.retranslate()
        if self.settings.notes:  # values refused from the settings file, a cut prompt
            self.statusBar().showMessage(" ".join(self.settings.note_texts()), 30000)

    # --- construction ------------------------------------------------------------------------
    @guarded
    def _reveal_inspector(self, block_id: str) -> None:
        """A picked block brings the inspector's tab to the front when it hides behind another panel's tab
        (the one-column layout of small screens)."""
        dock = self.docks.get("inspectorDock")
        if block_id and dock is not None and not dock.isFloating() and dock.toggleViewAction().isChecked() \
                and dock.visibleRegion().isEmpty():
            dock.raise_()

    def _handlers(self) -> dict:
        player = self.state.player
        h = {
            "export_image": lambda: self.open_export_dialog("view"),
            "export_window": lambda: self.open_export_dialog("window"),
            "copy_view": self.copy_view,
            "export_animation": self.open_animation_dialog,
            "export_comparison": lambda: export_comparison(self),
            "open_model": lambda: self.models.open_dialog(),
            "open_view": lambda: self.views.open_dialog(),
            "save_view": lambda: self.views.save_dialog(),
            "quit": self.close,
            "camera_reset": lambda: self.scene.set_camera_preset("reset"),
            "layer_prev": lambda: self._layer_by(-1),
            "layer_next": lambda: self._layer_by(1),
            "reset_layout": self.reset_layout,
            "presentation": self.presentation.toggle,
            "side_by_side": lambda: self.side.toggled_by_action(),
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
            "tour": lambda: start_tour(self),
            "shortcuts": self.show_shortcuts,
            "about": self.show_about,
            "show_hint": lambda: self.hint.show_hint(),
            "open_log_folder": lambda: support.open_log_folder(self),
        }
        for name in CAMERA_PRESETS:
            h[f"camera_{name}"] = lambda name=name: self.scene.set_camera_preset(name)
        return h

    def _connect_state(self) -> None:
        st, sc = self.state, self.scene
        st.trace_arriving.connect(sc.set_trace)  # before every panel: the render thread starts the frame at once
        st.trace_window.connect(self._on_trace)
        st.layer_changed.connect(sc.set_layer)
        st.pass_changed.connect(sc.set_pass)
        st.token_changed.connect(sc.set_token)
        st.step_changed.connect(self._on_step)
        st.block_selected.connect(sc.select_block)
        st.block_selected.connect(self._reveal_inspector)
        st.set_dock_opener(self.show_dock)
        st.expert_selected.connect(sc.select_expert)
        st.explanation_shown.connect(sc.set_explanation)  # the Explain dock's lens column / route
        st.engine_error.connect(self.status.on_error)
        st.language_changed.connect(lambda _l: self.retranslate())
        st.layer_changed.connect(lambda _l: self.status.update())
        sc.block_clicked.connect(st.select_block)
        sc.cell_clicked.connect(st.select_cell)
        sc.layer_clicked.connect(st.select_layer)
        sc.expert_clicked.connect(st.select_expert)
        sc.block_hovered.connect(self.status.on_hover)

    # --- state -> scene / status -------------------------------------------------------------
    @guarded
    def _on_trace(self, trace) -> None:
        """After the panels' own handlers of the new trace and a view being applied (AppState.set_trace's order;
        the 3D view has it already: trace_arriving)."""
        if self._restore_step:  # the first trace: back to the step whose camera was restored
            step, self._restore_step = self._restore_step, 0
            self.state.player.seek(step)
        self._focus_step()  # only when the step's kind changed: a new trace alone must not move the camera
        self.status.update()

    def _gate_next_run(self, _trace, _seconds: float) -> None:
        """The engine's next run waits until the frame of this trace is on screen (app/engine/worker.py, frame gate)."""
        gl = self.scene.gl
        if not gl.gl_error and gl.isVisible() and gl.shown_version < self.scene.trace_version:
            self.engine.hold_until_shown()

    def _frame_shown(self) -> None:
        if self.scene.gl.shown_version >= self.scene.trace_version:
            self.engine.release()

    @guarded
    def _on_step(self, index: int) -> None:
        self._focus_step()
        self.status.update()

    def _focus_step(self) -> None:
        step = self.state.player.current()
        if step is not None:
            kind = step.kind
            if kind != self._focused_kind:
                self._focused_kind = kind
                self.scene.set_step_focus(kind)

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
        from app.export.image import ExportDialog  # only for exports: not imported before the first frame

        default = os.path.join(self._export_dir, f"k3-layer{self.state.layer + 1}-step{self.state.step + 1}.png")
        dialog = ExportDialog(self.scene_pixel_size(), default, self, target=target)
        dialog.accepted.connect(lambda: self._export_accepted(dialog))
        dialog.open()
        return dialog

    def _export_accepted(self, dialog):
        """Render, encode and write in the render thread (app/export/image.py ExportRun): the window keeps
        answering, with a busy cursor and, past half a second, a progress dialog."""
        from app.export.image import ExportRun

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
        """File -> Export animation…: the dialog, then the export with a progress dialog (app/window/animate_dialog.py)."""
        from app.window.animate_dialog import AnimationDialog, run_export

        default = os.path.join(self._export_dir, f"k3-{self.config.name.lower().replace(' ', '-')}-steps.mp4")
        dialog = AnimationDialog(default, self)
        dialog.accepted.connect(lambda: run_export(self, *dialog.choice()))
        dialog.open()
        return dialog

    def copy_view(self) -> None:
        from app.export.image import ExportError, copy_to_clipboard, render_view

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
        from app.window.about import AboutDialog  # importlib.metadata, platform: only when asked for

        dialog = AboutDialog(self)
        dialog.open()
        return dialog

    # --- the parts' public faces ----------------------------------------------------------------
    def reset_layout(self) -> None:
        """Window -> Reset layout: every dock back to its registry place, default sizes."""
        self.dock_layout.reset()

    @property
    def presenting(self) -> bool:
        return self.presentation.active

    def toggle_presentation(self) -> None:
        self.presentation.toggle()

    def enter_presentation(self) -> None:
        self.presentation.enter()

    def leave_presentation(self) -> None:
        self.presentation.leave()

    @property
    def late_docks_built(self) -> bool:
        """True once every dock of the registry exists (see _after_first_show)."""
        return self.dock_builder.built

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
        self.side.retranslate()
        self.status.update()
        if getattr(self, "hint", None) is not None:
            self.hint.retranslate()

    # --- lifecycle ---------------------------------------------------------------------------
    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._shown_once:
            self._shown_once = True
            self.scene.gl.frameSwapped.connect(self._on_first_frame)
            # no GL frame will come when GL is missing (the view says why): start at once; else a safety net
            QTimer.singleShot(0 if self.scene.gl.gl_error else 3000, self, self._on_first_frame)

    def _on_first_frame(self) -> None:
        if self.first_frame_done:
            return
        self.first_frame_done = True
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
        self.hint.show_if_first_run()

    def _after_first_show(self) -> None:
        """Right after the first frame the engine starts loading in its thread (torch, the trained weights);
        the docks that start behind a tab wait until its first result is on screen (building them takes the
        UI thread, and with it the GIL, for a second or more, which the engine needs now) or until it failed.
        Without an engine they are built at once. Asked for by name earlier (`docks[name]`), they are built
        then."""
        self.dock_layout.lay_out()  # the docks built so far, as saved or by default (again once the late ones exist)
        focus.untrap_tab(self)
        if not self._start_engine:
            self.dock_builder.schedule()
            return
        self.dock_builder.after_first_trace()
        self.engine.start()  # torch loads in the worker thread once the first frame is on screen

    def _scene_with_strip(self) -> QWidget:
        """The 3D view (beside the compared model's when side by side) with the answer strip under it: the drawn
        word and the top-5 bars stay in view whatever the dock layout."""
        from app.widgets.answer_strip import AnswerStrip

        box = QWidget(self)
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.side.central(self.scene), 1)
        self.answer_strip = AnswerStrip(self.state, box)
        self.answer_strip.word_clicked.connect(guarded(lambda pos, word: self.docks["ExplainDock"].explain_word(pos, word)))
        lay.addWidget(self.answer_strip)
        return box

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
        self.presentation.leave()  # the settings keep the window's own layout, not the presentation
        if self.first_frame_done:
            self.dock_builder.build_all()  # the saved layout places every dock
        self.state.player.pause()
        self.save_settings()
        self.engine.stop()
        self.state.detach_language()  # a later switch must not reach a closed window
        super().closeEvent(event)
