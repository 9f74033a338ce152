"""The SceneView's pointer handler (a part the view owns: `SceneView.pointer`): picking, hover (with its tooltip),
click, context menu and double-click; the events come from scene/input.py and scene/gl_widget.py. It reads and
sets the view's public state only (.picker, .cam, .gl, .container, .layout, .hovered, .hover_cell, .selected,
.follow, .last_tooltip, .colours, the view's signals, tr(), drawn_trace(), select_block(), frame_block(),
update_outlines())."""
from __future__ import annotations

import html

from PySide6.QtCore import QPoint, QPointF
from PySide6.QtWidgets import QToolTip

from scene import effect_cells
from scene.block_kinds import LINEAR_IN  # y = x @ W kind -> the kind of x
from scene.tooltips import tooltip_text


class ScenePointer:
    """What a SceneView does with the pointer."""

    def __init__(self, view):
        self.view = view

    def pick_at(self, x: float, y: float):
        """The Hit (block id, cell) under logical widget pixel (x, y) of the GL surface, or None."""
        v = self.view
        return v.picker.pick(v.cam, x, y, max(v.gl.width(), 1), max(v.gl.height(), 1))

    def leave(self) -> None:
        """The pointer left the picture: no block or cell is hovered any more."""
        v = self.view
        if v.hovered is not None:
            v.hovered = None
            v.hover_cell = None
            v.colours.upload_all()
            v.update_outlines()
            v.block_hovered.emit("")

    def hover(self, pos: QPointF, global_pos: QPoint) -> None:
        """The pointer moved to pos: outline the block, light the cell and show its tooltip."""
        v = self.view
        hit = self.pick_at(pos.x(), pos.y())
        bid = hit.block_id if hit else None
        cell = (bid, hit.cell[0], hit.cell[1]) if hit and hit.cell is not None else None
        changed_block = bid != v.hovered
        if changed_block or cell != v.hover_cell:
            old_fam = v.layout.by_id[v.hover_cell[0]].family if v.hover_cell else None
            v.hovered = bid
            v.hover_cell = cell
            fams = {f for f in (old_fam, v.layout.by_id[bid].family if cell else None) if f}
            for name in fams:
                v.colours.upload(name)
            v.update_outlines()
            if changed_block:
                v.block_hovered.emit(bid or "")
            text = self.tooltip_text(hit) if hit else ""
            v.last_tooltip = text
            if text:
                QToolTip.showText(global_pos, _plain_tooltip(text), v.container)
            else:
                QToolTip.hideText()

    def click(self, pos: QPointF) -> None:
        """A click selects the block under the pointer; on a cell it also says which (and a linear layer's
        input cell starts following its path)."""
        v = self.view
        hit = self.pick_at(pos.x(), pos.y())
        if hit is None:
            return
        b = v.layout.by_id[hit.block_id]
        v.select_block(b.id)  # and into view, should part of it lie off screen
        if b.part in ("slab", "marker"):
            v.layer_clicked.emit(b.layer - 1)
        if hit.cell is not None:
            r, c = hit.cell
            if b.kind == "moe.experts":
                v.expert_clicked.emit(r * b.grid[1] + c)
            if b.part == "tensor" and b.kind in LINEAR_IN:
                v.follow = (b.id, r, c)
                v.update_outlines()
        v.block_clicked.emit(b.id)
        if hit.cell is not None:
            v.cell_clicked.emit(b.id, hit.cell[0], hit.cell[1])

    def context(self, pos: QPointF, global_pos: QPoint, keyboard: bool = False) -> None:
        """A right-click (or the Menu key: the selected block) asks for the block's context menu."""
        v = self.view
        if keyboard:
            if v.selected:
                v.context_requested.emit(v.selected, -1, -1, global_pos)
            return
        hit = self.pick_at(pos.x(), pos.y())
        if hit is None:
            return
        r, c = hit.cell if hit.cell is not None else (-1, -1)
        v.context_requested.emit(hit.block_id, int(r), int(c), global_pos)

    def double_click(self, pos: QPointF) -> None:
        """A double-click on a block selects it (as a click: the pair's first click may not have come) and
        centres and frames it; on a slab of the stack it selects the layer, whose framing follows."""
        v = self.view
        hit = self.pick_at(pos.x(), pos.y())
        if hit is None:
            return
        self.click(pos)
        b = v.layout.by_id.get(hit.block_id)
        if b is not None and b.part not in ("slab", "marker"):
            v.frame_block(hit.block_id)

    def tooltip_text(self, hit) -> str:
        v = self.view
        text = tooltip_text(v.layout, hit.block_id, hit.cell, v.drawn_trace(), v.pass_index, v.token, v.tr)
        ov = v.explanation  # the heads' / experts' total effect under the pointer (scene/effect_cells.py)
        line = effect_cells.tooltip_line(v.layout, ov.units, hit.block_id, hit.cell, v.tr) if ov is not None else ""
        return text + "\n" + line if line else text


def _plain_tooltip(text: str) -> str:
    """A hover text shown as the literal text: it names the model (a config's display_name, untrusted), and Qt
    shows a tooltip that looks like markup as rich text (an `<img src>` in it would read a local file)."""
    from PySide6.QtGui import Qt as GuiQt

    if not GuiQt.mightBeRichText(text) and "&" not in text:
        return text
    return "<p style='white-space:pre-wrap'>" + html.escape(text, quote=False) + "</p>"
