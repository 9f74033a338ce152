"""Controls dock (C1): KDA α and β (default "computed" from the input, as in K3), temperature, top-p, and how
many tokens the window generates (1-64, or until the end of the sentence: a '.' or a newline), remembered.

Each row: name, slider, the value (or "computed"), a reset button. Dragging updates the knobs live
(AppState.request_knobs on every value change; the engine worker coalesces, latest wins).
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDockWidget, QGridLayout, QLabel, QSlider, QSpinBox, QToolButton, QVBoxLayout,
                               QWidget)

from app import i18n, texts
from app.i18n import tr
from app.widgets.controls import scrolled
from app.widgets.paint import css
from scene.layout import ModelDims
from scene.tooltips import model_args
from app.slot_guard import guarded


@dataclass(frozen=True)
class KnobSpec:
    field: str  # Knobs field
    lo: float
    hi: float
    step: float
    default: float | None  # None = "computed"
    decimals: int = 2

    def to_slider(self, value: float) -> int:
        return int(round((min(max(value, self.lo), self.hi) - self.lo) / self.step))

    def from_slider(self, position: int) -> float:
        return round(self.lo + position * self.step, 6)

    @property
    def steps(self) -> int:
        return int(round((self.hi - self.lo) / self.step))


KDA_KNOBS = ("alpha", "beta")  # they act on KDA layers only: no effect on a model without any

KNOBS: tuple[KnobSpec, ...] = (
    KnobSpec("alpha", 0.01, 1.0, 0.01, None),  # α = exp(g) in (e^-5, 1]; 0 would be log(0)
    KnobSpec("beta", 0.0, 1.0, 0.01, None),
    KnobSpec("temperature", 0.0, 2.0, 0.01, 1.0),  # 0 = greedy
    KnobSpec("top_p", 0.01, 1.0, 0.01, 1.0),
)


class _KnobRow:
    def __init__(self, spec: KnobSpec, dock: "ControlsDock", grid: QGridLayout, row: int):
        self.spec = spec
        self.dock = dock
        self.name = QLabel()
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setObjectName(f"slider_{spec.field}")
        self.slider.setRange(0, spec.steps)
        self.slider.setPageStep(max(1, spec.steps // 10))
        self.slider.setTracking(True)
        self.slider.setMinimumWidth(90)
        self.value = QLabel()
        self.value.setObjectName(f"value_{spec.field}")
        self.value.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        self.reset = QToolButton()
        self.reset.setObjectName(f"reset_{spec.field}")
        self.reset.setText("↺")
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setTextFormat(Qt.PlainText)  # names the model (its config's display_name)
        self.hint.setStyleSheet(f"color: {css('note')}; font-size: 11px;")
        grid.addWidget(self.name, 2 * row, 0)
        grid.addWidget(self.slider, 2 * row, 1)
        grid.addWidget(self.value, 2 * row, 2)
        grid.addWidget(self.reset, 2 * row, 3)
        grid.addWidget(self.hint, 2 * row + 1, 0, 1, 4)
        self.slider.valueChanged.connect(self._moved)
        self.reset.clicked.connect(self._reset)
        self._updating = False

    def show(self, value: float | None) -> None:
        self._updating = True
        fallback = self.spec.default if self.spec.default is not None else (self.spec.lo + self.spec.hi) / 2
        self.slider.setValue(self.spec.to_slider(fallback if value is None else value))
        self._updating = False
        self.value.setText(tr("app.controls.computed") if value is None
                           else f"{value:.{self.spec.decimals}f}")
        self.reset.setEnabled(value != self.spec.default and self.slider.isEnabled())

    @guarded
    def _moved(self, position: int) -> None:
        if self._updating:
            return
        value = self.spec.from_slider(position)
        self.value.setText(f"{value:.{self.spec.decimals}f}")
        self.reset.setEnabled(value != self.spec.default)
        self.dock.state.request_knobs(**{self.spec.field: value})

    @guarded
    def _reset(self) -> None:
        self.show(self.spec.default)
        self.dock.state.request_knobs(**{self.spec.field: self.spec.default})

    def retranslate(self) -> None:
        args = model_args(ModelDims.from_config(self.dock.state.config))  # the shown model's numbers
        inert = self.spec.field in KDA_KNOBS and not args["kda_layers"]
        self.name.setText(tr(f"app.controls.{self.spec.field}"))
        self.hint.setText(tr("app.controls.no_kda.hint" if inert else f"app.controls.{self.spec.field}.hint", **args))
        for widget in (self.name, self.slider, self.value):
            widget.setEnabled(not inert)
        self.reset.setToolTip(tr("app.controls.reset"))
        metrics = self.value.fontMetrics()  # wide enough for "computed" and any number, in this language
        self.value.setMinimumWidth(max(metrics.horizontalAdvance(t) for t in (tr("app.controls.computed"), "0.00")) + 4)
        self.show(getattr(self.dock.state.knobs, self.spec.field))


TOKENS_MAX = 64  # the engine's limit (compute.engine.MAX_NEW_TOKENS)
UNTIL_SENTENCE_END = 0  # the spin box's lowest value: generate until '.' or a newline (app/engine/worker.py)


class _TokensRow:
    """'Tokens to generate': a spin box 1-64 whose lowest value (0) reads 'until the end of the sentence'.
    A change goes to the window (MainWindow.set_tokens: remembered, the prompt runs again)."""

    def __init__(self, dock: "ControlsDock", grid: QGridLayout, row: int):
        self.dock = dock
        self.name = QLabel()
        self.spin = QSpinBox()
        self.spin.setObjectName("tokens_spin")
        self.spin.setRange(UNTIL_SENTENCE_END, TOKENS_MAX)
        self.spin.setKeyboardTracking(False)  # typing "12" runs once, not for "1" then "12"
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet(f"color: {css('note')}; font-size: 11px;")
        grid.addWidget(self.name, 2 * row, 0)
        grid.addWidget(self.spin, 2 * row, 1, 1, 3)
        grid.addWidget(self.hint, 2 * row + 1, 0, 1, 4)
        self._updating = False
        self.spin.valueChanged.connect(self._changed)

    def _window(self):
        w = self.dock.parent()
        return w if hasattr(w, "set_tokens") and hasattr(w, "engine") else None

    def show(self) -> None:
        """The value the engine runs with (a view file may have changed it)."""
        w = self._window()
        if w is not None and not self.spin.hasFocus():
            self._updating = True
            self.spin.setValue(int(w.engine.max_new_tokens))
            self._updating = False

    @guarded
    def _changed(self, value: int) -> None:
        w = self._window()
        if not self._updating and w is not None:
            w.set_tokens(value)

    def retranslate(self) -> None:
        self.name.setText(tr("usability.tokens"))
        self.spin.setSpecialValueText(tr("usability.tokens.sentence"))
        self.spin.setToolTip(tr("usability.tokens.tip"))
        self.hint.setText(tr("usability.tokens.hint", max=TOKENS_MAX))
        self.show()


class ControlsDock(QDockWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("ControlsDock")
        self.state = state
        body = QWidget(self)
        outer = QVBoxLayout(body)
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(2)
        grid.setColumnStretch(1, 1)
        self.rows = {spec.field: _KnobRow(spec, self, grid, i) for i, spec in enumerate(KNOBS)}
        self.tokens = _TokensRow(self, grid, len(KNOBS))
        outer.addLayout(grid)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setObjectName("controls_note")
        outer.addWidget(self.note)
        outer.addStretch(1)
        body.setObjectName("controls_body")
        self.setWidget(scrolled(body))  # a short dock scrolls; the help lines always get their wrapped height
        state.trace_changed.connect(self._sync_from_state)
        state.knobs_requested.connect(self._sync_from_state)  # also knobs set elsewhere (Edit -> Undo)
        state.tokens_changed.connect(guarded(lambda _n: self.tokens.show()))
        state.config_changed.connect(guarded(lambda _cfg: self.retranslate()))  # the hints name the model's KDA layers
        self.retranslate()

    def slider(self, field: str) -> QSlider:
        return self.rows[field].slider

    @guarded
    def _sync_from_state(self, _trace=None) -> None:
        self.tokens.show()
        for field, row in self.rows.items():
            if not row.slider.isSliderDown():
                value = getattr(self.state.knobs, field)
                current = row.spec.from_slider(row.slider.value())
                if value is None or abs(current - value) > 1e-9:
                    row.show(value)

    def retranslate(self) -> None:
        self.setWindowTitle(tr("app.dock.controls"))
        for row in self.rows.values():
            row.retranslate()
        self.tokens.retranslate()
        md = texts.explanation("dock", "controls", i18n.language())
        if md:  # the dock's explanation (with its honesty note), minus its title line
            body = "\n".join(line for line in md.splitlines() if not line.startswith("# "))
            self.note.setTextFormat(Qt.MarkdownText)
            self.note.setText(body.strip())
        else:
            self.note.setTextFormat(Qt.PlainText)
            self.note.setText(tr("app.controls.note"))
