"""Two models' stacks side by side in the central area (issue 41.3): View -> Side by side (compare), mirrored by
a check box on the Compare dock's Same-prompt page, off by default, remembered in the settings and in view files.

The central area is a QSplitter from the start: the window's own column (its SceneView and the answer strip) and a
second pane for the compared model. The pane is a header and a status line until it is first shown; its SceneView
is made then, in place (never a live GL picture re-parented), and a hidden pane costs nothing: no trace, no job, no
frame (a hidden view asks for none).

The compared model is the Compare dock's other pick: the one that is not the window's model, else pick B. Its trace
is the window's prompt with the window's weights kind, knobs (experts biased only where the model has them) and
number of generated tokens; its explanation is at the Explain dock's position with the Explain dock's "In the 3D
view" choices (lens column, arcs, causal or direct route and its threshold), so both stacks draw the same things.
Both run on background lanes (app/engine/background.py): the trace on "side-trace" with the pane's own engine
(app/engine/explain_service.trace_engine under TRACE_LOCK: a new trace never waits for an explanation), then the
explanation on "side-stack" (app/engine/explain_render.result_for: the shared engine cache under its ENGINE_LOCK). Requests are coalesced: one job of each kind at a time, and when one ends the
pane computes what the window shows NOW, so only the latest request runs. A failure is one line in the pane's
status; the app keeps running.

The second view's camera turns on its own; its layer follows the window's where the model has that layer (else
its default), its pass and token follow the window's player.
"""
from __future__ import annotations

import time
from dataclasses import replace

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from app.engine.background import BackgroundJobs
from app.engine.explain_service import TRACE_LOCK, trace_engine
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.safe_text import plain
from compute.model_defaults import config_named, layer_for


def compared_model(picks: tuple[str, str], window_model: str) -> str:
    """The model the second pane shows: of the Compare dock's picks (A, B) the one that is not the window's
    model; pick B when neither or both are."""
    a, b = picks
    return a if b == window_model and a != window_model else b


def knobs_for(knobs, config):
    """The window's knobs for another model: expert biases only for the experts that model has."""
    n = int(config.n_routed_experts)
    return replace(knobs, expert_bias={e: v for e, v in knobs.expert_bias.items() if 0 <= int(e) < n})


def knobs_key(k) -> tuple:
    return (k.alpha, k.beta, k.temperature, k.top_p, tuple(sorted(k.expert_bias.items())), k.sample_seed)


def trace_job(name: str, weights: str, prompt: str, n_new: int, knobs):
    """The background job of the compared model's trace: (config, Trace)."""
    def run(job):
        config = config_named(name)
        with TRACE_LOCK:  # app/engine/explain_service.py's thread rule
            trace = trace_engine(config, weights).run(prompt, max(1, int(n_new)), knobs_for(knobs, config))
        return config, trace
    return run


def explain_job(config, trace, position: int | None, causal: bool):
    """The background job of its explanation at `position` (the Explain dock's ExplainResult, sources left out):
    (result, seconds)."""
    def run(job):
        from app.engine.explain_render import result_for

        t0 = time.perf_counter()
        res = result_for(config, trace, position, None, causal=causal)
        return res, time.perf_counter() - t0
    return run


class SidePane(QWidget):
    """The second pane: a header naming the model (and its weights), a status line, and the SceneView made on
    first show (`scene`, None until then)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("side_pane")
        self.header = QLabel()
        self.header.setObjectName("side_header")
        self.status = QLabel()
        self.status.setObjectName("side_status")
        for label in (self.header, self.status):
            plain(label)
            label.setWordWrap(True)
            label.setContentsMargins(6, 2, 6, 2)
        self.header.setStyleSheet("font-weight: bold;")
        self.link = QCheckBox()  # the camera turns with the window's (its angles; each keeps its own framing)
        self.link.setObjectName("side_link_cameras")
        self.scene = None
        self.box = QVBoxLayout(self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(0)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 6, 0)
        top.addWidget(self.header, 1)
        top.addWidget(self.link)
        self.box.addLayout(top)
        self.box.addWidget(self.status)

    def make_scene(self, config):
        """The pane's SceneView, laid out for `config` (made once)."""
        if self.scene is None:
            from scene.view import SceneView

            self.scene = SceneView(self, config)
            self.scene.setObjectName("sideSceneView")
            self.scene.set_translator(tr)
            self.box.addWidget(self.scene, 1)
        return self.scene


