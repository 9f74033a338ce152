"""M6: the seed's table mapping an LLM server's parts to factory-automation concepts, with the differences."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QAbstractScrollArea, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from app.docks.silicon_common import note_label
from app.i18n import tr

ROWS = ("cpu", "hbm", "sm", "tensor")
COLS = ("server", "factory", "difference")


class AnalogyTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: bold; font-size: 14px;")
        self.table = QTableWidget(len(ROWS), len(COLS))
        self.table.setObjectName("analogy_table")
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setAlternatingRowColors(True)
        self.table.setStyleSheet("QTableWidget { font-size: 13px; } QTableWidget::item { padding: 8px; }"
                                 " QHeaderView::section { font-weight: bold; padding: 6px; }")
        self.table.verticalHeader().setMinimumSectionSize(52)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setSizeAdjustPolicy(QAbstractScrollArea.AdjustToContents)
        for r in range(len(ROWS)):
            for c in range(len(COLS)):
                self.table.setItem(r, c, QTableWidgetItem())
        self.note = note_label()
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.table)
        lay.addWidget(self.note)
        lay.addStretch(1)
        self.retranslate()

    def retranslate(self) -> None:
        self.title.setText(tr("silicon.analogy.title"))
        self.table.setHorizontalHeaderLabels([tr(f"silicon.analogy.col_{c}") for c in COLS])
        for r, row in enumerate(ROWS):
            for c, col in enumerate(COLS):
                item = self.table.item(r, c)
                item.setText(tr(f"silicon.analogy.{row}.{col}"))
                item.setTextAlignment(Qt.AlignLeft | Qt.AlignVCenter)
                if c == 0:
                    f = item.font()
                    f.setBold(True)
                    item.setFont(f)
        self.table.resizeRowsToContents()
        self.note.setText(tr("silicon.analogy.note"))
