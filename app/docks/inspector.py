"""Inspector dock (S5, S6): what the selected block is, its formula, real K3 and toy shapes, live values, and
"follow one number" — x · W[:, j] = y_j written out term by term, summed before rounding.

Listens to AppState only: block_selected, cell_selected (row = drawn grid row, as the scene reports it),
config_changed, trace/pass/token changes, and language_changed (it retranslates itself, so the main window
leaves it alone: `retranslates_itself`).
"""
from __future__ import annotations

import html
import re

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (QDockWidget, QGroupBox, QLabel, QScrollArea, QTableWidget, QTableWidgetItem,
                               QTextBrowser, QVBoxLayout, QWidget)

from app import i18n, player, texts, weights_choice
from app.i18n import tr
from app.state import AppState
from app.widgets.paint import mono_html, qcolor
from app.widgets.safe_text import SafeTextBrowser, md_args, plain
from compute.config import default_config
from scene import block_kinds, palette
from scene.block_kinds import formula_key, label_key
from scene.layout import ModelDims, _k3_shapes, token_rows
from scene.steps import fill
from scene.tooltips import model_args
from app.slot_guard import guarded

MAX_ROWS_SHOWN, MAX_COLS_SHOWN = 8, 12
MAX_ATTENTION_WORDS = 24  # the attention list shows the last positions (a long prompt would fill the panel)


def parse_block_id(block_id: str) -> tuple[int, str, str]:
    """"L37/kda.q_proj/W" -> (37, "kda.q_proj", "weight"); "lm_head" -> (0, "lm_head", "tensor")."""
    parts = block_id.split("/")
    layer = 0
    if parts[0].startswith("L") and parts[0][1:].isdigit():
        layer = int(parts[0][1:])
        parts = parts[1:]
    kind = parts[0] if parts else block_id
    part = "tensor"
    if len(parts) > 1:
        part = {"W": "weight", "E": "shared_experts", "dense": "marker"}.get(parts[1], parts[1])
    if kind == "stack.layer":
        part = "slab"
    return layer, kind, part


def follow_one_number(trace, layer: int, kind: str, position: int, col: int):
    """y[position, col] of the linear block `kind` of 1-based `layer`, written out.

    Returns (terms, total, engine_value): terms = [(i, x_i, W_ij, x_i*W_ij)], total = sum in float64 before
    any rounding, engine_value = the engine's y from the trace. None when the position was not processed."""
    src = block_kinds.TABLE[kind].linear_in  # the block-kind table's matmul input (compute.trace.LINEAR_INPUTS)
    l0 = layer - 1
    for ps in trace.passes:
        hit = np.nonzero(np.asarray(ps.positions) == position)[0]
        if hit.size:
            r = int(hit[0])
            tens = ps.layers[l0].tensors
            x = np.asarray(tens[src], np.float64)[r]
            W = np.asarray(trace.weights[l0][kind], np.float64)
            y = float(np.asarray(tens[kind], np.float64)[r, col])
            terms = [(i, float(x[i]), float(W[i, col]), float(x[i] * W[i, col])) for i in range(len(x))]
            total = float(np.sum(x * W[:, col]))
            return terms, total, y
    return None


_K3_SIZE_LINE = re.compile(r"^\*\*(Real K3 size|실제 K3 크기):\*\*.*$", re.M)


def _real_size_of(md: str, model: str, shape: str) -> str:
    """A block text's "**Real K3 size:** …" paragraph (K3's numbers) replaced, for another model, by that model's
    size of the block (its config's, as the meta line shows it), or "—" when the model has no such block."""
    return _K3_SIZE_LINE.sub(lambda _m: tr("truth.inspector.real_size", model=model, shape=shape or "—"), md)


WHAT_MIN_HEIGHT = 60
WHAT_MAX_SHARE = 0.6  # of the dock's height: the values table keeps room under it


