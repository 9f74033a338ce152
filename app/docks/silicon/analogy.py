"""M6: the seed's table mapping an LLM server's parts to factory-automation concepts, with the differences.

Drawn as a rich-text table in a QLabel: it wraps every cell at any dock width without eliding."""
from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.i18n import tr
from app.widgets.controls import note_label
from app.widgets.paint import css, qcolor

ROWS = ("cpu", "hbm", "sm", "tensor")
COLS = ("server", "factory", "difference")


def cell(row: str, col: str) -> str:
    return tr(f"silicon.analogy.{row}.{col}")


class AnalogyTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: bold; font-size: 14px;")
        self.table = QLabel()
        self.table.setObjectName("analogy_table")
        self.table.setTextFormat(Qt.RichText)
        self.table.setWordWrap(True)
        self.table.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.note = note_label()
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.table)
        lay.addWidget(self.note)
        lay.addStretch(1)
        self.retranslate()

    def cells(self) -> list[list[str]]:
        """The table as plain text, rows × (server, factory, difference), in the current language."""
        return [[cell(r, c) for c in COLS] for r in ROWS]

    def retranslate(self) -> None:
        self.title.setText(tr("silicon.analogy.title"))
        accent = qcolor("kda").name()
        head = "".join(f'<th align="left" bgcolor="{css("table_head")}"><font color="{css("table_row")}">{escape(tr(f"silicon.analogy.col_{c}"), quote=False)}'
                       f"</font></th>" for c in COLS)
        body = []
        for i, row in enumerate(self.cells()):
            bg = css("table_row_alt" if i % 2 else "table_row")
            tds = [f'<td bgcolor="{bg}"><b><font color="{accent}">{escape(row[0], quote=False)}</font></b></td>']
            tds += [f'<td bgcolor="{bg}"><font color="{css("table_text")}">{escape(t, quote=False)}</font></td>' for t in row[1:]]
            body.append("<tr>" + "".join(tds) + "</tr>")
        self.table.setText('<table width="100%" cellspacing="0" cellpadding="9" border="1" '
                           f'style="border-color:{css("table_rule")}; border-style:solid;">'
                           f"<tr>{head}</tr>{''.join(body)}</table>")
        self.note.setText(tr("silicon.analogy.note"))
