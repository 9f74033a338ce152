"""The Explain dock's knock-outs: the active set (tokens, blocks, experts, AttnRes sources) as the
view files store it, its list (Delete removes an entry), the tables' knock-out menus, and the before / after
table. A mixin of ExplainDock (app/docks/explain/dock.py), which builds the widgets it uses."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidget, QMenu, QTableWidgetItem

from app.docks.explain.model import ABLATION_MODES, ExplainResult
from app.explain_service import knockout_items
from app.docks.explain.fit import fit_rows, show_page
from app.docks.explain.text import _esc, piece_text, source_text
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.controls import fmt


class _KnockoutList(QListWidget):
    """The active knock-out's entries; Delete / Backspace removes the selected one."""

    def __init__(self, dock):
        super().__init__()
        self._dock = dock

    @guarded
    def keyPressEvent(self, ev):
        if ev.key() in (Qt.Key_Delete, Qt.Key_Backspace) and self.currentRow() >= 0:
            self._dock.remove_knockout(self.currentRow())
            ev.accept()
            return
        super().keyPressEvent(ev)


class KnockoutMixin:
    """The knock-out part of ExplainDock: self._knockout holds the active items, self.mode the ablation mode."""

    def _selected_position(self) -> int | None:
        rows = self.sources.selectionModel().selectedRows() if self.sources.selectionModel() else []
        if not rows or self.result is None:
            return None
        return self.result.sources[rows[0].row()][0]

    @guarded
    def knock_out_selected(self) -> None:
        p = self._selected_position()
        if p is None:
            return
        self._knockout = (("token", p),)
        self._knockouts_changed()

    def knockable_block(self, row: int) -> tuple | None:
        """The knock-out item of a contributions row: a mixer or dense MLP (a block), a routed expert at its
        layer; None for the embedding and the shared experts (no knock-out of their own)."""
        if self.result is None or not 0 <= row < len(self.result.blocks):
            return None
        ly, part, _ = self.result.blocks[row]
        if part in ("mixer", "ffn"):
            return ("block", ly, part)
        if part.startswith("expert "):
            return ("expert", ly, int(part.split()[1]))
        return None

    def _selected_block(self) -> tuple | None:
        rows = self.blocks.selectionModel().selectedRows() if self.blocks.selectionModel() else []
        return self.knockable_block(rows[0].row()) if rows else None

    @guarded
    def knock_out_block(self) -> None:
        item = self._selected_block()
        if item is None:
            return
        self._knockout = (item,)
        self._knockouts_changed()

    # --- knock-outs as view files store them (app/viewfile.py: mode, tokens, blocks, experts; 1-based layers)
    def knockouts(self) -> dict | None:
        """The active knock-out set as a view file's `knockouts` value, or None."""
        if not self._knockout:
            return None
        out = {"mode": ABLATION_MODES[max(0, self.mode.currentIndex())], "tokens": [], "blocks": [], "experts": []}
        sources = [int(item[1]) for item in self._knockout if item[0] == "source"]
        if sources:
            out["sources"] = sources
        for item in self._knockout:
            if item[0] == "token":
                out["tokens"].append(int(item[1]))
            elif item[0] == "block":
                out["blocks"].append([int(item[1]), str(item[2])])
            elif item[0] == "expert":
                out["experts"].append([None if item[1] is None else int(item[1]), int(item[2])])
        return out

    def set_knockouts(self, ko: dict | None) -> None:
        """Apply a view file's (already validated) knock-out set and re-run; None clears it. An expert without a
        layer is knocked out at every MoE layer, as compute.explain reads a bare id."""
        if not ko:
            self._knockout = ()
            self._knockouts_changed()
            return
        items, mode = knockout_items(ko)
        self.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self._knockout = items
        self._knockouts_changed()

    def add_knockout(self, item: tuple, mode: str) -> None:
        """Knock `item` out too (a context menu outside this dock: the 3D view, a token chip) in `mode`, re-run,
        and bring this dock to the front to show the before / after."""
        if mode in ABLATION_MODES:
            self.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self._knockout = tuple(dict.fromkeys(self._knockout + (tuple(item),)))
        self._knockouts_changed()
        self.state.show_dock(self.objectName(), "")

    def remove_knockout(self, index: int) -> None:
        """Take one entry out of the active knock-out (the list's Delete key or its menu)."""
        if 0 <= index < len(self._knockout):
            self._knockout = self._knockout[:index] + self._knockout[index + 1:]
            self._knockouts_changed()

    @guarded
    def _ko_list_menu(self, pos) -> None:
        it = self.ko_list.itemAt(pos)
        if it is None:
            return
        menu = QMenu(self)
        menu.setObjectName("explain_knockout_list_menu")
        row = self.ko_list.row(it)
        menu.addAction(tr("knockout.list.remove"), lambda: self.remove_knockout(row))
        menu.exec(self.ko_list.viewport().mapToGlobal(pos))

    def _fill_ko_list(self) -> None:
        """The active knock-out's entries, one per row."""
        self.ko_list.clear()
        pieces = self.result.pieces if self.result is not None else []
        for it in self._knockout:
            if it[0] == "token":
                piece = pieces[it[1]] if it[1] < len(pieces) else ""
                text = tr("knockout.what.token", position=it[1], piece=piece_text(piece))
            elif it[0] == "source":
                text = source_text(it[1])
            elif it[0] == "block":
                text = tr("explain.ko.what_block", layer=it[1], block=self._part(it[2]))
            elif it[1] is None:
                text = tr("knockout.what.expert_all", n=it[2])
            else:
                text = tr("explain.ko.what_expert", layer=it[1], n=it[2])
            self.ko_list.addItem(text)
        shown = bool(self._knockout)
        self.ko_list.setVisible(shown)
        self.ko_list_title.setVisible(shown)
        self.ko_list.setFixedHeight(min(6, max(1, len(self._knockout))) * (self.ko_list.fontMetrics().height() + 6) + 6)

    def set_knockout_items(self, value: tuple) -> None:
        """Undo / redo (app/history.py): the (items, mode) pair knockouts_changed carried."""
        items, mode = value
        if mode in ABLATION_MODES:
            self.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self._knockout = tuple(items)
        self._knockouts_changed()

    def _knockouts_changed(self) -> None:
        if self._knockout:  # the experiment's result is what the user looks for now: its page, at its top
            show_page(self.pages, "experiments")
        self.state.knockouts_changed.emit((self._knockout, ABLATION_MODES[max(0, self.mode.currentIndex())]))
        self._fill_ko_list()
        self.refresh()

    @guarded
    def restore_knockout(self) -> None:
        """Undo the knock-out: the explanation without it."""
        self._knockout = ()
        self._knockouts_changed()

    @guarded
    def _sources_menu(self, pos) -> None:
        item = self.sources.itemAt(pos)
        if item is None:
            return
        self.sources.selectRow(item.row())
        self._knock_menu(self.sources, pos, self.knock_out_selected)

    @guarded
    def _blocks_menu(self, pos) -> None:
        item = self.blocks.itemAt(pos)
        if item is None or self.knockable_block(item.row()) is None:
            return
        self.blocks.selectRow(item.row())
        self._knock_menu(self.blocks, pos, self.knock_out_block)

    def _knock_menu(self, table, pos, knock) -> None:
        """'Knock out (zero ablation)' / 'Knock out (mean ablation)': the mode the action names, then the re-run."""
        menu = QMenu(self)
        menu.setObjectName("explain_knockout_menu")
        for i, m in enumerate(ABLATION_MODES):
            def act(_checked=False, i=i):
                self.mode.setCurrentIndex(i)
                knock()
            menu.addAction(tr("knockout.menu", mode=tr(f"explain.mode.{m}")), act)
        menu.exec(table.viewport().mapToGlobal(pos))

    @guarded
    def _update_buttons(self) -> None:
        self.knock.setEnabled(self._selected_position() is not None)
        self.knock_block.setEnabled(self._selected_block() is not None)
        self._show_block_words()
        self.restore.setEnabled(bool(self._knockout))

    def _part(self, part: str) -> str:
        if part.startswith("expert "):
            return tr("explain.part.expert", n=part.split()[1])
        return tr(f"explain.part.{part}")

    def _show_knockout(self, res: ExplainResult) -> None:
        ko = res.knockout
        for w in (self.ko_table, self.ko_label, self.restore):
            w.setVisible(ko is not None)
        self.ko_empty.setVisible(ko is None)
        if ko is None:
            self.ko_label.setText("")
            return
        what = []
        for it in ko["items"]:
            if it[0] == "token":
                what.append(tr("explain.ko.what_token", position=it[1], piece=_esc(piece_text(res.pieces[it[1]]))))
            elif it[0] == "source":
                what.append(_esc(source_text(it[1])))
            elif it[0] == "block":
                what.append(tr("explain.ko.what_block", layer=it[1], block=self._part(it[2])))
            elif it[1] is None:
                what.append(tr("knockout.what.expert_all", n=it[2]))
            else:
                what.append(tr("explain.ko.what_expert", layer=it[1], n=it[2]))
        self.ko_label.setText(tr("explain.ko.result.p", tokens=", ".join(what), mode=tr(f"explain.mode.{ko['mode']}"),
                                 before=_esc(piece_text(res.word)), after=_esc(piece_text(ko["word"])),
                                 p=fmt(res.prob), p_after=fmt(ko.get("word_prob_after", 0.0)),
                                 p_word_after=fmt(ko.get("prob_after", 0.0)),
                                 logit=fmt(res.logit, 2), logit_after=fmt(ko["logit_after"], 2)))
        for r in range(5):
            for c, top in enumerate((res.top5, ko["top5"])):
                pc, p = top[r]
                self.ko_table.setItem(r, c, QTableWidgetItem(f"{piece_text(pc)}  {fmt(p)}"))
        fit_rows(self.ko_table)
