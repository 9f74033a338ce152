"""Opening another model: the Model menu (the bundled configs in assets/configs), File -> Open model config…,
a config.json dropped on the window, and `k3-explorer --config FILE`.

A chosen file is untrusted: it goes through the bounded loader (compute.config.ModelConfig.from_json), whose
ConfigError names the file and the field. The engine is rebuilt for the new config in its worker thread
(EngineController.request_config) and runs the prompt on screen; only when that works does the window switch:
`window.config`, AppState.set_config (config_changed: the docks follow), the scene re-lays, and the layer is
the user's where the new model has it, else the model's default (compute.model_defaults.layer_for): the layer the
user picked last is remembered, so K3 at 37 -> Kimi Linear (27 layers: its default) -> K3 is at 37 again. A refused file or a failed engine run shows a message box and a status note, and
the current model stays.
"""
from __future__ import annotations

import logging
import os

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QTabBar

from app.i18n import tr
from app.widgets.safe_text import plain_message_box
from compute.config import DEFAULT_CONFIG, ConfigError, ModelConfig, available_configs, default_config
from compute.model_defaults import layer_for

log = logging.getLogger(__name__)


def summary(cfg: ModelConfig) -> dict:
    """The facts the status line names: layers, KDA / MLA split, experts and top-k."""
    return dict(name=cfg.display_name, layers=cfg.num_hidden_layers, kda=len(cfg.kda_layers), mla=len(cfg.mla_layers),
                experts=cfg.n_routed_experts, topk=cfg.num_experts_per_tok)


