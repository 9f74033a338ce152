"""The grid tab of the expert dock: the shown model's routed experts (K3: 896) for the current token and layer,
and the bias slider. The grid's shape, the pickers' ranges and the texts follow the model (config_changed).

Reads the engine's trace only (experts_data.routing). The bias slider sends `expert_bias={e: b}` through
`state.request_knobs`, so the engine re-runs: selection, weights and everything downstream come back in the
next trace; the "why" line compares the expert's biased score with the k-th best of the others.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QSlider,
                               QSpinBox, QVBoxLayout, QWidget)

from app.docks.deferred import DeferredRefreshMixin
from app.docks.experts.model import cutoff_without, model_args, routing, shown_expert
from app import weights_choice
from app.i18n import tr
from app.widgets.controls import ResponsiveBox
from app.widgets.expert_grid import ExpertGridWidget
from app.widgets.paint import css, mono_font
from app.widgets.safe_text import plain
from app.slot_guard import guarded

BIAS_RANGE = 2.0  # slider offset range ±2.0: sigmoid scores lie in (0, 1), so ±1 already moves any expert
BIAS_STEPS_PER_UNIT = 100  # slider resolution 0.01
_DIGITS = str.maketrans("0123456789", "0000000000")


class _NumbersLabel(QLabel):
    """A word-wrapped rich-text label whose text changes only in its numbers on every token / layer.

    QLabel lays its document out three times for sizeHint / minimumSizeHint after each setText (the layout
    asks for them on every change). Those hints depend on the glyph widths only, and digits share one width
    in UI fonts, so they are cached per text with its digits replaced by 0 (and per font): a new token costs
    one layout for the height at the actual width (heightForWidth, never cached) and one for painting. With
    a font whose digits differ in width only the preferred / minimum width could be a few pixels off; the
    height is always exact."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._hints: dict = {}

    def _key(self):
        return self.text().translate(_DIGITS), self.font().key(), self.logicalDpiX()

    def _cached(self) -> tuple:
        key = self._key()
        hit = self._hints.get(key)
        if hit is None:
            if len(self._hints) > 64:
                self._hints.clear()
            hit = self._hints[key] = (super().sizeHint(), super().minimumSizeHint())
        return hit

    def sizeHint(self):  # noqa: N802
        return self._cached()[0]

    def minimumSizeHint(self):  # noqa: N802
        return self._cached()[1]


