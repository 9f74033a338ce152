"""File -> Save view… / Open view… / Recent views: the window's side of view files (app/files/viewfile.py).

`ViewActions(window)` captures what the window shows as a View (model, prompt, knobs, weights, layer, step,
camera, selection, language, 3D view size), writes it atomically, and applies an opened one: a file that is
unreadable, not a view, of a newer major version or with a bad field is refused with one message and nothing
changes. Applying re-runs the engine only when the shown trace is not already the view's (prompt, knobs,
tokens); the step, layer, selection and camera are applied once that trace is on screen. The recent views
(at most `RECENT_MAX`) are kept in the settings.
"""
from __future__ import annotations

import logging
import os

from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from app.files import atomic_io, viewfile
from app import i18n
from app.i18n import tr
from app.files.view_knockouts import explained_position
from app.files.viewfile import View, ViewError
from app.widgets.safe_text import plain_message_box, plain_tip

log = logging.getLogger(__name__)
RECENT_MAX = 8


class ViewActions:
    def __init__(self, window):
        self.window = window
        self.pending: View | None = None  # opened, waiting for its trace
        self.before = None  # (knobs, prompt, tokens) before the pending view was applied
        self.source: str | None = None  # the file of the view being applied
        self.last_error = ""  # the last refusal (also in a message box and the status bar)
        self.message_box: QMessageBox | None = None
        self.folder = os.path.expanduser("~")
        self.recent = list(window.settings.recent_views())
        self.menu = QMenu(window)
        self.menu.setObjectName("menu_recent_views")
        self.menu.aboutToShow.connect(self._fill_recent)
        file_menu = window.registry.menus["file"]
        actions = file_menu.actions()
        at = actions.index(window.registry.actions["export_image"])
        if at > 0 and actions[at - 1].isSeparator():
            at -= 1  # after Save view…, before the separator that starts the export group
        file_menu.insertMenu(actions[at], self.menu)
        window.state.trace_view.connect(self._on_trace)
        window.state.engine_error.connect(self._on_error)
        window.state.language_changed.connect(lambda _l: self.retranslate())
        self.retranslate()
        self._fill_recent()

    def retranslate(self) -> None:
        self.menu.setTitle(tr("app.view.recent"))
        self._fill_recent()

    # --- capture and save ----------------------------------------------------------------------
    def current_view(self) -> View:
        """What the window shows now, as a View."""
        w = self.window
        st, trace = w.state, w.state.trace
        cell = st.cell  # (block id, drawn grid row, column) of the cell clicked last, or None
        block = w.scene.selected
        try:
            camera = w.scene.camera_state()
        except Exception:  # noqa: BLE001 - a view without a camera frames the step as the app does
            camera = None
        return View(model=w.config.name,
                    weights=getattr(trace, "weights_name", "trained") if trace is not None else "trained",
                    prompt=trace.text if trace is not None else st.prompt,
                    tokens=len(trace.tokens) - trace.prompt_len if trace is not None else w.engine.max_new_tokens,
                    knobs=trace.knobs if trace is not None else st.knobs,
                    layer=st.layer + 1, step=st.step + 1, camera=camera, block=block,
                    cell=(cell[1], cell[2]) if cell and block and cell[0] == block else None,
                    expert=w.scene.expert, language=i18n.language(), size=w.scene_pixel_size(),
                    knockouts=self._knockouts(), explain3d=self._explain3d(),
                    compare=self._compare(trace.text if trace is not None else st.prompt))

    def _compare(self, prompt: str) -> dict | None:
        """The Compare dock's picked models (and its page's own prompt), if the dock was built."""
        dock = dict.get(self.window.docks, "CompareDock")
        if dock is None:
            return None
        compare = dock.compared(prompt)
        return {**compare, "stacks": True} if self.window.side.on else compare

    def _explain3d(self) -> dict | None:
        """What the 3D view draws of the Explain dock (its 'In the 3D view' choices and position), if built."""
        dock = dict.get(self.window.docks, "ExplainDock")
        if dock is None:
            return None
        lens, route, pct, arcs = dock.show3d.values()
        return {"lens": lens, "arcs": arcs, "route": route, "route_threshold": int(pct),
                "position": dock.explained_position(), **({"units": True} if dock.show3d.units_on() else {})}

    def _knockouts(self) -> dict | None:
        """The Explain dock's knock-out set, if the dock was ever opened (building it only to ask is not needed)."""
        dock = dict.get(self.window.docks, "ExplainDock")  # built docks only: no late build just to ask
        return dock.knockouts() if dock is not None else None

    def save_dialog(self) -> None:
        default = os.path.join(self.folder, f"k3-layer{self.window.state.layer + 1}{viewfile.SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self.window, plain_title("app.action.save_view"), default,
                                              tr("app.view.filter"))
        if path:
            self.save_to(viewfile.with_suffix(path))

    def save_to(self, path: str) -> bool:
        if not self.bundled_model():
            cfg = self.window.config
            self.warn(tr("app.view.unbundled_model", name=cfg.name, path=cfg.path), "app.action.save_view")
            return False
        try:
            written = viewfile.save(self.current_view(), path, self.window.config)
        except atomic_io.WriteError as exc:
            self.warn(atomic_io.message(exc), "app.action.save_view")
            return False
        except ViewError as exc:  # the view would not open again (e.g. a seed over viewfile.MAX_SEED)
            self.warn(tr("guard.view.not_saved", message=str(exc)), "app.action.save_view")
            return False
        self.folder = os.path.dirname(written)
        self.remember(written)
        if getattr(self.window, "history", None) is not None:
            self.window.history.set_view(written)
        self.window.statusBar().showMessage(tr("app.view.saved", path=written), 8000)
        return True

    def bundled_model(self) -> bool:
        """True when the window shows a config shipped in assets/configs (a view names its model by name)."""
        from compute.config import available_configs

        cfg = self.window.config
        bundled = available_configs().get(cfg.name)
        return bundled is not None and os.path.realpath(str(cfg.path)) == os.path.realpath(bundled)

    # --- open and apply ------------------------------------------------------------------------
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, plain_title("app.action.open_view"), self.folder,
                                              tr("app.view.filter"))
        if path:
            self.open_path(path)

    def open_path(self, path: str) -> bool:
        """Load, validate and apply a view file; False (after one message) when it cannot be used."""
        try:
            view = viewfile.load(path)
        except ViewError as exc:
            if exc.kind == "read" and path in self.recent:
                self.recent.remove(path)
                self._store_recent()
            self.refuse(exc)
            return False
        path = os.path.abspath(path)
        self.folder = os.path.dirname(path)
        self.source = path
        try:
            if not self.apply(view):
                return False
        finally:
            self.source = None
        self.remember(path)
        if getattr(self.window, "history", None) is not None:
            self.window.history.set_view(path)  # the window title names the open view
        return True

    def refuse(self, exc: ViewError) -> None:
        key = "app.view.newer" if exc.kind == "version" else "app.view.open_failed"
        self.warn(tr(key, path=exc.path, message=str(exc)))

    def warn(self, text: str, title_key: str = "app.action.open_view") -> None:
        """A window-modal message box that does not block (like the Model menu's), and a status note."""
        self.last_error = text
        self.window.statusBar().showMessage(text, 15000)
        # plain text: it quotes the refused value (a view file's field, a path)
        box = plain_message_box(QMessageBox.Warning, plain_title(title_key), text, QMessageBox.Ok, self.window)
        box.setObjectName("view_error_box")
        self.message_box = box
        box.open()

    def apply(self, view: View, config=None) -> bool:
        """Show the view: another bundled model is switched to through the Model menu's path (the window
        switches once the engine ran it); the prompt, knobs and tokens run; the rest follows the trace.
        `config`: the model the caller has already asked for (`k3-explorer --config`): the view's values are
        checked against it and the view's own model name is not switched to (as `export --config` does)."""
        w = self.window
        cfg = w.config if config is None else config
        if config is None and view.model != w.config.name:
            from compute.config import ConfigError, ModelConfig, available_configs

            try:
                cfg = ModelConfig.from_json(available_configs()[view.model])
            except (ConfigError, KeyError) as exc:
                self.warn(tr("app.view.open_failed", path=view.model, message=str(exc)))
                return False
        try:  # the knobs and layer against the model that will run them: a refusal changes nothing
            viewfile.check_model(view, cfg, self.source or "<view>")
        except ViewError as exc:
            self.refuse(exc)
            return False
        if config is not None and view.model != config.name:
            view = view.with_changes(model=config.name)  # shown on that model: its trace finishes the view
        if config is None and cfg is not w.config:
            w.models.request(cfg)
        st = w.state
        self.before = (st.knobs, st.prompt, w.engine.max_new_tokens)  # put back if the engine refuses the view
        i18n.set_language(view.language)
        w.engine.max_new_tokens = view.tokens
        st.knobs, st.prompt = view.knobs, view.prompt
        self.pending = view
        # the weights chosen (the Model menu's choice where the window has one), else those the trace ran with
        running = getattr(st, "weights", None) or getattr(st.trace, "weights_name", None)
        if running is not None and running != view.weights:
            w.engine.request_weights(view.weights)  # the view's trace is the one the rebuilt engine gives
            w.engine.request(view.prompt, view.knobs)
        elif self._shows(view):
            self._finish()
        else:
            w.engine.request(view.prompt, view.knobs)
        return True

    def _shows(self, view: View) -> bool:
        trace = self.window.state.trace
        return (trace is not None and trace.config_name == view.model and self.window.config.name == view.model
                and trace.text == view.prompt and trace.knobs == view.knobs
                and len(trace.tokens) - trace.prompt_len == view.tokens)

    def _on_trace(self, _trace) -> None:
        if self.pending is not None and self._shows(self.pending):
            self._finish()

    def _on_error(self, _message: str) -> None:
        """The engine refused the view's prompt or knobs (the message is shown already): the window's own
        knobs, prompt and token count come back, so the next run is the one before the view (not the view's
        failing one again)."""
        if self.pending is not None and self.before is not None:
            st, engine = self.window.state, self.window.engine
            st.knobs, st.prompt, engine.max_new_tokens = self.before
        self.pending = None
        self.before = None

    def _finish(self) -> None:
        """The view's trace is on screen: its step, layer, selection and camera."""
        view, self.pending, self.before = self.pending, None, None
        w = self.window
        w.state.player.seek(view.step - 1)
        w.state.select_layer(view.layer - 1)
        if view.block:
            w.state.select_block(view.block)
            if view.cell:
                w.state.select_cell(view.block, *view.cell)
        if view.expert is not None:
            w.state.select_expert(view.expert)
        if view.camera:
            w.scene.set_camera_state(view.camera)
        if view.knockouts or self._knockouts():
            w.docks["ExplainDock"].set_knockouts(view.knockouts)  # the experiment the view was saved with
        explain3d = view.explain3d
        if explain3d is None and view.knockouts:  # no position saved (1.1): the knock-outs were checked for the last
            lens, route, pct, arcs = w.docks["ExplainDock"].show3d.values()  # prompt position; explain that one
            explain3d = {"lens": lens, "route": route, "route_threshold": int(pct), "arcs": arcs,
                         "position": explained_position(view)}
        if explain3d is not None:
            w.docks["ExplainDock"].set_explain3d(explain3d)  # what the 3D view drew of it
        if view.compare is not None:
            w.docks["CompareDock"].set_compared(view.compare)  # the compared models (app/files/view_compare.py)
            w.side.set_on(bool(view.compare.get("stacks")))  # both stacks side by side in the 3D view, or not
        trace = w.state.trace
        notes = list(view.notes)
        if getattr(trace, "weights_name", view.weights) != view.weights:
            notes.append(tr("app.view.other_weights", saved=view.weights, shown=trace.weights_name))
        w.statusBar().showMessage(" ".join([tr("app.view.opened")] + notes), 15000)

    # --- recent views ----------------------------------------------------------------------------
    def remember(self, path: str) -> None:
        path = os.path.abspath(path)
        self.recent = [path] + [p for p in self.recent if p != path][: RECENT_MAX - 1]
        self._store_recent()

    def _store_recent(self) -> None:
        self.window.settings.set_recent_views(self.recent)
        self._fill_recent()

    def _fill_recent(self) -> None:
        self.menu.clear()
        for path in self.recent:
            action = self.menu.addAction(os.path.basename(path))
            action.setToolTip(plain_tip(path))  # a file name may look like markup
            action.setStatusTip(path)
            action.triggered.connect(lambda _c=False, p=path: self.open_path(p))
        if not self.recent:
            empty = self.menu.addAction(tr("app.view.recent_empty"))
            empty.setEnabled(False)
        self.menu.setToolTipsVisible(True)


def plain_title(key: str) -> str:
    from app.window.actions import plain

    return plain(tr(key)).rstrip("…")
