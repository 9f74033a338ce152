"""Harness panel (X5): reasoning effort, tool use, verification / retry → the agent's path, and a constructed
XTML example with the structure tokens <|open|>, <|sep|>, <|close|>."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QScrollArea

from app.i18n import language, tr
from app.texts import explanation
from app.widgets.controls import scroll_page, section_label
from app.widgets.markdown import demote_headings, markdown_label
from app.widgets.paint import MONO_CSS, qcolor
from app.widgets.safe_text import SafeTextBrowser
from app.slot_guard import guarded

EFFORTS = ("low", "medium", "high")
OPEN, SEP, CLOSE = "<|open|>", "<|sep|>", "<|close|>"


def xtml_segments(effort: str, tools: bool, verify: bool) -> list[tuple[str, str]]:
    """The constructed example as (channel, body) segments in order: think, [tool_call, tool_result],
    [verify (+ retry)], answer. Bodies are i18n keys' texts; the structure is what matters."""
    n_think = {"low": 1, "medium": 2, "high": 3}[effort]
    segs = [("think", " ".join(tr(f"learn.harness.x.think{i}") for i in range(1, n_think + 1)))]
    if tools:
        segs += [("tool_call", tr("learn.harness.x.call")), ("tool_result", tr("learn.harness.x.result"))]
        if verify:
            segs += [("think", tr("learn.harness.x.check_fail")), ("tool_call", tr("learn.harness.x.call2")),
                     ("tool_result", tr("learn.harness.x.result2"))]
    elif verify:
        segs += [("think", tr("learn.harness.x.self_check"))]
    segs.append(("answer", tr("learn.harness.x.answer_tool" if tools else "learn.harness.x.answer")))
    return segs


class HarnessPanel(QScrollArea):
    def __init__(self, parent=None):
        super().__init__(parent)
        lay, self.title = scroll_page(self)
        self.intro = markdown_label("")
        lay.addWidget(self.intro)
        self.config_title = section_label()
        lay.addWidget(self.config_title)
        row = QHBoxLayout()
        self.effort_label = QLabel()
        self.effort = QComboBox(); self.effort.setObjectName("harness_effort")
        for e in EFFORTS:
            self.effort.addItem("", e)
        self.effort.setCurrentIndex(1)
        self.tools = QCheckBox(); self.tools.setObjectName("harness_tools"); self.tools.setChecked(True)
        self.verify = QCheckBox(); self.verify.setObjectName("harness_verify"); self.verify.setChecked(True)
        row.addWidget(self.effort_label); row.addWidget(self.effort); row.addStretch(1)
        lay.addLayout(row)
        row2 = QHBoxLayout()
        row2.addWidget(self.tools); row2.addWidget(self.verify); row2.addStretch(1)
        lay.addLayout(row2)
        self.path = QLabel(); self.path.setObjectName("harness_path"); self.path.setWordWrap(True)
        self.path.setTextFormat(Qt.RichText)
        lay.addWidget(self.path)
        self.xtml_title = section_label()
        lay.addWidget(self.xtml_title)
        self.xtml = SafeTextBrowser(); self.xtml.setObjectName("harness_xtml")  # loads no resource; self.xtml.setMinimumHeight(200)
        lay.addWidget(self.xtml)
        self.xtml_note = markdown_label("")
        lay.addWidget(self.xtml_note)
        lay.addStretch(1)
        self.effort.currentIndexChanged.connect(self.recompute)
        self.tools.toggled.connect(self.recompute)
        self.verify.toggled.connect(self.recompute)

    def segments(self) -> list[tuple[str, str]]:
        return xtml_segments(self.effort.currentData(), self.tools.isChecked(), self.verify.isChecked())

    @guarded
    def recompute(self, *_):
        segs = self.segments()
        chips = [tr("learn.harness.step.request")] + [tr(f"learn.harness.step.{ch}") for ch, _ in segs]
        self.path.setText(" → ".join(f"<span style='white-space:nowrap'>[{c}]</span>" for c in chips))
        tok = qcolor("mla")
        style = (f"background-color: rgba({tok.red()},{tok.green()},{tok.blue()},70); font-weight: bold;"
                 f" {MONO_CSS}; white-space: nowrap;")
        chan = qcolor("output")
        parts = []
        for ch, body in segs:
            parts.append(f"<span style='{style}'>{html.escape(OPEN)}</span>"
                         f"<span style='color: rgb({chan.red()},{chan.green()},{chan.blue()}); font-weight:bold'>{ch}</span>"
                         f"<span style='{style}'>{html.escape(SEP)}</span>{html.escape(body)}"
                         f"<span style='{style}'>{html.escape(CLOSE)}</span>")
        self.xtml.setHtml("<p style='line-height:150%'>" + "<br>".join(parts) + "</p>")

    def retranslate(self):
        lang = language()
        self.title.setText(tr("learn.harness.title"))
        self.intro.setText(demote_headings(explanation("topic", "harness", lang) or ""))
        self.config_title.setText(tr("learn.harness.config"))
        self.effort_label.setText(tr("learn.harness.effort"))
        for i, e in enumerate(EFFORTS):
            self.effort.setItemText(i, tr(f"learn.harness.effort.{e}"))
        self.tools.setText(tr("learn.harness.tools"))
        self.verify.setText(tr("learn.harness.verify"))
        self.xtml_title.setText(tr("learn.harness.xtml_title"))
        self.xtml_note.setText(demote_headings(explanation("topic", "xtml", lang) or ""))
        self.recompute()
