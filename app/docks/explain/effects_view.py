"""The Route page's lower part (issue 39.5): a choice of what it shows — the residual patching map
(app/docks/explain/patching_view.py), the heads' or the experts' total effects, or the blocks' direct paths (path
patching) — and the three tables, each number named: the total effect (the share of the answer's margin removed
when that head is zeroed, or that expert removed from the mix, later layers re-run), the words its own output
writes for and against (a direct reading, named so), the direct and every-path shares restored, and under the
paths table a named random-block control line. Filled from ExplainResult.effects (app/engine/explain_effects.py), asked
for only while its table is shown."""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHeaderView, QSizePolicy, QStackedWidget, QTableWidgetItem, QVBoxLayout, QWidget

from app.docks.explain.fit import fit_rows, grow_to_page, header_tooltips, wrapping_table
from app.docks.explain.text import piece_text
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.controls import note_label
from app.widgets.paint import qcolor

VIEWS = ("patching", "heads", "experts", "paths")


class EffectsView(QWidget):
    """The view box, the stack (patching map | heads table | experts table | paths table), the paths table's
    random-block control line and the note naming the numbers;
    `changed` when another view is chosen; `wanted()` the effects parts to ask for."""

    changed = Signal()

    def __init__(self, patch_map, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.view = QComboBox()
        self.view.setObjectName("explain_causal_view")
        self.view.activated.connect(self._chosen)
        lay.addWidget(self.view)
        self.stack = QStackedWidget()
        self.patch_map = patch_map
        self.stack.addWidget(patch_map)
        self.heads = wrapping_table(0, 4, "explain_head_effects", grow=True)
        self.experts = wrapping_table(0, 4, "explain_expert_effects", grow=True)
        self.paths = wrapping_table(0, 4, "explain_path_effects", grow=True)
        for table in (self.heads, self.experts, self.paths):
            table._grow_rows = 3  # noqa: SLF001 - read by fit_rows: the Route page's controls take the rest
            table.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOn)  # its rows wrap to one width, scrolled or not
            table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeToContents)  # the layer: a number
            self.stack.addWidget(table)
        grow_to_page(self.paths)  # from its minimum rows: with its control line the Route page would scroll
        lay.addWidget(self.stack, 1)
        self.control = note_label()  # the paths table's random-block control, shown with that table only
        self.control.setObjectName("explain_paths_control")
        self.control.setTextFormat(Qt.PlainText)
        lay.addWidget(self.control)
        self.note = note_label()
        self.note.setObjectName("explain_effects_note")
        self.note.setTextFormat(Qt.PlainText)
        lay.addWidget(self.note)
        self._res = None
        self._show_page(0)
        self.retranslate()

    def current(self) -> str:
        return VIEWS[max(0, self.view.currentIndex())]

    def wanted(self) -> tuple:
        """The ExplainRequest.effects of the shown view: () for the patching map."""
        return () if self.current() == "patching" else (self.current(),)

    @guarded
    def _chosen(self, _i: int) -> None:
        self._show_page(max(0, self.view.currentIndex()))
        self._fill()
        self.changed.emit()

    def _show_page(self, i: int) -> None:
        """Page i of the stack; the hidden pages ask for no room (a stack is otherwise as tall as its tallest
        page's minimum: the patching map's would make the tables' page scroll)."""
        if not hasattr(self, "_policies"):  # each page's own policy, put back while it is shown
            self._policies = [self.stack.widget(k).sizePolicy() for k in range(self.stack.count())]
        for k in range(self.stack.count()):
            self.stack.widget(k).setSizePolicy(self._policies[k] if k == i else
                                               QSizePolicy(QSizePolicy.Ignored, QSizePolicy.Ignored))
        self.stack.setCurrentIndex(i)
        self.stack.updateGeometry()

    def show_result(self, res) -> None:
        self._res = res
        self._fill()

    def _fill(self) -> None:
        view = self.current()
        self.control.setVisible(view == "paths")
        self.control.setText("")
        self.control.setToolTip("")
        if view == "patching":
            self.note.setText("")
            self.note.hide()
            return
        self.note.show()
        table = {"heads": self.heads, "experts": self.experts, "paths": self.paths}[view]
        eff = getattr(self._res, "effects", {}) if self._res is not None else {}
        rows = eff.get(view)
        if rows is None:
            table.setRowCount(0)
            err = eff.get(f"{view}_error")
            self.note.setText(tr("explain.effects.error", message=err) if err else
                              tr(f"explain.effects.computing{'.paths' if view == 'paths' else ''}"))
            return
        if view == "paths":
            self._fill_paths(rows, eff)
            return
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            if view == "heads":
                layer, head, mixer, value, up, down = row
                who = tr("explain.effects.head", mixer=mixer.upper(), n=head + 1)
            else:
                layer, e, value, up, down = row
                who = tr("explain.effects.shared") if e < 0 else tr("explain.effects.expert", n=e)
            words = tr("explain.effects.words", up=_words(up[:1]), down=_words(down[:1]))  # the full lists: tooltip
            full = tr("explain.effects.words", up=_words(up), down=_words(down))
            for c, text in enumerate((str(layer), who, f"{100 * value:+.0f} %", words)):
                it = QTableWidgetItem(text)
                if c == 3:
                    it.setToolTip(full)
                it.setTextAlignment((Qt.AlignRight if c in (0, 2) else Qt.AlignLeft) | Qt.AlignVCenter)
                if c == 2:
                    it.setForeground(qcolor("good" if value > 0 else "output"))
                table.setItem(r, c, it)
        fit_rows(table)
        QTimer.singleShot(0, table, lambda t=table: fit_rows(t))  # again once laid out at the page's width
        self.note.setText(tr(f"explain.effects.note.{view}"))
        self.note.setToolTip(tr(f"explain.effects.note.{view}.tip"))

    def _fill_paths(self, rows, eff: dict) -> None:
        """The blocks whose direct path to the answer restores most, each also along every path."""
        table = self.paths
        table.setRowCount(len(rows))
        for r, (layer, part, direct, every) in enumerate(rows):
            for c, text in enumerate((str(layer), tr(f"explain.effects.paths.{part}"), f"{100 * direct:+.0f} %",
                                      f"{100 * every:+.0f} %")):
                it = QTableWidgetItem(text)
                it.setTextAlignment((Qt.AlignRight if c != 1 else Qt.AlignLeft) | Qt.AlignVCenter)
                if c >= 2:
                    it.setForeground(qcolor("good" if (direct, every)[c - 2] > 0 else "output"))
                table.setItem(r, c, it)
        fit_rows(table)
        QTimer.singleShot(0, table, lambda t=table: fit_rows(t))
        ctl = eff.get("paths_control")
        if ctl is not None:
            pct = lambda v: f"{100 * v:+.0f}"  # noqa: E731 - as the table's cells
            self.control.setText(tr("explain.effects.paths.control", n=ctl.n, listed=pct(ctl.listed),
                                    random=pct(ctl.random), median=f"{100 * ctl.median:.1f}", seed=ctl.seed))
            self.control.setToolTip(tr("explain.effects.paths.control.tip", blocks=ctl.blocks, seed=ctl.seed))
        self.note.setText(tr("explain.effects.note.paths", corrupted=eff.get("paths_corrupted", "")))
        self.note.setToolTip(tr("explain.effects.note.paths.tip", metric=eff.get("paths_metric", "")))

    def retranslate(self) -> None:
        i = self.view.currentIndex()
        self.view.clear()
        self.view.addItems([tr(f"explain.effects.view.{v}") for v in VIEWS])
        self.view.setCurrentIndex(max(0, i))
        self.view.setToolTip(tr("explain.effects.view.tip"))
        for table, view in ((self.heads, "heads"), (self.experts, "experts"), (self.paths, "paths")):
            table.setHorizontalHeaderLabels([tr(f"explain.effects.{view}.col{c}") for c in range(4)])
            header_tooltips(table)
        self._fill()


def _words(items) -> str:
    return ", ".join(piece_text(p) for p, _v in items)
