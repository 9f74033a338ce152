"""The Explain dock's knock-outs (a part the dock owns: `ExplainDock.knockout_panel`): the active set (tokens,
blocks, experts, AttnRes sources) as the view files store it, its list (Delete removes an entry), the tables'
knock-out menus, and the before / after table. It reads the dock's public names only (its widgets, built by
app/docks/explain/pages.py, .result, .state, refresh(), show_block_words())."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidget, QMenu, QTableWidgetItem

from app.docks.explain.model import ABLATION_MODES, ExplainResult
from app.engine.explain_service import knockout_items
from app.docks.explain.fit import fit_rows, show_page
from app.docks.explain.text import _esc, piece_text, source_text
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.controls import fmt


class _KnockoutList(QListWidget):
    """The active knock-out's entries; Delete / Backspace removes the selected one."""

    def __init__(self, panel):
        super().__init__()
        self._panel = panel

    @guarded
    def keyPressEvent(self, ev):
        if ev.key() in (Qt.Key_Delete, Qt.Key_Backspace) and self.currentRow() >= 0:
            self._panel.remove(self.currentRow())
            ev.accept()
            return
        super().keyPressEvent(ev)


class KnockoutPanel:
    """The knock-out part of ExplainDock: `items` holds the active knock-out, the dock's `mode` box its
    ablation mode."""

    def __init__(self, dock):
        self.dock = dock
        self.items: tuple = ()

    def mode_name(self) -> str:
        return ABLATION_MODES[max(0, self.dock.mode.currentIndex())]

    def _selected_position(self) -> int | None:
        d = self.dock
        rows = d.sources.selectionModel().selectedRows() if d.sources.selectionModel() else []
        if not rows or d.result is None:
            return None
        return d.result.sources[rows[0].row()][0]

    @guarded
    def knock_out_selected(self) -> None:
        p = self._selected_position()
        if p is None:
            return
        self.items = (("token", p),)
        self.changed()

    def knockable_block(self, row: int) -> tuple | None:
        """The knock-out item of a contributions row: a mixer or dense MLP (a block), a routed expert at its
        layer; None for the embedding and the shared experts (no knock-out of their own)."""
        res = self.dock.result
        if res is None or not 0 <= row < len(res.blocks):
            return None
        ly, part, _ = res.blocks[row]
        if part in ("mixer", "ffn"):
            return ("block", ly, part)
        if part.startswith("expert "):
            return ("expert", ly, int(part.split()[1]))
        return None

    def _selected_block(self) -> tuple | None:
        blocks = self.dock.blocks
        rows = blocks.selectionModel().selectedRows() if blocks.selectionModel() else []
        return self.knockable_block(rows[0].row()) if rows else None

    @guarded
    def knock_out_block(self) -> None:
        item = self._selected_block()
        if item is None:
            return
        self.items = (item,)
        self.changed()

    # --- knock-outs as view files store them (app/files/viewfile.py: mode, tokens, blocks, experts; 1-based layers)
    def as_view(self) -> dict | None:
        """The active knock-out set as a view file's `knockouts` value, or None."""
        if not self.items:
            return None
        out = {"mode": self.mode_name(), "tokens": [], "blocks": [], "experts": []}
        sources = [int(item[1]) for item in self.items if item[0] == "source"]
        if sources:
            out["sources"] = sources
        for item in self.items:
            if item[0] == "token":
                out["tokens"].append(int(item[1]))
            elif item[0] == "block":
                out["blocks"].append([int(item[1]), str(item[2])])
            elif item[0] == "expert":
                out["experts"].append([None if item[1] is None else int(item[1]), int(item[2])])
        return out

    def set_from_view(self, ko: dict | None) -> None:
        """Apply a view file's (already validated) knock-out set and re-run; None clears it. An expert without a
        layer is knocked out at every MoE layer, as compute.explain reads a bare id."""
        if not ko:
            self.items = ()
            self.changed()
            return
        items, mode = knockout_items(ko)
        self.dock.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self.items = items
        self.changed()

    def add(self, item: tuple, mode: str) -> None:
        """Knock `item` out too (a context menu outside this dock: the 3D view, a token chip) in `mode`, re-run,
        and bring this dock to the front to show the before / after."""
        d = self.dock
        if mode in ABLATION_MODES:
            d.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self.items = tuple(dict.fromkeys(self.items + (tuple(item),)))
        self.changed()
        d.state.show_dock(d.objectName(), "")

    def remove(self, index: int) -> None:
        """Take one entry out of the active knock-out (the list's Delete key or its menu)."""
        if 0 <= index < len(self.items):
            self.items = self.items[:index] + self.items[index + 1:]
            self.changed()

    @guarded
    def list_menu(self, pos) -> None:
        ko_list = self.dock.ko_list
        it = ko_list.itemAt(pos)
        if it is None:
            return
        menu = QMenu(self.dock)
        menu.setObjectName("explain_knockout_list_menu")
        row = ko_list.row(it)
        menu.addAction(tr("knockout.list.remove"), lambda: self.remove(row))
        menu.exec(ko_list.viewport().mapToGlobal(pos))

    def fill_list(self) -> None:
        """The active knock-out's entries, one per row."""
        d = self.dock
        ko_list = d.ko_list
        ko_list.clear()
        pieces = d.result.pieces if d.result is not None else []
        for it in self.items:
            if it[0] == "token":
                piece = pieces[it[1]] if it[1] < len(pieces) else ""
                text = tr("knockout.what.token", position=it[1], piece=piece_text(piece))
            elif it[0] == "source":
                text = source_text(it[1])
            elif it[0] == "block":
                text = tr("explain.ko.what_block", layer=it[1], block=part_name(it[2]))
            elif it[1] is None:
                text = tr("knockout.what.expert_all", n=it[2])
            else:
                text = tr("explain.ko.what_expert", layer=it[1], n=it[2])
            ko_list.addItem(text)
        shown = bool(self.items)
        ko_list.setVisible(shown)
        d.ko_list_title.setVisible(shown)
        ko_list.setFixedHeight(min(6, max(1, len(self.items))) * (ko_list.fontMetrics().height() + 6) + 6)

    def set_items(self, value: tuple) -> None:
        """Undo / redo (app/window/history.py): the (items, mode) pair knockouts_changed carried."""
        items, mode = value
        if mode in ABLATION_MODES:
            self.dock.mode.setCurrentIndex(ABLATION_MODES.index(mode))
        self.items = tuple(items)
        self.changed()

    def changed(self) -> None:
        """The active set changed: its page in front (when not empty), undo's record, the list, a re-run."""
        d = self.dock
        if self.items:  # the experiment's result is what the user looks for now: its page, at its top
            show_page(d.pages, "experiments")
        d.state.knockouts_changed.emit((self.items, self.mode_name()))
        self.fill_list()
        d.refresh()

    @guarded
    def restore_knockout(self) -> None:
        """Undo the knock-out: the explanation without it."""
        self.items = ()
        self.changed()

    @guarded
    def sources_menu(self, pos) -> None:
        sources = self.dock.sources
        item = sources.itemAt(pos)
        if item is None:
            return
        sources.selectRow(item.row())
        self._knock_menu(sources, pos, self.knock_out_selected)

    @guarded
    def blocks_menu(self, pos) -> None:
        blocks = self.dock.blocks
        item = blocks.itemAt(pos)
        if item is None or self.knockable_block(item.row()) is None:
            return
        blocks.selectRow(item.row())
        self._knock_menu(blocks, pos, self.knock_out_block)

    def _knock_menu(self, table, pos, knock) -> None:
        """'Knock out (zero ablation)' / 'Knock out (mean ablation)': the mode the action names, then the re-run."""
        menu = QMenu(self.dock)
        menu.setObjectName("explain_knockout_menu")
        for i, m in enumerate(ABLATION_MODES):
            def act(_checked=False, i=i):
                self.dock.mode.setCurrentIndex(i)
                knock()
            menu.addAction(tr("knockout.menu", mode=tr(f"explain.mode.{m}")), act)
        menu.exec(table.viewport().mapToGlobal(pos))

    @guarded
    def update_buttons(self) -> None:
        d = self.dock
        d.knock.setEnabled(self._selected_position() is not None)
        d.knock_block.setEnabled(self._selected_block() is not None)
        d.show_block_words()
        d.restore.setEnabled(bool(self.items))

    def show(self, res: ExplainResult) -> None:
        """The before / after of the result's knock-out (hidden without one)."""
        d = self.dock
        ko = res.knockout
        for w in (d.ko_table, d.ko_label, d.restore):
            w.setVisible(ko is not None)
        d.ko_empty.setVisible(ko is None)
        if ko is None:
            d.ko_label.setText("")
            return
        what = []
        for it in ko["items"]:
            if it[0] == "token":
                what.append(tr("explain.ko.what_token", position=it[1], piece=_esc(piece_text(res.pieces[it[1]]))))
            elif it[0] == "source":
                what.append(_esc(source_text(it[1])))
            elif it[0] == "block":
                what.append(tr("explain.ko.what_block", layer=it[1], block=part_name(it[2])))
            elif it[1] is None:
                what.append(tr("knockout.what.expert_all", n=it[2]))
            else:
                what.append(tr("explain.ko.what_expert", layer=it[1], n=it[2]))
        d.ko_label.setText(tr("explain.ko.result.p", tokens=", ".join(what), mode=tr(f"explain.mode.{ko['mode']}"),
                              before=_esc(piece_text(res.word)), after=_esc(piece_text(ko["word"])),
                              p=fmt(res.prob), p_after=fmt(ko.get("word_prob_after", 0.0)),
                              p_word_after=fmt(ko.get("prob_after", 0.0)),
                              logit=fmt(res.logit, 2), logit_after=fmt(ko["logit_after"], 2)))
        for r in range(5):
            for c, top in enumerate((res.top5, ko["top5"])):
                pc, p = top[r]
                d.ko_table.setItem(r, c, QTableWidgetItem(f"{piece_text(pc)}  {fmt(p)}"))
        fit_rows(d.ko_table)


def part_name(part: str) -> str:
    """A contributions row's part in words: 'mixer', 'FFN', 'expert 17' ... (the dock's language)."""
    if part.startswith("expert "):
        return tr("explain.part.expert", n=part.split()[1])
    return tr(f"explain.part.{part}")