class InspectorDock(QDockWidget):
    retranslates_itself = True  # follows state.language_changed; the main window must not call it again

    def __init__(self, state: AppState, parent=None):
        super().__init__(parent)
        self.setObjectName("inspectorDock")
        self.state = state
        self.block_id: str | None = None
        self.cell: tuple[str, int, int] | None = None
        self.config = state.config

        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(8, 8, 8, 8)
        self.name_label = QLabel()
        self.name_label.setObjectName("inspector_name")
        f = self.name_label.font()
        f.setPointSizeF(f.pointSizeF() * 1.35)
        f.setBold(True)
        self.name_label.setFont(f)
        self.name_label.setWordWrap(True)
        self.meta_label = QLabel()
        self.meta_label.setObjectName("inspector_meta")
        self.meta_label.setWordWrap(True)
        self.meta_label.setTextFormat(Qt.RichText)
        self.what = SafeTextBrowser()  # Markdown naming the model: its arguments are escaped (md_args)
        self.what.setObjectName("inspector_what")
        self.what.setOpenExternalLinks(False)
        self.what.setMinimumHeight(WHAT_MIN_HEIGHT)
        # the explanation box is as tall as its text (up to most of the dock), not a fixed 110 px that scrolled
        # while the lower half of the dock stayed empty
        self.what.document().documentLayout().documentSizeChanged.connect(self._fit_what)
        self.formula_label = QLabel()
        self.formula_label.setObjectName("inspector_formula")
        self.formula_label.setWordWrap(True)
        self.formula_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.Monospace)
        self.formula_label.setFont(mono)
        self.values_title = QLabel()
        self.values_title.setObjectName("inspector_values_title")
        self.values_note = QLabel()
        self.values_note.setWordWrap(True)
        self.values_note.setObjectName("inspector_values_note")
        plain(self.name_label, self.formula_label, self.values_note)  # they quote the model's name, a view's block
        self.table = QTableWidget()
        self.table.setObjectName("inspector_values")
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setMinimumHeight(150)
        self.follow_box = QGroupBox()
        self.follow_box.setObjectName("inspector_follow")
        fl = QVBoxLayout(self.follow_box)
        self.follow_label = QLabel()
        self.follow_label.setObjectName("inspector_follow_text")
        self.follow_label.setWordWrap(True)
        self.follow_label.setTextFormat(Qt.RichText)
        self.follow_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        fl.addWidget(self.follow_label)
        self.attention_label = QLabel()  # MLA blocks: what the pass's last (decode) token attends to, as words
        self.attention_label.setObjectName("inspector_attention")
        self.attention_label.setWordWrap(True)
        self.attention_label.setTextFormat(Qt.RichText)
        for w in (self.name_label, self.meta_label, self.what, self.formula_label, self.values_title,
                  self.values_note, self.attention_label, self.table, self.follow_box):
            lay.addWidget(w)
        lay.addStretch(1)
        scroll = QScrollArea()
        scroll.setFrameShape(QScrollArea.NoFrame)  # no empty box around the hint before a pick
        scroll.setWidgetResizable(True)
        scroll.setWidget(body)
        self.setWidget(scroll)

        state.block_selected.connect(self.show_block)
        state.cell_selected.connect(self.show_cell)
        state.config_changed.connect(self.set_config)
        # bound methods (not lambdas): Qt drops these connections when the dock is destroyed
        state.trace_changed.connect(self._on_change)
        state.pass_changed.connect(self._on_change)
        state.token_changed.connect(self._on_change)
        state.language_changed.connect(self._on_language)
        self.retranslate()

    @guarded
    def _on_change(self, *_args) -> None:
        self.refresh()

    @guarded
    def _on_language(self, *_args) -> None:
        self.retranslate()

    # ---------------------------------------------------------------- public
    @guarded
    def set_config(self, cfg) -> None:
        self.config = cfg
        self.refresh()

    @guarded
    def show_block(self, block_id: str) -> None:
        if block_id != self.block_id:
            self.cell = None
        self.block_id = block_id or None
        self.refresh()

    @guarded
    def show_cell(self, block_id: str, row: int, col: int) -> None:
        """A cell of a block was clicked in the scene (row = drawn grid row)."""
        self.block_id = block_id
        self.cell = (block_id, int(row), int(col))
        self.refresh()

    @guarded
    def _fit_what(self, *_):
        """Height of the explanation box: its document's height, between WHAT_MIN_HEIGHT and WHAT_MAX_SHARE of
        the dock (longer texts scroll inside it)."""
        doc_h = self.what.document().size().height()
        frame = 2 * self.what.frameWidth() + 6
        cap = max(WHAT_MIN_HEIGHT, int(self.height() * WHAT_MAX_SHARE))
        want = int(min(cap, max(WHAT_MIN_HEIGHT, doc_h + frame)))
        if self.what.height() != want or self.what.maximumHeight() != want:
            self.what.setFixedHeight(want)
            self.what.setMinimumHeight(want)

    @guarded
    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._fit_what()

    def retranslate(self) -> None:
        self.setWindowTitle(tr("inspector.title"))
        self.values_title.setText(f"<b>{html.escape(tr('inspector.values'))}</b>")
        self.follow_box.setTitle(tr("inspector.follow"))
        self.refresh()

    # ---------------------------------------------------------------- content
    def _show_details(self, shown: bool) -> None:
        """Until a block is picked only the hint shows: no empty text, table or follow boxes."""
        for w in (self.meta_label, self.what, self.formula_label, self.values_title, self.values_note, self.table,
                  self.follow_box):
            w.setVisible(shown)
        if not shown:
            self.attention_label.hide()

    @guarded
    def refresh(self) -> None:
        self._show_details(bool(self.block_id))
        if not self.block_id:
            self.name_label.setText(tr("inspector.empty"))
            self.meta_label.setText("")
            self.what.setPlainText("")
            self.formula_label.setText("")
            self.values_note.setText("")
            self.table.clear()
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.follow_label.setText(html.escape(tr("inspector.follow_hint")))
            return
        layer, kind, part = parse_block_id(self.block_id)
        dims = ModelDims.from_config(self.config)
        n_layers = self._n_layers(dims)
        if layer > n_layers:  # a block id from a view file or an old selection: say so, index nothing
            self._show_details(False)
            self.name_label.setText(tr("guard.inspector.no_layer", block=self.block_id[:80], layer=layer,
                                       n=n_layers))
            return
        lang = i18n.language()
        name = tr(label_key(kind, dims))
        if part == "weight":
            name += " · W"
        if part == "slab" and layer:  # (parse_block_id: a layer's slab)
            name = f"{name} {layer}"
        self.name_label.setText(name)
        k3 = _k3_shapes(dims, max(layer - 1, 0)).get(kind, "")
        if part == "slab" and layer:
            k3 = f"{dims.mixers[layer - 1].upper()} + {dims.ffns[layer - 1]}"
        vals, note = self._values(layer, kind, part)
        toy = " × ".join(str(v) for v in vals.shape) if vals is not None else "—"
        where = tr("inspector.layer", layer=layer) if layer else tr("inspector.global")
        self.meta_label.setText(
            f"{html.escape(where)}<br><b>{html.escape(tr('inspector.k3_shape', model=dims.display_name))}:</b> {html.escape(k3 or '—')}"
            f"<br><b>{html.escape(tr('inspector.toy_shape'))}:</b> {html.escape(toy)}")
        args = model_args(dims)  # the texts name the shown model's numbers, not K3's
        # a block this model builds differently (W_q without query compression) has its own short text
        md = texts.explanation("block", kind, lang) if label_key(kind, dims) == f"block.{kind}" else None
        if md and dims.name != default_config().name:
            md = _real_size_of(md, dims.display_name, k3)
        if md:
            self.what.setMarkdown(fill(md, md_args(args)))
        else:
            self.what.setPlainText(fill(tr(label_key(kind, dims).replace("block.", "scene.desc.", 1)), args))
        formula = formula_key(kind, dims)
        self.formula_label.setText(f"{tr('inspector.formula')}:  {fill(tr(formula), args)}"
                                   if i18n.table().get(formula) else "")
        self._fill_table(vals)
        running = weights_choice.weights_of(self.state.trace)
        if running:  # whose numbers these are: the toy's, with which weights
            note = f"{note} {tr('truth.numbers', weights=weights_choice.short_name(running, tr), model=dims.display_name)}"
        self.values_note.setText(note)
        self._fill_attention(layer, kind)
        self._fill_follow(layer, kind, part)

    def _n_layers(self, dims) -> int:
        """The layers a block id may name: the model's, and no more than the shown trace holds."""
        n = len(dims.mixers)
        trace = self.state.trace
        if trace is not None and trace.passes:
            n = min(n, len(trace.passes[0].layers), len(trace.weights))
        return n

    def _fill_attention(self, layer: int, kind: str) -> None:
        """For an MLA block: the attention of the current pass's last token over the tokens, as words."""
        trace = self.state.trace
        e = block_kinds.entry(kind)
        if trace is None or not layer or e is None or e.family != "mla" \
                or trace.passes[0].layers[layer - 1].mixer != "mla":
            self.attention_label.hide()
            return
        pi = min(self.state.pass_index, len(trace.passes) - 1)
        position, words, heads = player.attention_over_tokens(trace, pi, layer - 1)
        token = trace.tokens[position][0]
        title = tr("weights.attention.title", token=repr(token), layer=layer, heads=heads)
        top = max(w for _, w in words) or 1.0
        rows = [f"<tr><td>{mono_html(html.escape(repr(p)))}</td><td>{'█' * max(1, round(12 * w / top))}</td>"
                f"<td>{w:.3f}</td></tr>" for p, w in words[-MAX_ATTENTION_WORDS:]]
        note = "" if pi > 0 else f"<br><i>{html.escape(tr('weights.attention.none'))}</i>"
        self.attention_label.setText(f"{html.escape(title)}<table>{''.join(rows)}</table>{note}")
        self.attention_label.show()

    def _pass_name(self, i: int) -> str:
        return tr("inspector.pass.prefill") if i == 0 else tr("inspector.pass.decode", i=i)

    def _values(self, layer: int, kind: str, part: str):
        trace = self.state.trace
        if trace is None:
            return None, tr("inspector.no_trace")
        pi = min(self.state.pass_index, len(trace.passes) - 1)
        ps = trace.passes[pi]
        axes = block_kinds.axes_key("moe.shared" if part == "shared_experts" else kind)
        if axes is None:
            note = tr("inspector.values_note", pass_name=self._pass_name(pi))
        else:  # what the rows and columns of this kind's tensor really are (scene/block_kinds.py)
            note = tr("inspector.values_axes", rows=tr(axes[0]), cols=tr(axes[1]), pass_name=self._pass_name(pi))
        arr = None
        e = block_kinds.entry(kind)
        source = e.values if e is not None else ""  # where the table says this kind's values are
        if part == "weight" and layer:
            arr = trace.weights[layer - 1].get(kind)
            note = tr("inspector.weight_note", weights=weights_choice.short_name(weights_choice.weights_of(trace), tr))
        elif source == "residual" and layer:  # a layer's slab: the layer's output
            arr = ps.layers[layer - 1].tensors.get("residual")
        elif source == "layer" and layer:
            arr = ps.layers[layer - 1].tensors.get("moe.shared" if part == "shared_experts" else kind)
        elif source == "embedding":
            arr = ps.embedding
        elif source == "final":
            arr = ps.final.get(kind)
        elif source == "probs":
            arr = ps.final.get("probs")
        if arr is None:
            return None, tr("inspector.no_values")
        arr = np.asarray(arr, float)
        return arr, note

    def _fill_table(self, vals) -> None:
        self.table.clear()
        if vals is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            return
        v = vals
        if v.ndim == 1:
            v = v[None]
        elif v.ndim > 2:
            v = v.reshape(-1, v.shape[-1])
        r, c = min(v.shape[0], MAX_ROWS_SHOWN), min(v.shape[1], MAX_COLS_SHOWN)
        self.table.setRowCount(r)
        self.table.setColumnCount(c)
        # 0-based indices, as in the follow-one-number sums and the scene's tooltips
        self.table.setHorizontalHeaderLabels([str(j) for j in range(c)])
        self.table.setVerticalHeaderLabels(self._row_labels(r))
        finite = np.isfinite(v)
        scale = float(np.max(np.abs(v[finite]))) if finite.any() else 1.0
        colours = palette.diverging(np.where(finite, v, 0.0), scale)
        for i in range(r):
            for j in range(c):
                item = QTableWidgetItem("−∞" if v[i, j] == -np.inf else f"{v[i, j]:.3f}")
                rgba = colours[i, j]
                item.setBackground(QBrush(QColor.fromRgbF(float(rgba[0]), float(rgba[1]), float(rgba[2]))))
                item.setForeground(QBrush(qcolor("ink")))
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()

    def _row_labels(self, n: int) -> list[str]:
        """Token position and piece for rows that are tokens of the shown pass, else plain indices."""
        trace = self.state.trace
        labels = [str(i) for i in range(n)]
        if trace is None or not self.block_id:
            return labels
        layer, kind, part = parse_block_id(self.block_id)
        e = block_kinds.entry(kind)
        if part != "tensor" or e is None or e.rows not in ("tokens", "cache"):
            return labels
        ps = trace.passes[min(self.state.pass_index, len(trace.passes) - 1)]
        positions = [int(p) for p in ps.positions]
        if e.rows == "cache":
            positions = list(range(n))  # the cache: one row per position so far
        for i in range(min(n, len(positions))):
            pos = positions[i]
            piece = trace.tokens[pos][0] if pos < len(trace.tokens) else ""
            labels[i] = f"{pos} {piece}".rstrip()
        return labels

    def _fill_follow(self, layer: int, kind: str, part: str) -> None:
        trace = self.state.trace
        if self.cell is None or self.cell[0] != self.block_id or trace is None or not layer:
            self.follow_label.setText(html.escape(tr("inspector.follow_hint")))
            return
        e = block_kinds.entry(kind)
        if e is None or not e.linear_in or part != "tensor":
            self.follow_label.setText(html.escape(tr("inspector.follow_not_linear", name=tr(f"block.{kind}"))))
            return
        _, row, col = self.cell
        rows = token_rows(trace)
        position = rows[row] if row < len(rows) else row
        res = follow_one_number(trace, layer, kind, position, col)
        if res is None:
            self.follow_label.setText(html.escape(tr("inspector.follow_unprocessed", row=position)))
            return
        terms, total, y = res
        piece = trace.tokens[position][0] if position < len(trace.tokens) else ""
        lines = [f"<b>{html.escape(tr('inspector.token', pos=position, piece=piece))}</b>",
                 html.escape(tr("inspector.follow_eq", row=position, col=col)), ""]
        for i, x, w, p in terms:
            lines.append(f"x[{i}] · W[{i},{col}] = {x:+.4f} × {w:+.4f} = <b>{p:+.4f}</b>")
        lines.append("")
        lines.append(f"<b>{html.escape(tr('inspector.follow_sum', total=f'{total:+.10f}'))}</b>")
        lines.append(html.escape(tr("inspector.follow_check", value=f"{y:+.10f}", diff=f"{abs(total - y):.2e}")))
        lines.append(f"<i>{html.escape(tr('inspector.follow_note'))}</i>")
        self.follow_label.setText(mono_html("<br>".join(lines)))
