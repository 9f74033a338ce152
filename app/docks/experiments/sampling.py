"""Experiment 5 (C4): LM head → temperature / top-p → seeded sample; HTTP streaming where chunk ≠ token."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QListWidget, QPushButton, QSpinBox, QTextEdit, QVBoxLayout)

from app.docks.experiments.common import BarChart, ExperimentPanel
from app.i18n import language, tr
from app.widgets.controls import FloatSlider, fmt, section_label
from app.widgets.paint import qcolor
from compute.teaching import experiments as T
from app.slot_guard import guarded

# Constructed: the 5 candidates (same meaning in both languages) and a streamed answer cut into toy pieces.
CANDIDATES = {"ko": ("컵", "물건", "공", "탁자", "손"), "en": (" cup", " object", " ball", " table", " hand")}
ANSWER = {
    "ko": ("로봇", "은", " 탁자", "에서", " 컵", "을", " 집", "어", " 들", "었", "습니다", ".", " 컵", "은",
           " 이제", " 로봇", "의", " 손", "에", " 있", "습니다", "."),
    "en": ("The", " robot", " picked", " up", " the", " cup", " from", " the", " table", ".", " The", " cup",
           " is", " now", " in", " the", " robot", "'s", " hand", "."),
}
CHUNK_MS = 260


class SamplingPanel(ExperimentPanel):
    def __init__(self, parent=None):
        super().__init__("sampling", "output", parent)
        self.logits_label = QLabel(); self.logits_label.setWordWrap(True)
        self.body.addWidget(self.logits_label)
        self.temperature = FloatSlider(0.0, 2.0, 0.05, 1.0)
        self.temperature.setObjectName("sampling_temperature")
        self.top_p = FloatSlider(0.05, 1.0, 0.05, 0.9)
        self.top_p.setObjectName("sampling_top_p")
        self.body.addWidget(self.temperature)
        self.body.addWidget(self.top_p)
        self.bars_title = section_label()
        self.body.addWidget(self.bars_title)
        self.bars = BarChart(min_height=190)
        self.bars.setObjectName("sampling_bars")
        self.body.addWidget(self.bars)
        self.legend = QLabel(); self.legend.setWordWrap(True)
        self.body.addWidget(self.legend)
        seed_row = QHBoxLayout()
        self.seed_label = QLabel()
        self.seed = QSpinBox(); self.seed.setObjectName("sampling_seed"); self.seed.setRange(0, 9999)
        self.resample = QPushButton(); self.resample.setObjectName("sampling_resample")
        self.sampled = QLabel(); self.sampled.setObjectName("sampling_sampled"); self.sampled.setTextFormat(Qt.RichText)
        seed_row.addWidget(self.seed_label); seed_row.addWidget(self.seed); seed_row.addWidget(self.resample)
        seed_row.addStretch(1)
        self.body.addLayout(seed_row)
        self.sampled.setWordWrap(True)
        self.body.addWidget(self.sampled)

        # --- streaming ---------------------------------------------------------------------------------------
        self.stream_title = section_label()
        self.body.addWidget(self.stream_title)
        self.stream_note = QLabel(); self.stream_note.setWordWrap(True)
        self.body.addWidget(self.stream_note)
        ctl = QHBoxLayout()
        self.play = QPushButton(); self.play.setObjectName("stream_play")
        ctl.addWidget(self.play); ctl.addStretch(1)
        self.body.addLayout(ctl)
        cols = QHBoxLayout()
        left = QVBoxLayout()
        self.screen_label = QLabel()
        self.screen = QTextEdit(); self.screen.setObjectName("stream_screen"); self.screen.setReadOnly(True)
        self.screen.setMinimumHeight(90)
        left.addWidget(self.screen_label); left.addWidget(self.screen)
        right = QVBoxLayout()
        self.log_label = QLabel()
        self.log = QListWidget(); self.log.setObjectName("stream_log"); self.log.setMinimumHeight(90)
        self.log.setWordWrap(True)
        right.addWidget(self.log_label); right.addWidget(self.log)
        cols.addLayout(left, 1); cols.addLayout(right, 1)
        self.body.addLayout(cols)
        self.timer = QTimer(self)
        self.timer.setInterval(CHUNK_MS)
        self.timer.timeout.connect(self._next_chunk)
        self._sent = 0

        self.temperature.valueChanged.connect(self.recompute)
        self.top_p.valueChanged.connect(self.recompute)
        self.seed.valueChanged.connect(self.recompute)
        self.resample.clicked.connect(guarded(lambda: self.seed.setValue(self.seed.value() + 1)))
        self.play.clicked.connect(self.start_stream)
        self.retranslate()

    # --- sampling ------------------------------------------------------------------------------------------
    def probs(self) -> tuple[np.ndarray, np.ndarray]:
        """(before the cut = softmax(logits/T), after top-p renormalisation)."""
        t, p = self.temperature.value(), self.top_p.value()
        return T.temperature_probs(T.SAMPLING_LOGITS, t), T.top_p_probs(T.SAMPLING_LOGITS, t, p)

    def sampled_index(self) -> int:
        return T.sample_index(self.probs()[1], self.seed.value())

    @guarded
    def recompute(self, *_):
        before, after = self.probs()
        names = CANDIDATES[language()]
        idx = self.sampled_index()
        colors = [qcolor("output") if after[i] > 0 else qcolor("weight", 90) for i in range(len(names))]
        self.bars.set_data([n.strip() for n in names], after, colors, ghost=before, vmax=1.0, highlight=idx)
        kept = int((after > 0).sum())
        self.sampled.setText(tr("learn.exp.sampling.sampled", token=f"<b>{names[idx].strip()}</b>", kept=kept,
                                seed=self.seed.value()))

    # --- streaming -----------------------------------------------------------------------------------------
    def chunks(self) -> list[list[int]]:
        return T.chunk_stream(list(ANSWER[language()]), seed=11)

    @guarded
    def start_stream(self):
        self.screen.clear()
        self.log.clear()
        self._sent = 0
        self.timer.start()

    @guarded
    def _next_chunk(self):
        chunks = self.chunks()
        if self._sent >= len(chunks):
            self.timer.stop()
            if self._sent > len(chunks):
                return
            self._sent += 1
            self.log.addItem(tr("learn.exp.sampling.stream_done", chunks=len(chunks), tokens=len(ANSWER[language()])))
            return
        pieces = ANSWER[language()]
        ids = chunks[self._sent]
        text = "".join(pieces[i] for i in ids)
        cursor = self.screen.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        cursor.insertText(text)
        shown = "|".join(pieces[i] for i in ids)
        self.log.addItem(tr("learn.exp.sampling.chunk", n=self._sent + 1, text=text.replace(" ", "␣"),
                            tokens=len(ids), pieces=shown.replace(" ", "␣")))
        self.log.scrollToBottom()
        self._sent += 1

    def retranslate(self):
        if self.timer.isActive() or self._sent:  # the answer text is per language: start the demo afresh
            self.timer.stop()
            self.screen.clear()
            self.log.clear()
            self._sent = 0
        self.retranslate_frame()
        names = CANDIDATES[language()]
        self.logits_label.setText(tr("learn.exp.sampling.logits", pairs=", ".join(
            f"{n.strip()} {fmt(v, 1)}" for n, v in zip(names, T.SAMPLING_LOGITS))))
        self.temperature.setText(tr("learn.exp.sampling.temperature"))
        self.top_p.setText(tr("learn.exp.sampling.top_p"))
        self.bars_title.setText(tr("learn.exp.sampling.bars"))
        self.legend.setText(tr("learn.exp.sampling.legend"))
        self.seed_label.setText(tr("learn.exp.sampling.seed"))
        self.resample.setText(tr("learn.exp.sampling.resample"))
        self.stream_title.setText(tr("learn.exp.sampling.stream_title"))
        self.stream_note.setText(tr("learn.exp.sampling.stream_note"))
        self.play.setText(tr("learn.exp.sampling.play"))
        self.screen_label.setText(tr("learn.exp.sampling.screen"))
        self.log_label.setText(tr("learn.exp.sampling.log"))
        self.recompute()