class SideStack(QObject):
    """See the module docstring. Reads the window's public names only (state, scene, config, docks, registry,
    settings, late_docks_ready)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.on = False
        self.main_header = QLabel()
        self.main_header.setObjectName("main_pane_header")
        plain(self.main_header)
        self.main_header.setContentsMargins(6, 2, 6, 2)
        self.main_header.setStyleSheet("font-weight: bold;")
        self.main_header.hide()
        self.pane = SidePane()
        self.pane.hide()
        self.splitter = None
        self.model = ""  # the compared model shown (or being run)
        self.config = None  # its config, once its first trace is in
        self.trace = None  # its trace, and the key it was made for
        self.trace_key = None
        self.result = None  # its explanation, and the key it was made for
        self.result_key = None
        self.drawn = None  # what the second view's explanation was drawn from (result key and choices)
        self.seconds = 0.0
        self.error = ""
        self.failed_key = None  # the request that failed: not run again until the window asks for another
        self._running = {"trace": False, "explain": False}  # one job of each kind at a time
        self._epoch = 0  # bumped when the pane is turned off: the results of jobs started before are dropped
        self._dock = None  # the Compare dock, once attached (its picks and its check box)
        self.jobs = {"trace": BackgroundJobs("side-trace", self), "explain": BackgroundJobs("side-stack", self)}
        for lane in self.jobs.values():  # two lanes: a new trace runs while an older explanation still computes
            lane.done.connect(self._done)
            lane.failed.connect(self._failed)
        self._timer = QTimer(self)  # many signals in one event-loop turn (a new trace) -> one update
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.update)

    def central(self, main_box: QWidget) -> QSplitter:
        """The central area above the answer strip: a splitter of the window's column (a header over its 3D view
        `main_box`) and the pane."""
        column = QWidget()
        lay = QVBoxLayout(column)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.main_header)
        lay.addWidget(main_box, 1)
        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.setObjectName("central_splitter")
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(column)
        self.splitter.addWidget(self.pane)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 1)
        return self.splitter

    def connect(self) -> None:
        """Follow the window (its state, the action, the late docks); once its parts exist."""
        w, st = self.window, self.window.state
        self.action = w.registry.actions["side_by_side"]
        self.action.setCheckable(True)
        for signal in (st.trace_changed, st.explanation_shown, st.config_changed):
            signal.connect(self.schedule)
        st.layer_changed.connect(self._follow_layer)
        w.scene.gl.frameSwapped.connect(self._follow_camera)
        self.pane.link.toggled.connect(lambda _c: self._follow_camera())
        st.pass_changed.connect(self._follow_pass)
        st.token_changed.connect(self._follow_token)
        w.late_docks_ready.connect(self._attach_dock)
        self.set_on(w.settings.side_by_side(), remember=False)

    # -- on / off ----------------------------------------------------------------------------------------------
    @guarded
    def toggled_by_action(self) -> None:
        self.set_on(self.action.isChecked())

    def set_on(self, on: bool, remember: bool = True) -> None:
        """Show (True) or hide the second pane; the action, the page's box and (remember) the settings follow."""
        on = bool(on)
        self.action.setChecked(on)
        box = self._box()
        if box is not None and box.isChecked() != on:
            box.blockSignals(True)
            box.setChecked(on)
            box.blockSignals(False)
        if remember:
            self.window.settings.set_side_by_side(on)
        if on == self.on:
            return
        self.on = on
        self.pane.setVisible(on)
        self.main_header.setVisible(on)
        if on:
            half = max(1, self.splitter.width() // 2)
            self.splitter.setSizes([half, half])
            self.retranslate()
            st = self.window.state  # hidden, the pane followed nothing: catch up with the window's player
            self._follow_layer(st.layer)
            self._follow_pass(st.pass_index)
            self._follow_token(st.token)
            self.schedule()
        else:
            self._epoch += 1  # a running job's result is dropped

    # -- the compared model and its request -------------------------------------------------------------------
    def _attach_dock(self) -> None:
        """The Compare dock exists: its picks choose the model, its page's box mirrors the action."""
        dock = dict.get(self.window.docks, "CompareDock")
        if dock is None or dock is self._dock:
            return
        self._dock = dock
        dock.pick_a.currentIndexChanged.connect(self.schedule)
        dock.pick_b.currentIndexChanged.connect(self.schedule)
        box = self._box()
        box.setChecked(self.on)
        box.toggled.connect(guarded(lambda checked: self.set_on(checked)))
        self.schedule()

    def _box(self):
        return self._dock.runs.stacks_box if self._dock is not None else None

    def wanted_model(self) -> str:
        """The model the pane should show now ("" before the Compare dock exists)."""
        if self._dock is None:
            return ""
        picks = (self._dock.pick_a.currentData(), self._dock.pick_b.currentData())
        return compared_model(picks, self.window.config.name)

    def busy(self) -> bool:
        """Whether a job of the pane runs or an update is due."""
        return any(self._running.values()) or self._timer.isActive()

    def schedule(self, *_args) -> None:
        if self.on:
            self._timer.start()

    def _explain_choice(self) -> tuple:
        """(position, lens, route, percent, arcs, route kind) of the Explain dock (its defaults when not built)."""
        dock = dict.get(self.window.docks, "ExplainDock")
        if dock is None:
            return None, True, False, 30, True, "causal"
        return (dock.explained_position(), *dock.show3d.values(), dock.show3d.route_kind())

    @guarded
    def update(self) -> None:
        """Start the next job the window's state needs (one at a time), or draw what is computed."""
        main = self.window.state.trace
        if not self.on or main is None:
            return
        name = self.wanted_model()
        if not name:
            self.pane.status.setText(tr("stacks.status.waiting"))
            return
        weights = getattr(main, "weights_name", "trained")
        n_new = len(main.tokens) - main.prompt_len
        tkey = (name, weights, main.text, n_new, knobs_key(main.knobs))
        self._headers()
        if tkey == self.failed_key:
            return
        if tkey != self.trace_key:
            if self._running["trace"]:
                return  # when it ends, the pane asks again for what the window shows then
            self.model = name
            self._headers()
            self._start("trace", tkey, trace_job(name, weights, main.text, n_new, main.knobs),
                         tr("stacks.status.trace", model=self._display()))
            return
        position, lens, route, pct, arcs, kind = self._explain_choice()
        causal = route and kind == "causal"
        if not (lens or route or arcs):
            self.pane.scene.set_explanation(None)
            self.drawn = None
            self.pane.status.setText(tr("stacks.status.no_explain"))
            return
        ekey = (tkey, position, causal)
        if ekey == self.failed_key or self._running["explain"]:
            return
        if ekey != self.result_key or self.result is None:
            at = position if position is not None and 0 <= position < len(self.trace.tokens) \
                else self.trace.prompt_len - 1
            self._start("explain", ekey, explain_job(self.config, self.trace, position, causal),
                        tr("stacks.status.explain", pos=at, piece=self.trace.tokens[at][0].strip() or "␣"))
            return
        drawn = (ekey, lens, route, pct, arcs, kind)
        if drawn != self.drawn:  # the same drawing again (another signal of the same state): nothing to redo
            from app.engine.explain_service import overlay_of

            self.pane.scene.set_explanation(overlay_of(self.result, lens, route, pct, arcs, kind=kind))
            self.drawn = drawn
        self._say_done()

    def _start(self, kind: str, key, fn, status: str) -> None:
        self._running[kind] = True
        self.error = ""
        self.pane.status.setText(status)
        self.jobs[kind].start((self._epoch, kind, key), fn)

    @guarded
    def _done(self, token, result) -> None:
        epoch, kind, key = token
        self._running[kind] = False
        if epoch == self._epoch and self.on:
            if kind == "trace":
                self._show_trace(key, *result)
            else:
                self.result, self.seconds = result  # (of the trace it was asked for: update compares keys)
                self.result_key = key
        self.schedule()

    @guarded
    def _failed(self, token, err: str) -> None:
        epoch, kind, key = token
        self._running[kind] = False
        if epoch != self._epoch or not self.on:
            self.schedule()
            return
        self.error = err
        self.failed_key = key  # not run again until the window asks for something else (no retry loop)
        self.pane.status.setText(tr("stacks.status.failed", model=self._display(), error=err))

    def _show_trace(self, key, config, trace) -> None:
        scene = self.pane.make_scene(config)
        if self.config is None or config.name != self.config.name or config != self.config:
            scene.set_explanation(None)
            self.drawn = None
            scene.set_trace(None)
            scene.set_config(config)
            scene.set_camera_preset("reset", animate=False)
        self.config, self.trace, self.trace_key = config, trace, key
        self.result, self.result_key = None, None
        scene.set_layer(layer_for(config, self.window.state.layer + 1) - 1, animate=False)
        scene.set_trace(trace)
        self._follow_pass(self.window.state.pass_index)
        self._headers()

    def _say_done(self) -> None:
        res = self.result
        if res is None or self.trace is None:
            self.pane.status.setText(tr("stacks.status.no_explain"))
            return
        piece = res.pieces[res.position].strip() if res.position < len(res.pieces) else ""
        self.pane.status.setText(tr("stacks.status.done", pos=res.position, piece=piece or "␣",
                                    word=res.word.strip() or "␣", p=f"{100 * res.prob:.1f}",
                                    s=f"{self.seconds:.2f}"))

    # -- following the window's player ------------------------------------------------------------------------
    def _ready(self) -> bool:
        return self.on and self.pane.scene is not None and self.config is not None

    @guarded
    def _follow_layer(self, layer0: int) -> None:
        if self._ready():
            self.pane.scene.set_layer(layer_for(self.config, int(layer0) + 1) - 1)

    @guarded
    def _follow_pass(self, index: int) -> None:
        if self._ready() and self.trace is not None:
            self.pane.scene.set_pass(int(index))

    @guarded
    def _follow_token(self, pos: int) -> None:
        if self._ready() and self.trace is not None:
            self.pane.scene.set_token(min(int(pos), len(self.trace.tokens) - 1))

    @guarded
    def _follow_camera(self) -> None:
        """With "Link cameras" on, the second view looks from the window's view's angles (azimuth, elevation);
        its centre and distance stay its own, as the two stacks differ in height."""
        if not (self._ready() and self.pane.link.isChecked()):
            return
        main, scene = self.window.scene.cam, self.pane.scene
        if (scene.cam.azimuth, scene.cam.elevation) != (main.azimuth, main.elevation):
            scene.set_camera_state({**scene.camera_state(), "azimuth": main.azimuth, "elevation": main.elevation})

    # -- texts ------------------------------------------------------------------------------------------------
    def _display(self) -> str:
        if self.config is not None and self.config.name == self.model:
            return self.config.display_name
        try:
            return config_named(self.model).display_name if self.model else ""
        except (KeyError, ValueError, OSError):
            return self.model

    def retranslate(self) -> None:
        self._headers()
        self.pane.link.setText(tr("stacks.link"))
        self.pane.link.setToolTip(tr("tip.stacks.link"))
        if self.pane.scene is not None:
            self.pane.scene.set_translator(tr)
        if self.on and not self.busy() and not self.error and self.result is not None:
            self._say_done()

    def _headers(self) -> None:
        """Each pane's header: its model and the weights its numbers come from."""
        w = self.window
        main_weights = getattr(w.state.trace, "weights_name", "trained")
        self.main_header.setText(tr("stacks.header", model=w.config.display_name,
                                    weights=tr(f"stacks.weights.{main_weights}")))
        if self.model:
            weights = getattr(self.trace, "weights_name", "") if self.trace is not None else ""
            self.pane.header.setText(tr("stacks.header", model=self._display(),
                                        weights=tr(f"stacks.weights.{weights}") if weights else "…"))
        else:
            self.pane.header.setText(tr("stacks.header.none"))
