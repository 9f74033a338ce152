"""Experiment 1 (C6): string → UTF-8 bytes → toy pieces + IDs → embedding rows, with K3's real sizes computed."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QStyledItemDelegate,
                               QTableWidget, QTableWidgetItem)

from app.docks.deferred import DeferredRefreshMixin
from app.docks.experiments.common import ExperimentPanel
from app.i18n import tr
from app.widgets.controls import fit_table_height, fmt, section_label
from app.widgets.paint import css, mono_font
from app.widgets.safe_text import rich_tr
from compute.teaching import experiments as T
from compute.language.tokenizer import ToyTokenizer
from scene.palette import diverging
from app.slot_guard import guarded

MAX_CHARS = 200
ROW_WIDTH = 8  # toy embedding width shown


def embedding_rows(tokens: list[tuple[str, int]], text: str, trace) -> list[tuple[np.ndarray, str]]:
    """(row [<= 8], source) per token. Sources: "trace" = the engine's actual input row when `text` is the traced
    prompt; "table" = the engine's toy embedding table row for a toy-vocab piece; "seeded" = a numpy-seeded row
    (the engine also seeds rows for pieces outside its toy vocabulary, with its own generator)."""
    if trace is not None and trace.passes:
        emb = np.asarray(trace.passes[0].embedding)
        if text == trace.text and len(emb) == len(tokens) == trace.prompt_len:
            return [(emb[i, :ROW_WIDTH], "trace") for i in range(len(tokens))]
        table = np.asarray(trace.weights_global.get("embedding")) if trace.weights_global else None
        index = {tid: r for r, (_p, tid) in enumerate(trace.vocab)}
    else:
        table, index = None, {}
    out = []
    for _piece, tid in tokens:
        if table is not None and tid in index:
            out.append((table[index[tid], :ROW_WIDTH], "table"))
        else:
            out.append((T.toy_embedding_row(tid, ROW_WIDTH), "seeded"))
    return out


ROW_ROLE = Qt.UserRole + 1  # item data: the row's numbers (list of float)


class RowStripDelegate(QStyledItemDelegate):
    """Paints an embedding row as a strip of cells coloured with the app's diverging map (blue < 0 < orange)."""

    def paint(self, painter, option, index):  # noqa: N802
        values = index.data(ROW_ROLE)
        if not values:
            return super().paint(painter, option, index)
        rgba = diverging(np.asarray(values, dtype=np.float64), scale=2.5)
        r = option.rect.adjusted(4, 4, -4, -4)
        w = r.width() / len(values)
        painter.save()
        for i in range(len(values)):
            red, green, blue, _a = (int(round(c * 255)) for c in rgba[i])
            painter.fillRect(QRectF(r.x() + i * w, r.y(), w - 1, r.height()), QColor(red, green, blue))
        painter.restore()

    def sizeHint(self, option, index):  # noqa: N802
        return QSize(100, 22)