class ModelActions(QObject):
    """The Model menu and the model-switching path of a MainWindow."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.last_error = ""  # the last refusal's message (also shown in a message box and the status bar)
        self.message_box: QMessageBox | None = None
        self.file_dialog: QFileDialog | None = None
        self.menu = QMenu(window)
        self.menu.setObjectName("menu_model")
        bar = window.menuBar()
        before = window.registry.menus.get("language")
        bar.insertMenu(before.menuAction(), self.menu) if before is not None else bar.addMenu(self.menu)
        self.group = QActionGroup(self)
        self.group.setExclusive(True)
        self.model_actions: dict[str, QAction] = {}
        for stem, path in available_configs().items():
            try:
                name = (default_config() if path == DEFAULT_CONFIG else ModelConfig.from_json(path)).display_name
            except ConfigError:
                name = stem
            action = QAction(name, self)
            action.setObjectName(f"action_model_{stem}")
            action.setCheckable(True)
            action.setData(str(path))
            action.triggered.connect(lambda _c=False, p=str(path): self.open_path(p))
            self.group.addAction(action)
            self.menu.addAction(action)
            self.model_actions[stem] = action
        self.menu.addSeparator()
        self.menu.addAction(window.registry.actions["open_model"])
        window.setAcceptDrops(True)
        window.installEventFilter(self)
        window.engine.config_applied.connect(self._applied)
        window.engine.trace_published.connect(self._first_trace_of_model)
        self._reframe = False  # a model was switched to: frame the camera once its first trace is drawn
        window.engine.config_failed.connect(self._engine_failed)
        window.state.language_changed.connect(lambda _l: self.retranslate())
        self.user_layer = window.state.layer  # 0-based: the layer the user picked last (not one a switch forced)
        self._switching = False
        window.state.layer_changed.connect(self._layer_picked)
        self.retranslate()

    def _layer_picked(self, layer: int) -> None:
        if not self._switching:
            self.user_layer = layer

    # --- choosing -----------------------------------------------------------------------------
    def open_dialog(self) -> QFileDialog:
        """File -> Open model config…: a file dialog (not blocking); the chosen file goes to open_path."""
        start = os.path.dirname(self.window.config.path) if self.window.config.path else os.path.expanduser("~")
        dialog = QFileDialog(self.window, tr("model.open.title"), start, tr("model.open.filter"))
        dialog.setObjectName("open_model_dialog")
        dialog.setFileMode(QFileDialog.ExistingFile)
        dialog.setAcceptMode(QFileDialog.AcceptOpen)
        dialog.fileSelected.connect(self.open_path)
        self.file_dialog = dialog
        dialog.open()
        return dialog

    def open_path(self, path: str) -> bool:
        """Load a config file and ask the engine to switch to it; False (and a message) when it is refused."""
        try:
            cfg = ModelConfig.from_json(path)
        except ConfigError as exc:
            log.warning("model: %s", exc)
            self.refuse(str(exc))
            return False
        self.request(cfg)
        return True

    def request(self, cfg: ModelConfig) -> None:
        self.window.statusBar().showMessage(tr("model.status.loading", name=cfg.display_name), 15000)
        self.window.engine.request_config(cfg)

    def refuse(self, message: str) -> None:
        """A message box (window-modal, not blocking) and a status note; nothing else changes."""
        self.last_error = message
        self.window.statusBar().showMessage(tr("model.status.failed", message=message), 15000)
        # plain text: it quotes the refused value and the model's name
        box = plain_message_box(QMessageBox.Warning, tr("model.open.title"), tr("model.open.failed", message=message),
                                QMessageBox.Ok, self.window)
        box.setObjectName("model_error_box")
        self.message_box = box
        box.open()

    # --- the engine's answer --------------------------------------------------------------------
    def _applied(self, cfg: ModelConfig) -> None:
        w = self.window
        w.config = cfg
        w.state.set_config(cfg)  # config_changed: the docks follow
        w.scene.set_config(cfg)
        self._switching = True
        try:  # the user's layer where this model has it, else its default; the user's stays remembered
            w.state.select_layer(layer_for(cfg, self.user_layer + 1) - 1)
        finally:
            self._switching = False
        self._check_current()
        self._reframe = True
        if not w.presenting:  # a fresh start: every dock back at its place, as at start
            w.reset_layout()
        w.dock_layout.unelide_tabs()
        w.status.update()
        w.statusBar().showMessage(tr("model.status.loaded", **summary(cfg)), 10000)
        log.info("model: switched to %s (%s)", cfg.name, cfg.path)

    def _first_trace_of_model(self, trace, _seconds: float = 0.0) -> None:
        """The new model's first trace is in the scene: the camera frames the whole stack as at start (a switch
        from 93 to 61 layers left the old framing, the exploded panel off the top), and the dock tab bars Qt
        re-made keep whole titles."""
        w = self.window
        if not self._reframe or trace is None or trace.config_name != w.config.name:
            return
        self._reframe = False
        w.scene.set_camera_preset("reset", animate=False)
        w.dock_layout.unelide_tabs()

    def _engine_failed(self, cfg: ModelConfig, message: str) -> None:
        self.refuse(tr("model.engine_failed", name=cfg.display_name, message=message))

    def _check_current(self) -> None:
        current = os.path.realpath(self.window.config.path) if self.window.config.path else ""
        for action in self.model_actions.values():
            action.setChecked(os.path.realpath(action.data()) == current)

    # --- drag and drop --------------------------------------------------------------------------
    @staticmethod
    def _dropped_path(event) -> str | None:
        mime = event.mimeData()
        if mime is None or not mime.hasUrls():
            return None
        urls = [u for u in mime.urls() if u.isLocalFile()]
        if len(urls) != 1 or not urls[0].toLocalFile().lower().endswith(".json"):
            return None
        return urls[0].toLocalFile()

    def eventFilter(self, obj, event) -> bool:
        if obj is self.window and event.type() == QEvent.ChildPolished and isinstance(event.child(), QTabBar):
            # a dock tab bar Qt made anew (docks re-tabified after a switch): whole titles, never "T…"
            self.window.dock_layout.unelide_tabs()
            return False
        if obj is self.window and event.type() in (QEvent.DragEnter, QEvent.DragMove):
            if self._dropped_path(event):
                event.acceptProposedAction()
                return True
        elif obj is self.window and event.type() == QEvent.Drop:
            path = self._dropped_path(event)
            if path:
                event.acceptProposedAction()
                self.open_path(path)
                return True
        return False

    def retranslate(self) -> None:
        self.menu.setTitle(tr("app.menu.model"))
        self._check_current()