class GridTab(DeferredRefreshMixin, QWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.current = None  # experts_data.Routing shown now (or None)

        # local pickers: the same selection as everywhere else in the app (they call state.select_*)
        self.layer_label, self.token_label = QLabel(), QLabel()
        self.layer_spin = QSpinBox()
        self.layer_spin.setObjectName("experts.layer_spin")
        self.layer_spin.setRange(1, self._args()["layers"])
        self.layer_spin.setValue(state.layer + 1)
        self.token_combo = QComboBox()
        self.token_combo.setObjectName("experts.token_combo")
        self.token_combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.token_combo.setMinimumContentsLength(10)
        self._combo_trace = None
        self._combo_items: list[str] = []
        pick = QHBoxLayout()
        for w in (self.layer_label, self.layer_spin, self.token_label, self.token_combo):
            pick.addWidget(w)
        pick.addStretch(1)
        self.header = QLabel()
        self.header.setObjectName("experts.header")
        self.header.setWordWrap(True)
        self.grid = ExpertGridWidget(self, n_experts=self._args()["n"], n_shared=self._args()["shared"])
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.hover = QLabel()
        self.hover.setObjectName("experts.hover")
        self.hover.setWordWrap(True)
        self.hover.setMinimumHeight(self.fontMetrics().height() * 2 + 4)
        plain(self.header, self.legend, self.hover)  # they quote the model's name and the token's piece

        # --- bias panel ---
        self.bias_box = QGroupBox()
        self.expert_label = QLabel()
        self.expert_spin = QSpinBox()
        self.expert_spin.setObjectName("experts.bias_expert")
        self.expert_spin.setRange(0, self._args()["n"] - 1)
        self.expert_spin.setValue(shown_expert(state))
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setObjectName("experts.bias_slider")
        self.slider.setRange(-int(BIAS_RANGE * BIAS_STEPS_PER_UNIT), int(BIAS_RANGE * BIAS_STEPS_PER_UNIT))
        self.slider.setPageStep(10)
        self.slider.setMinimumWidth(120)
        self.value_label = QLabel()
        self.value_label.setMinimumWidth(self.fontMetrics().horizontalAdvance("+0.000 ") + 4)
        self.reset_button = QPushButton()
        self.why = _NumbersLabel()
        self.why.setObjectName("experts.why")
        self.why.setWordWrap(True)
        self.why.setTextFormat(Qt.RichText)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setStyleSheet(f"color: {css('caveat')};")
        plain(self.note)
        bl = QGridLayout(self.bias_box)
        bl.addWidget(self.expert_label, 0, 0)
        bl.addWidget(self.expert_spin, 0, 1)
        bl.addWidget(self.slider, 0, 2)
        bl.addWidget(self.value_label, 0, 3)
        bl.addWidget(self.reset_button, 0, 4)
        bl.addWidget(self.why, 1, 0, 1, 5)
        bl.addWidget(self.note, 2, 0, 1, 5)
        bl.setColumnStretch(2, 1)

        self.selected_box = QGroupBox()
        self.selected_list = QLabel()
        self.selected_list.setObjectName("experts.selected_list")
        self.selected_list.setTextFormat(Qt.PlainText)  # plain monospace text: cheap to relayout per token
        self.selected_list.setFont(mono_font(self.selected_list.font()))
        self.selected_list.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.selected_list.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
        self._selected_key = None
        self.shared_line = QLabel()
        self.shared_line.setWordWrap(True)
        self.shared_line.setStyleSheet(f"color: {css('shared')};")
        plain(self.shared_line)
        self.sum_line = QLabel()
        sl = QVBoxLayout(self.selected_box)
        sl.addWidget(self.selected_list)
        sl.addWidget(self.shared_line)
        sl.addWidget(self.sum_line)
        sl.addStretch(1)

        bottom = ResponsiveBox(780)  # side by side in a wide dock, stacked in the default narrow one
        bottom.addWidget(self.bias_box, 3)
        bottom.addWidget(self.selected_box, 2)
        lay = QVBoxLayout(self)
        lay.addLayout(pick)
        lay.addWidget(self.header)
        lay.addWidget(self.grid, 1)
        lay.addWidget(self.legend)
        lay.addWidget(self.hover)
        lay.addWidget(bottom)

        self.grid.set_focus_expert(self.expert_spin.value())
        self.grid.expert_clicked.connect(self._on_cell_clicked)
        self.grid.expert_hovered.connect(self._on_hover)
        self.expert_spin.valueChanged.connect(self._on_expert_spin)
        self.layer_spin.valueChanged.connect(guarded(lambda v: self.state.select_layer(v - 1)))
        self.token_combo.currentIndexChanged.connect(
            guarded(lambda i: self.state.select_token(i) if i >= 0 and not self.token_combo.signalsBlocked() else None))
        self.slider.valueChanged.connect(self._on_slider)
        self.reset_button.clicked.connect(guarded(lambda: self.slider.setValue(0)))
        for sig in (state.trace_changed, state.layer_changed, state.token_changed, state.pass_changed):
            sig.connect(self.refresh)
        state.expert_selected.connect(self._on_expert_selected)
        state.config_changed.connect(self._on_config)
        state.knobs_requested.connect(guarded(lambda _k: self._sync_slider()))  # e.g. another dock reset the knobs
        self._sync_slider()
        self.retranslate()

    # --- state -> view ------------------------------------------------------------------------------
    @guarded
    def refresh(self, *_):
        """Re-read the trace for the current token / layer; deferred while the tab is hidden."""
        if self.postpone_while_hidden():
            return
        st = self.state
        tr_ = st.trace
        layer1 = st.layer + 1
        self._sync_pickers()
        if tr_ is None:
            self.current = None
            self.header.setText(tr("experts.header.no_trace"))
            self.grid.set_message(tr("experts.grid.no_trace"))
        elif not (0 <= st.layer < tr_.n_layers) or tr_.passes[0].layers[st.layer].ffn != "moe":
            self.current = None
            self.header.setText(tr("experts.header.dense", layer=layer1))
            a = self._args()  # a model without any MoE layer: no layer to point to
            self.grid.set_message(tr("experts.grid.dense" if a["has_moe"] else "checks.experts.no_moe", layer=layer1, **a))
        else:
            r = routing(tr_, st.token, st.layer, st.pass_index)
            piece = tr_.tokens[st.token][0] if 0 <= st.token < len(tr_.tokens) else "?"
            if r is None:
                self.current = None
                self.header.setText(tr("experts.header.unprocessed", token=st.token, piece=piece, layer=layer1))
                self.grid.set_message(tr("experts.grid.unprocessed", token=st.token, piece=piece))
            else:
                self.current = r
                kind = tr("experts.pass.prefill") if r.pass_index == 0 else tr("experts.pass.decode", i=r.pass_index)
                self.header.setText(tr("experts.header", layer=layer1, token=st.token, piece=piece, kind=kind,
                                       k=r.top_k, n=r.scores.size, model=self._args()["model"],
                                       weights=weights_choice.short_name(weights_choice.weights_of(tr_), tr)))
                self.grid.set_scores(r.scores, r.bias, r.selected, r.weights)
                self.expert_spin.setMaximum(r.scores.size - 1)
        self._update_selected_list()
        self._update_why()

    def _sync_pickers(self):
        """Layer spin box and token list show the app's selection (without echoing it back)."""
        tr_ = self.state.trace
        self.layer_spin.blockSignals(True)
        if tr_ is not None:
            self.layer_spin.setMaximum(tr_.n_layers)
        self.layer_spin.setValue(self.state.layer + 1)
        self.layer_spin.blockSignals(False)
        self.token_combo.blockSignals(True)
        if tr_ is not self._combo_trace:
            self._combo_trace = tr_
            items = [] if tr_ is None else [f"{i} “{piece}”" for i, (piece, _) in enumerate(tr_.tokens)]
            if items != self._combo_items:  # a knob change usually keeps the tokens: keep the list then
                self._combo_items = items
                self.token_combo.clear()
                self.token_combo.addItems(items)
        if 0 <= self.state.token < self.token_combo.count():
            self.token_combo.setCurrentIndex(self.state.token)
        self.token_combo.blockSignals(False)

    def _update_selected_list(self):
        r = self.current
        if r is None:
            self._set_selected_text(tr("experts.selected.none"))
            self.sum_line.setText("")
            return
        order = np.argsort(-r.weights, kind="stable")
        cells = [f"E{int(r.selected[i]):<4d}{r.weights[i]:.3f}" for i in order]
        self._set_selected_text("\n".join("   ".join(cells[j:j + 4]) for j in range(0, len(cells), 4)))
        self.sum_line.setText(tr("experts.selected.sum", total=float(r.weights.sum())))

    def _set_selected_text(self, text: str):
        """The list's columns have fixed widths, so its size changes only with the number of experts or the
        font: the label is pinned to that size (a fixed-size widget's text change does not invalidate the
        dock's layouts) and re-pinned when the text's shape (digits aside) changes."""
        label = self.selected_list
        label.setText(text)
        key = (text.translate(_DIGITS), label.font().key(), label.logicalDpiX())
        if key != self._selected_key:
            self._selected_key = key
            label.setFixedSize(label.sizeHint())

    def _update_why(self):
        e = self.expert_spin.value()
        offset_now = self.slider.value() / BIAS_STEPS_PER_UNIT
        self.value_label.setText(f"{offset_now:+.2f}")
        r = self.current
        if r is None:
            self.why.setText(tr("experts.why.none"))
            return
        applied = float(self.state.trace.knobs.expert_bias.get(e, 0.0))
        s, b = float(r.scores[e]), float(r.bias[e])
        cut = cutoff_without(r.biased, e, r.top_k)
        chosen = bool(np.any(r.selected == e))
        if cut is None:  # top-k covers every expert: each is selected whatever its score
            w = float(r.weights[np.nonzero(r.selected == e)[0][0]]) if chosen else 0.0
            self.why.setText(tr("checks.experts.why_all", e=e, s=s, trained=b - applied, offset=applied, sb=s + b,
                                k=r.top_k, n=r.scores.size, w=w))
            return
        rank = int(np.sum(r.biased > r.biased[e])) + 1
        if chosen:
            w = float(r.weights[np.nonzero(r.selected == e)[0][0]])
            verdict = tr("experts.why.in", rank=rank, w=w, margin=s + b - cut)
        else:
            verdict = tr("experts.why.out", rank=rank, need=cut - (s + b))
        self.why.setText(tr("experts.why", e=e, s=s, trained=b - applied, offset=applied, sb=s + b,
                            k=r.top_k, cut=cut, n_other=r.scores.size - 1) + "<br>" + verdict)

    def _sync_slider(self):
        """Show the latest requested offset of the chosen expert (not while the user drags the handle)."""
        if self.slider.isSliderDown():
            return
        e = self.expert_spin.value()
        value = float(self.state.knobs.expert_bias.get(e, 0.0))
        self.slider.blockSignals(True)
        self.slider.setValue(int(round(value * BIAS_STEPS_PER_UNIT)))
        self.slider.blockSignals(False)

    def _args(self) -> dict:
        """The shown model's numbers for the texts and ranges (experts, top-k, shared, layers)."""
        return model_args(self.state.config)

    @guarded
    def _on_config(self, _cfg) -> None:
        """Another model: the grid's shape, the pickers' ranges and every text follow it."""
        a = self._args()
        self.grid.set_shape(a["n"], a["shared"])
        self.layer_spin.blockSignals(True)
        self.layer_spin.setMaximum(a["layers"])
        self.layer_spin.blockSignals(False)
        expert = shown_expert(self.state)  # the state's, else this model's default: read before the clamp below
        self.expert_spin.blockSignals(True)  # a clamp to the last expert must not select that expert
        self.expert_spin.setMaximum(a["n"] - 1)
        self.expert_spin.blockSignals(False)
        self.expert_spin.setValue(expert)  # valueChanged: grid focus, slider, state
        self.retranslate()

    # --- view -> state ------------------------------------------------------------------------------
    @guarded
    def _on_slider(self, value: int):
        e = self.expert_spin.value()
        offsets = dict(self.state.knobs.expert_bias)
        b = value / BIAS_STEPS_PER_UNIT
        if value == 0:
            offsets.pop(e, None)
        else:
            offsets[e] = b
        self.value_label.setText(f"{b:+.2f}")
        self.state.request_knobs(expert_bias=offsets)

    @guarded
    def _on_expert_spin(self, e: int):
        self.grid.set_focus_expert(e)
        self._sync_slider()
        self._update_why()
        if self.state.expert != e:
            self.state.select_expert(e)

    @guarded
    def _on_expert_selected(self, e: int):
        if 0 <= e <= self.expert_spin.maximum() and e != self.expert_spin.value():
            self.expert_spin.setValue(e)

    @guarded
    def _on_cell_clicked(self, e: int):
        self.state.select_expert(e)

    @guarded
    def _on_hover(self, e: int):
        self.hover.setText(self.grid.hover_text(e) if e >= 0 else tr("experts.hover.hint"))

    def retranslate(self):
        self.layer_label.setText(tr("experts.pick.layer"))
        self.token_label.setText(tr("experts.pick.token"))
        self.bias_box.setTitle(tr("experts.bias.title"))
        self.expert_label.setText(tr("experts.bias.expert"))
        self.reset_button.setText(tr("experts.bias.reset"))
        a = self._args()
        self.note.setText(tr("experts.bias.note", **a))
        self.selected_box.setTitle(tr("experts.selected.title"))
        self.shared_line.setText(tr("experts.selected.shared_line", **a))
        self.legend.setText(tr("experts.grid.legend", **a))
        self.hover.setText(tr("experts.hover.hint"))
        self.refresh()