class TokenizerPanel(DeferredRefreshMixin, ExperimentPanel):
    """A new trace rebuilds the table only when its prompt's embedding rows changed, and only once the panel can be
    seen (rebuilding it takes the UI thread for ~40 ms, which a slider drag must not pay for a covered tab)."""

    def __init__(self, state=None, parent=None):
        super().__init__("tokenizer", "embedding", parent)
        self.state = state
        self.tokenizer = ToyTokenizer()
        self.input_label = QLabel()
        self.input = QLineEdit("로봇이 컵을 집었다")
        self.input.setObjectName("tok_input")
        self.input.setMaxLength(MAX_CHARS * 2)
        self.error = QLabel(); self.error.setObjectName("tok_error"); self.error.setStyleSheet(f"color: {css('error')};")
        self.error.setVisible(False)
        self.body.addWidget(self.input_label)
        self.body.addWidget(self.input)
        self.body.addWidget(self.error)
        self.bytes_title = section_label()
        self.bytes = QLabel(); self.bytes.setObjectName("tok_bytes"); self.bytes.setWordWrap(True)
        self.bytes.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.bytes.setFont(mono_font(self.bytes.font()))
        self.body.addWidget(self.bytes_title)
        self.body.addWidget(self.bytes)
        self.table_title = section_label()
        self.body.addWidget(self.table_title)
        self.use_prompt = QPushButton(); self.use_prompt.setObjectName("tok_use_prompt")
        row = QHBoxLayout(); row.addWidget(self.use_prompt); row.addStretch(1)
        self.body.addLayout(row)
        self.table = QTableWidget(0, 5)
        self.table.setObjectName("tok_table")
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeToContents)
        hh.setStretchLastSection(True)
        self.table.setMinimumHeight(200)
        self.table.setItemDelegateForColumn(3, RowStripDelegate(self.table))
        self.body.addWidget(self.table)
        self.detail = QLabel(); self.detail.setObjectName("tok_detail"); self.detail.setWordWrap(True)
        self.detail.setTextFormat(Qt.RichText)
        self.body.addWidget(self.detail)
        self.sources = QLabel(); self.sources.setWordWrap(True)
        self.body.addWidget(self.sources)
        self.table.currentCellChanged.connect(guarded(lambda r, *_: self.show_row(r)))
        self.facts_title = section_label()
        self.facts = QLabel(); self.facts.setObjectName("tok_facts"); self.facts.setWordWrap(True)
        self.facts.setTextFormat(Qt.RichText)
        self.body.addWidget(self.facts_title)
        self.body.addWidget(self.facts)
        self.input.textChanged.connect(self.recompute)
        self.use_prompt.clicked.connect(self._use_prompt)
        if state is not None:
            state.trace_changed.connect(self.on_trace)
        self.retranslate()
        self._trace_key = self._key(state.trace if state is not None else None)  # the table shows it already
        self._dirty = False

    @staticmethod
    def _key(trace):
        if trace is None or not trace.passes:
            return None
        return trace.text, np.asarray(trace.passes[0].embedding)

    @guarded
    def on_trace(self, trace) -> None:
        """A new trace changes this panel only through the prompt's embedding rows; a knob change (α, β,
        temperature, ...) leaves them as they are, so the table is not rebuilt on every slider step."""
        key = self._key(trace)
        old = getattr(self, "_trace_key", None)
        if key is not None and old is not None and key[0] == old[0] and np.array_equal(key[1], old[1]):
            return
        self._trace_key = key
        self._weights_texts()
        self.refresh()

    def _weights_texts(self) -> None:
        """The frame's 'constructed' line and the row sources name the weights that run and the toy vocabulary's
        size (the trace's when there is one: trained or random, 117 pieces)."""
        from app import weights_choice

        trace = self.state.trace if self.state is not None else None
        running = weights_choice.weights_of(trace)
        weights = weights_choice.short_name(running, tr) if running else tr("truth.weights.unknown")
        pieces = len(trace.vocab) if trace is not None else len(self.tokenizer.pieces)
        cfg = self._config()  # the shown model's vocabulary and row size (its config), not always K3's
        self.constructed.setText(rich_tr("learn.exp.tokenizer.constructed", pieces=pieces, weights=weights, width=ROW_WIDTH,
                                         hidden=f"{cfg.hidden_size:,}", model=cfg.display_name))
        self.note.setText(rich_tr("learn.exp.tokenizer.note", model=cfg.display_name, vocab=f"{cfg.vocab_size:,}",
                                  hidden=f"{cfg.hidden_size:,}"))  # the model's name is untrusted (its config)
        self.sources.setText(tr("learn.exp.tokenizer.sources", weights=weights, pieces=pieces))
        row = T.embedding_row_bytes(cfg.hidden_size)
        self.facts.setText(rich_tr("learn.exp.tokenizer.facts", model=cfg.display_name, vocab=f"{cfg.vocab_size:,}",
                              hidden=f"{cfg.hidden_size:,}", row=f"{row:,}", kib=fmt(row / 1024, 1),
                              table=fmt(T.embedding_table_bytes(cfg.vocab_size, cfg.hidden_size) / 1e9, 2)))

    def _config(self):
        """The loaded model's config (K3's before the window has one)."""
        cfg = self.state.config if self.state is not None and self.state.config is not None else None
        if cfg is None:
            from compute.config import default_config

            cfg = default_config()
        return cfg

    @guarded
    def refresh(self) -> None:
        """recompute() now, or when the panel is next seen (DeferredRefreshMixin)."""
        if self.postpone_while_hidden():
            return
        self.recompute()

    @guarded
    def _use_prompt(self) -> None:
        trace = self.state.trace if self.state is not None else None
        self.input.setText(trace.text if trace is not None else (self.state.prompt if self.state else ""))

    def rows(self) -> list[tuple[np.ndarray, str]]:
        trace = self.state.trace if self.state is not None else None
        return embedding_rows(self.tokens(), self.input.text(), trace)

    def tokens(self) -> list[tuple[str, int]]:
        return self.tokenizer.encode(self.input.text())

    @guarded
    def recompute(self, *_):
        text = self.input.text()
        problem = ""
        if not text.strip():
            problem = tr("learn.exp.tokenizer.empty")
        elif len(text) > MAX_CHARS:
            problem = tr("learn.exp.tokenizer.too_long", n=MAX_CHARS)
        self.error.setText(problem)
        self.error.setVisible(bool(problem))
        if problem:
            self.table.setRowCount(0)
            self.bytes.setText("")
            self.detail.setText("")
            return
        data = T.utf8_bytes(text)
        self.bytes.setText(tr("learn.exp.tokenizer.bytes", n=len(data), chars=len(text)) + "\n"
                           + " ".join(f"{b:02X}" for b in data))
        toks = self.tokens()
        self.table.setRowCount(len(toks))
        self._rows = self.rows()
        for r, ((piece, tid), (row, source)) in enumerate(zip(toks, self._rows)):
            vals = (piece.replace(" ", "␣"), f"{tid:,}", " ".join(f"{b:02X}" for b in piece.encode("utf-8")),
                    "", tr(f"learn.exp.tokenizer.source.{source}"))
            for c, v in enumerate(vals):
                self.table.setItem(r, c, QTableWidgetItem(v))
            strip = self.table.item(r, 3)
            strip.setData(ROW_ROLE, [float(x) for x in row])
            strip.setToolTip("[" + ", ".join(fmt(x, 3) for x in row) + "]")
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(3, max(self.table.columnWidth(3), 96))
        fit_table_height(self.table)
        self.table.setMaximumHeight(min(self.table.maximumHeight(), 420))
        self.show_row(max(0, self.table.currentRow()))

    def show_row(self, r: int) -> None:
        """Spell out the lookup for one token: piece → ID → W_emb[ID] = row."""
        toks = self.tokens()
        if not 0 <= r < len(toks) or not getattr(self, "_rows", None) or r >= len(self._rows):
            self.detail.setText("")
            return
        piece, tid = toks[r]
        row, source = self._rows[r]
        cfg = self._config()
        self.detail.setText(rich_tr("learn.exp.tokenizer.detail", piece=piece.replace(" ", "␣"), id=f"{tid:,}",
                                    row="[" + ", ".join(fmt(v, 2) for v in row) + "]",
                                    source=tr(f"learn.exp.tokenizer.source.{source}"), model=cfg.display_name,
                                    hidden=f"{cfg.hidden_size:,}", bytes=f"{T.embedding_row_bytes(cfg.hidden_size):,}"))

    def retranslate(self):
        self.retranslate_frame()
        self.input_label.setText(tr("learn.exp.tokenizer.input"))
        self.bytes_title.setText(tr("learn.exp.tokenizer.bytes_title"))
        self.table_title.setText(tr("learn.exp.tokenizer.table"))
        self.table.setHorizontalHeaderLabels([tr("learn.exp.tokenizer.col.piece"), tr("learn.exp.tokenizer.col.id"),
                                              tr("learn.exp.tokenizer.col.bytes"),
                                              tr("learn.exp.tokenizer.col.row", w=ROW_WIDTH),
                                              tr("learn.exp.tokenizer.col.source")])
        self.use_prompt.setText(tr("learn.exp.tokenizer.use_prompt"))
        self._weights_texts()
        self.facts_title.setText(tr("learn.exp.tokenizer.facts_title"))
        self.recompute()
