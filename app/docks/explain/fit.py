"""The Explain dock's pages and tables as they fit a column: which pages there are (`PAGES`, `show_page`) and
tables whose columns share the width, whose header and cells wrap (rows as high as their text), and whose long
lists take the page's free height (`wrapping_table`, `fit_rows`). Tooltips keep a header's full text."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSizePolicy, QTableWidget, QTabWidget

from app.widgets.controls import fit_table_height
from app.slot_guard import guarded

PAGES = ("answer", "lens", "attention", "route", "direct", "experiments", "side")



def show_page(tabs: QTabWidget, name: str) -> None:
    tabs.setCurrentIndex(PAGES.index(name))
    area = tabs.widget(PAGES.index(name))
    area.verticalScrollBar().setValue(0)  # what the page shows first is at its top


class _RowFitter(QObject):
    """Re-fits a wrapping table's rows when its width changes (a narrower column wraps into more lines)."""

    def __init__(self, table):
        super().__init__(table)
        self._table, self._width = table, -1

    @guarded
    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.Resize and obj.width() != self._width:
            self._width = obj.width()
            fit_rows(self._table)
        return False


def wrapping_table(rows: int, cols: int, name: str, grow: bool = False) -> QTableWidget:
    """A read-only table whose columns share the width and whose cells wrap (rows as high as their text).
    grow: a long list (the sources, the blocks) that takes the page's free height, at least GROW_ROWS rows, and
    scrolls inside beyond it; else the table is as high as its rows."""
    t = QTableWidget(rows, cols)
    t._grow = grow  # noqa: SLF001 - read by fit_rows
    t.setObjectName(name)
    t.setEditTriggers(QAbstractItemView.NoEditTriggers)
    t.setWordWrap(True)
    t.setTextElideMode(Qt.ElideRight)
    t.verticalHeader().setVisible(False)
    t.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
    h = t.horizontalHeader()
    h.setSectionResizeMode(QHeaderView.Stretch)
    h.setDefaultAlignment(Qt.AlignLeft | Qt.AlignVCenter | Qt.TextWordWrap)
    h.setMinimumSectionSize(48)
    t.setHorizontalScrollBarPolicy(Qt.ScrollBarAsNeeded)
    t.setVerticalScrollMode(QAbstractItemView.ScrollPerPixel)
    fitter = _RowFitter(t)
    t.viewport().installEventFilter(fitter)
    t._row_fitter = fitter  # noqa: SLF001 - kept alive with the table
    return t


GROW_ROWS = 5
GROWING_PAGES = ("lens", "attention")  # a plot takes their free height (no stretch below it)


def grow_to_page(plot) -> None:
    """A plot as high as its page lets it be, from its minimum height: its size hint (a graphics view's 480 px)
    is ignored, so that a page asks its scroll area for no more than its minimum."""
    pol = plot.sizePolicy()
    pol.setVerticalPolicy(QSizePolicy.Ignored)
    plot.setSizePolicy(pol)


def fit_rows(table: QTableWidget) -> None:
    """Header and rows to their wrapped text, then the table's height to its rows (a growing table: between
    GROW_ROWS rows and all of them; set once, so that the layout never sees a height in between)."""
    wrap_header(table)
    table.resizeRowsToContents()
    if not getattr(table, "_grow", False) or table.rowCount() <= getattr(table, "_grow_rows", GROW_ROWS):
        fit_table_height(table)
        return
    header = table.horizontalHeader()
    frame = (header.sizeHint().height() if header.isVisible() or not table.isVisible() else 0) + 2 * table.frameWidth() + 2
    vh = table.verticalHeader()
    rows = getattr(table, "_grow_rows", GROW_ROWS)  # a table on a fuller page may start lower
    table.setMinimumHeight(frame + sum(vh.sectionSize(r) for r in range(min(rows, table.rowCount()))))
    table.setMaximumHeight(frame + vh.length())
    table.updateGeometry()


def wrap_header(table: QTableWidget) -> None:
    """Each column header's text broken into lines that fit its column (the header grows to them); the full
    text stays its tooltip."""
    h = table.horizontalHeader()
    fm = h.fontMetrics()
    for c in range(table.columnCount()):
        it = table.horizontalHeaderItem(c)
        if it is None:
            continue
        text = it.toolTip() or it.text().replace("\n", " ")
        width = h.sectionSize(c) - 12
        lines, cur = [], ""
        for word in text.split():
            cand = f"{cur} {word}" if cur else word
            if cur and fm.horizontalAdvance(cand) > width:
                lines.append(cur)
                cur = word
            else:
                cur = cand
        wrapped = "\n".join(lines + [cur])
        if it.text() != wrapped:
            it.setText(wrapped)


def header_tooltips(table: QTableWidget) -> None:
    """Each column header's full text as its tooltip (seen when a narrowed dock elides it)."""
    for c in range(table.columnCount()):
        it = table.horizontalHeaderItem(c)
        if it is not None:
            it.setToolTip(it.text())
