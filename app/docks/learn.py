"""Learn dock (X4, X5): Serving, Harness / XTML, the quality-vs-throughput table, and the quiz.

Quiz links: "exp:<tab>" opens the Experiments dock on that tab, "learn:<tab>" switches this dock's tab,
"block:L<n>/<kind>" selects that layer and block in the scene (AppState.select_layer / select_block).
"""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QDockWidget, QFrame, QHeaderView, QLabel, QScrollArea, QTabWidget,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from app.docks.learn_harness import HarnessPanel
from app.docks.learn_quiz import QuizPanel
from app.docks.experiments_common import demote_headings, fit_table_height, qcolor, scroll_page
from app.docks.learn_serving import ServingPanel, markdown_label
from app.i18n import language, tr
from app.texts import explanation

TABS = ("serving", "harness", "quality", "quiz")
QUALITY_ROWS = 8
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

    def resizeEvent(self, event):  # noqa: N802
        super().resizeEvent(event)
        QTimer.singleShot(0, self._refit)  # wrapped rows change height with the width

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


class LearnDock(QDockWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("LearnDock")
        self.state = state
        self.tabs = QTabWidget()
        self.tabs.setObjectName("learn_tabs")
        self.tabs.setDocumentMode(True)
        self.panels = {"serving": ServingPanel(), "harness": HarnessPanel(), "quality": QualityPanel(),
                       "quiz": QuizPanel()}
        for key in TABS:
            self.tabs.addTab(self.panels[key], "")
        self.setWidget(self.tabs)
        self.panels["quiz"].link_requested.connect(self._quiz_link)
        self.retranslate()

    def show_tab(self, key: str) -> None:
        self.tabs.setCurrentIndex(TABS.index(key))
        self.show()
        self.raise_()

    def _find_dock(self, name: str) -> QDockWidget | None:
        for top in (self.parent(), self.window()):  # the main window this dock belongs to
            if top is None:
                continue
            if top.objectName() == name and isinstance(top, QDockWidget):
                return top
            found = top.findChild(QDockWidget, name)
            if found is not None:
                return found
        return None

    def follow_link(self, link: str) -> bool:
        """Go to what a quiz answer links to; False when the target panel is not in this window."""
        kind, _, target = link.partition(":")
        if kind == "learn":
            self.show_tab(target)
        elif kind == "exp":
            dock = self._find_dock("ExperimentsDock")
            if dock is None or not hasattr(dock, "show_experiment"):
                return False
            dock.show_experiment(target)
        elif kind == "block":
            head, _, _kind = target.partition("/")
            if head.startswith("L") and head[1:].isdigit():
                self.state.select_layer(int(head[1:]) - 1)
            self.state.select_block(target)
        else:
            raise ValueError(f"unknown link {link!r}")
        return True

    def _quiz_link(self, link: str) -> None:
        if not self.follow_link(link):
            self.panels["quiz"].feedback.setText(tr("learn.quiz.no_panel"))

    def retranslate(self) -> None:
        self.setWindowTitle(tr("learn.dock_title"))
        for i, key in enumerate(TABS):
            self.tabs.setTabText(i, tr(f"learn.tab.{key}"))
            self.panels[key].retranslate()
