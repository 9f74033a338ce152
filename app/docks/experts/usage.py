"""Usage-by-token-type tab of the experts dock: token type × expert usage over the held-out documents of the
toy language, for one MoE layer, with trained or random weights (the specialisation training produced).

The engine runs the held-out prompts on the usage-map lane of app.engine.background (the shared engine cache's ToyK3
with the chosen weights, never the UI thread), after the tab is first seen; each (model, weights) map is computed once per session and kept.
The maths is Qt-free in usage_model.py. The map: rows = token types, columns = the model's experts, brightness
= the share of that type's tokens that chose the expert in the chosen layer. While a map is computed (10-20 s
for every held-out prompt) the tab shows a progress bar ("k/N prompts") where the map will be; the axes appear
only with the map.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Slot
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QProgressBar, QSpinBox, QStackedWidget,
                               QVBoxLayout, QWidget)

from app.engine.background import BackgroundJobs, Job
from app.docks.deferred import on_screen, watch_dock
from app.docks.experts.heatmap import heatmap_plot
from app.docks.experts.usage_model import (UsageMap, compute_usage, moe_layers_of, specialisation_bits,
                                           top_experts, usage_prompts)
from app.i18n import tr
from app.weights_choice import WEIGHTS, expected_weights, short_name
from compute.language.task import PIECE_TYPES
from app.slot_guard import guarded

_MAP = pg.ColorMap(pos=[0.0, 0.35, 1.0], color=[(18, 20, 26), (40, 110, 170), (255, 214, 120)])


def dominant_order(m: np.ndarray) -> np.ndarray:
    """Column order of a [types, experts] share matrix: by dominant type (row), strongest share first within a
    type, never-chosen experts last."""
    peak = m.max(axis=0)
    dominant = np.where(peak > 0, np.argmax(m, axis=0), m.shape[0])
    return np.lexsort((-peak, dominant))


def usage_job(config, weights: str, prompts: list[str]):
    """The background job of one map (app.engine.background): the shared engine cache's engine for (config, weights) runs
    the prompts, holding ENGINE_LOCK one prompt at a time so that an explanation or a comparison waiting for the
    same engine runs between two prompts, not after the whole map (10-20 s)."""
    def run(job) -> UsageMap:
        from app.engine.explain_service import ENGINE_LOCK, engine_for

        engine = engine_for(config, weights)
        return compute_usage(engine, prompts, progress=job.progress, cancelled=job.cancelled, lock=ENGINE_LOCK)
    return run


class UsageTab(QWidget):
    max_prompts: int | None = None  # tests run fewer held-out prompts

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.maps: dict[str, UsageMap] = {}  # "<model>|<weights>" -> map
        self.running: str | None = None
        self.error = ""
        self._progress = (0, 0)
        self._watching = False

        self.weights_label = QLabel()
        self.weights = QComboBox()
        self.weights.setObjectName("experts.usage.weights")
        for _ in WEIGHTS:
            self.weights.addItem("")
        self.weights.setCurrentIndex(WEIGHTS.index(getattr(state, "weights", "trained")))
        self.layer_label = QLabel()
        self.layer = QSpinBox()
        self.layer.setObjectName("experts.usage.layer")
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        self.status = QLabel()
        self.status.setObjectName("experts.usage.status")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.PlainText)  # quotes an error message
        self.heat, self.image = heatmap_plot("experts.usage.heatmap")
        self.heat.setMinimumHeight(220)
        # where the map will be, until it is there: a progress bar over the prompts (no empty axes)
        self.progress = QProgressBar()
        self.progress.setObjectName("experts.usage.progress")
        self.progress.setTextVisible(True)
        self.progress.setMinimumWidth(240)
        self.waiting = QWidget()
        wait = QVBoxLayout(self.waiting)
        wait.addStretch(1)
        wait.addWidget(self.progress, 0, Qt.AlignHCenter)
        wait.addStretch(2)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.waiting)
        self.pages.addWidget(self.heat)
        self.top = QLabel()
        self.top.setObjectName("experts.usage.top")
        self.top.setWordWrap(True)
        # the other weights' map under this one (trained and random side by side)
        self.both = QCheckBox()
        self.both.setObjectName("experts.usage.both")
        self.other_caption = QLabel()
        self.other_caption.setObjectName("experts.usage.other_caption")
        self.other_caption.setWordWrap(True)
        self.other_caption.setTextFormat(Qt.PlainText)
        self.heat2, self.image2 = heatmap_plot("experts.usage.heatmap_other")
        self.heat2.setMinimumHeight(180)
        for w in (self.other_caption, self.heat2):
            w.hide()

        row = QHBoxLayout()
        row.addWidget(self.weights_label)
        row.addWidget(self.weights)
        row.addWidget(self.layer_label)
        row.addWidget(self.layer)
        row.addWidget(self.both)
        row.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.intro)
        lay.addWidget(self.status)
        lay.addWidget(self.pages, 1)
        lay.addWidget(self.other_caption)
        lay.addWidget(self.heat2, 1)
        lay.addWidget(self.top)

        self.jobs = BackgroundJobs("usage-map", self)
        self.jobs.progress.connect(self._on_progress)
        self.jobs.done.connect(self._on_done)
        self.jobs.failed.connect(self._on_failed)
        self._job: Job | None = None
        self._seen_choice = getattr(state, "weights", "trained")

        self._set_layer_range()
        self.weights.currentIndexChanged.connect(guarded(lambda _i: self.refresh()))
        self.layer.valueChanged.connect(guarded(lambda _v: self.refresh()))
        self.both.toggled.connect(guarded(lambda _on: self.refresh()))
        state.config_changed.connect(guarded(lambda _c: (self._set_layer_range(), self.refresh())))
        state.layer_changed.connect(self._follow_layer)
        state.trace_changed.connect(self._follow_choice)
        self.retranslate()

    # --- choices -----------------------------------------------------------------------------
    @property
    def chosen_weights(self) -> str:
        return WEIGHTS[max(0, self.weights.currentIndex())]

    def show_weights(self, name: str) -> None:
        """Show the map of `name` ("trained" | "random")."""
        self.weights.setCurrentIndex(WEIGHTS.index(name))

    @guarded
    def _follow_choice(self, _trace) -> None:
        """The Model menu's weights changed (a new trace ran with them): show their map."""
        chosen = getattr(self.state, "weights", "trained")
        if chosen != self._seen_choice and chosen in WEIGHTS:
            self._seen_choice = chosen
            self.show_weights(chosen)

    def _moe_layers(self) -> list[int]:
        cfg = self.state.config
        return moe_layers_of(cfg) if cfg is not None else []

    def _set_layer_range(self) -> None:
        layers = self._moe_layers()
        self.layer.blockSignals(True)
        if layers:
            self.layer.setRange(layers[0] + 1, layers[-1] + 1)
            self.layer.setValue(self.state.layer + 1 if self.state.layer in layers else layers[len(layers) // 2] + 1)
        self.layer.blockSignals(False)

    @guarded
    def _follow_layer(self, layer: int) -> None:
        if layer in self._moe_layers():
            self.layer.setValue(layer + 1)

    def moe_index(self) -> int | None:
        """Index into the map's MoE layers of the chosen layer (the nearest MoE layer at or after it)."""
        layers = self._moe_layers()
        if not layers:
            return None
        want = self.layer.value() - 1
        return next((i for i, li in enumerate(layers) if li >= want), len(layers) - 1)

    def key(self, weights: str | None = None) -> str:
        cfg = self.state.config
        return f"{cfg.name if cfg is not None else '?'}|{weights or self.chosen_weights}"

    @property
    def other_weights(self) -> str:
        return WEIGHTS[1 - WEIGHTS.index(self.chosen_weights)]

    def other_map(self) -> UsageMap | None:
        """The other weights' map (shown under this one with 'side by side'), None while not computed."""
        return self.maps.get(self.key(self.other_weights))

    def current_map(self) -> UsageMap | None:
        return self.maps.get(self.key())

    # --- computing ---------------------------------------------------------------------------
    @guarded
    def showEvent(self, event):  # noqa: N802
        super().showEvent(event)
        if not self._watching:
            self._watching = watch_dock(self, lambda shown: self.refresh() if shown else None)
        self.refresh()

    def _start(self, weights: str | None = None) -> None:
        """Run the engine over the held-out prompts for the current model and `weights` (default: the chosen
        ones), in the tab's thread."""
        if self.running is not None or self.state.config is None:
            return
        weights = weights or self.chosen_weights
        prompts = usage_prompts()
        if self.max_prompts is not None:
            prompts = prompts[: self.max_prompts]
        self.running = self.key(weights)
        self.error = ""
        self._progress = (0, len(prompts))
        self._job = self.jobs.start(self.running, usage_job(self.state.config, weights, prompts))

    @guarded
    @Slot(object, int, int)
    def _on_progress(self, key: str, done: int, total: int) -> None:
        self._progress = (done, total)
        if key == self.key():
            self._show_status()
        elif key == self.key(self.other_weights) and self.both.isChecked():
            self._show_other()

    @guarded
    @Slot(object, object)
    def _on_done(self, key: str, result) -> None:
        self.maps[key] = result
        self.running = None
        self.refresh()

    @guarded
    @Slot(object, str)
    def _on_failed(self, key: str, message: str) -> None:
        self.running = None
        self.error = message
        self.refresh()

    def stop(self) -> None:
        """Stop a run in progress after its current prompt."""
        if self._job is not None:
            self._job.stop = True

    # --- showing -----------------------------------------------------------------------------
    @guarded
    def refresh(self, *_):
        if not self._moe_layers():
            self.image.clear()
            self.intro.setText("")
            self.top.setText("")
            self._show_waiting(False)
            self.status.setText(tr("experts.usage.no_moe"))
            return
        usage = self.current_map()
        if usage is None:  # (the map page's texts described the map shown before: another model's, maybe)
            self.image.clear()
            self.top.setText("")
            self.intro.setText("")
            self._show_waiting(True)
            if on_screen(self) and not self.error:
                self._start()
            self._show_status()
            return
        self._show_map(usage)
        self._show_other()

    def _show_other(self) -> None:
        """With 'side by side': the other weights' map under this one (computed after it), same rows."""
        on = self.both.isChecked()
        self.other_caption.setVisible(on)
        other = self.other_map() if on else None
        self.heat2.setVisible(other is not None)
        if not on:
            return
        if other is None:
            done, total = self._progress if self.running == self.key(self.other_weights) else (0, 0)
            self.other_caption.setText(tr("experts.usage.other_computing", weights=short_name(self.other_weights, tr),
                                          done=done, total=total))
            if on_screen(self) and not self.error:
                self._start(self.other_weights)
            return
        i = self.moe_index()
        m = other.shares(i)[other.seen_types()]
        m = m[:, dominant_order(m)]
        n_used = max(1, int((m.max(axis=0) > 0).sum()))
        m = m[:, :n_used]
        self.image2.setImage(m, levels=(0.0, max(float(m.max()), 1e-9)), lut=_MAP.getLookupTable(0.0, 1.0, 256))
        self.image2.setRect(0, 0, m.shape[1], m.shape[0])
        self.heat2.setXRange(0, m.shape[1], padding=0)
        self.heat2.setYRange(0, m.shape[0], padding=0)
        names = [tr(f"experts.usage.type.{PIECE_TYPES[t]}") for t in other.seen_types()]
        self.heat2.getAxis("bottom").setTicks([[]])
        self.heat2.getAxis("left").setTicks([[(r + 0.5, names[r]) for r in range(m.shape[0])]])
        counts = other.layer_counts(i)
        self.other_caption.setText(tr("experts.usage.other", weights=short_name(other.weights_name, tr),
                                      mi=f"{specialisation_bits(counts[other.seen_types()]):.2f}", used=n_used))

    def other_matrix(self) -> np.ndarray | None:
        """The other weights' [seen token types, experts] shares, None while not computed."""
        other, i = self.other_map(), self.moe_index()
        return None if other is None or i is None else other.shares(i)[other.seen_types()]

    def _show_waiting(self, computing: bool) -> None:
        """No map to show: the page without axes; its progress bar only while a map is computed for it."""
        self.pages.setCurrentWidget(self.waiting)
        self.progress.setVisible(computing and not self.error)

    def _show_status(self) -> None:
        if self.error:
            self.progress.setVisible(False)
            self.status.setText(tr("experts.usage.failed", message=self.error))
        elif self.current_map() is None:
            done, total = self._progress
            cfg = self.state.config  # another model has no trained toy: random weights run for "trained"
            running = expected_weights(cfg.name if cfg is not None else None, self.chosen_weights)
            self.status.setText(tr("experts.usage.computing", weights=short_name(running, tr),
                                   done=done, total=total))
            self.progress.setRange(0, max(total, 1))
            self.progress.setValue(min(done, max(total, 1)))
            text = tr("experts.usage.progress", done=done, total=total)
            self.progress.setFormat(text)
            self.progress.setMinimumWidth(max(240, self.progress.fontMetrics().horizontalAdvance(text) + 48))

    def matrix(self) -> np.ndarray | None:
        """The shown heatmap [seen token types, experts] (shares), None while not computed."""
        usage, i = self.current_map(), self.moe_index()
        if usage is None or i is None:
            return None
        return usage.shares(i)[usage.seen_types()]

    def column_order(self) -> np.ndarray | None:
        """The shown order of the experts: grouped by their dominant token type (row order), within a group the
        strongest share first; experts never chosen go last. Trained specialisation then reads as blocks."""
        m = self.matrix()
        return None if m is None else dominant_order(m)

    def _show_map(self, usage: UsageMap) -> None:
        i = self.moe_index()
        m = self.matrix()[:, self.column_order()]
        n_used = max(1, int((m.max(axis=0) > 0).sum()))
        m = m[:, :n_used]  # only the experts used, sorted: blocks of colour
        types = usage.seen_types()
        self.pages.setCurrentWidget(self.heat)
        self.image.setImage(m, levels=(0.0, max(float(m.max()), 1e-9)), lut=_MAP.getLookupTable(0.0, 1.0, 256))
        n_types, n_exp = m.shape
        self.image.setRect(0, 0, n_exp, n_types)
        self.heat.setXRange(0, n_exp, padding=0)
        self.heat.setYRange(0, n_types, padding=0)
        names = [tr(f"experts.usage.type.{PIECE_TYPES[t]}") for t in types]
        self.heat.getAxis("bottom").setTicks([[]])  # columns are sorted experts, not ids: no id ticks
        self.heat.getAxis("left").setTicks([[(r + 0.5, names[r]) for r in range(n_types)]])
        counts = usage.layer_counts(i)
        text = tr("experts.usage.ran", weights=short_name(usage.weights_name, tr),  # the ones that ran
                  mi=f"{specialisation_bits(counts[types]):.2f}")
        if self.chosen_weights == "trained" and usage.weights_name != "trained":
            text += " " + tr("experts.usage.fallback")
        self.status.setText(text)
        self.intro.setText(tr("experts.usage.intro", docs=usage.prompts, tokens=usage.n_tokens,
                              layer=usage.moe_layers[i] + 1, experts=usage.n_experts, used=n_used))
        tops = top_experts(counts[types])
        self.top.setText("<br>".join(tr("experts.usage.top", type=names[r], experts=", ".join(map(str, tops[r])))
                                     for r in range(n_types)))

    def retranslate(self):
        self.weights_label.setText(tr("experts.usage.weights"))
        for i, name in enumerate(WEIGHTS):
            self.weights.setItemText(i, tr(f"app.action.{'weights_' + name}"))
        self.layer_label.setText(tr("experts.usage.layer"))
        self.weights.setToolTip(tr("tip.experts.usage.weights"))
        self.layer.setToolTip(tr("tip.experts.usage.layer"))
        self.both.setText(tr("experts.usage.both"))
        self.both.setToolTip(tr("experts.usage.both.tip"))
        self.heat2.setLabel("bottom", tr("experts.usage.axis_sorted"))
        self.heat.setLabel("bottom", tr("experts.usage.axis_sorted"))
        self.refresh()
