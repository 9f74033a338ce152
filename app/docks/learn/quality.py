"""The Learn dock's quality-vs-throughput tab (X5): the seed's 8-row table (technique, main purpose, relation to
answer quality) with the throughput rows marked, and the explanation text."""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHeaderView, QLabel, QScrollArea, QTableWidget, QTableWidgetItem

from app.i18n import language, tr
from app.texts import explanation
from app.widgets.controls import fit_table_height, scroll_page
from app.widgets.markdown import demote_headings, markdown_label
from app.widgets.paint import qcolor

from app.docks.learn import QUALITY_ROWS
from app.slot_guard import guarded
THROUGHPUT_ROWS = (5, 6, 7)  # the seed's third column: speed / consistency, not knowledge or correctness


class QualityPanel(QScrollArea):
    """The seed's 8-row table: technique, main purpose, relation to answer quality."""

    def __init__(self, parent=None):
        super().__init__(parent)
        lay, self.title = scroll_page(self)
        self.table = QTableWidget(QUALITY_ROWS, 3)
        self.table.setObjectName("quality_table")
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        lay.addWidget(self.table)
        self.legend = QLabel(); self.legend.setObjectName("quality_legend"); self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.RichText)
        lay.addWidget(self.legend)
        self.note = markdown_label("")
        lay.addWidget(self.note)
        lay.addStretch(1)

    def _refit(self):
        self.table.resizeRowsToContents()
        for r in range(self.table.rowCount()):
            self.table.setRowHeight(r, self.table.rowHeight(r) + 10)  # breathing room for wrapped text
        fit_table_height(self.table)

    @guarded
    def resizeEvent(self, event):  # noqa: N802
        super().resizeEvent(event)
        QTimer.singleShot(0, self, self._refit)  # wrapped rows change height with the width

    def retranslate(self):
        self.title.setText(tr("learn.quality.title"))
        self.table.setHorizontalHeaderLabels([tr(f"learn.quality.col{c}") for c in range(3)])
        for r in range(QUALITY_ROWS):
            for c in range(3):
                item = QTableWidgetItem(tr(f"learn.quality.r{r}.c{c}"))
                item.setTextAlignment(Qt.AlignLeft | Qt.AlignVCenter)
                if c == 0:
                    f = item.font(); f.setBold(True); item.setFont(f)
                    item.setBackground(qcolor("activation" if r in THROUGHPUT_ROWS else "state", 60))
                self.table.setItem(r, c, item)
        q, t = qcolor("state"), qcolor("activation")
        self.legend.setText(tr("learn.quality.legend", q=f"rgb({q.red()},{q.green()},{q.blue()})",
                               t=f"rgb({t.red()},{t.green()},{t.blue()})"))
        self._refit()
        self.note.setText(demote_headings(explanation("topic", "quality_vs_throughput", language()) or ""))
