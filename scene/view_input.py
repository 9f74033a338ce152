"""The SceneView's input and texts (a mixin: scene/view.py): picking, hover (with its tooltip), click, context
menu and double-click (the events come from scene/input.py), and the OverlayInput the labels are drawn from.
It has .picker, .cam, .gl, .container, .layout, .hovered, .hover_cell, .selected, .follow, .explanation, the
view's signals, tr(), drawn_trace(), focus_ids(), select_block(), frame_block() and the colour uploads."""
from __future__ import annotations

import html

from PySide6.QtCore import QPoint, QPointF
from PySide6.QtWidgets import QToolTip

from scene.block_kinds import LINEAR_IN  # y = x @ W kind -> the kind of x
from scene import attention_arcs, lens_column
from scene.explain_overlay import header_note
from scene.labels import OverlayInput
from scene.steps import scene_note_key
from scene.tooltips import model_args, tooltip_text


class InputMixin:
    """What a SceneView does with the pointer, and the texts it shows."""

    def pick_at(self, x: float, y: float):
        """The Hit (block id, cell) under logical widget pixel (x, y) of the GL surface, or None."""
        return self.picker.pick(self.cam, x, y, max(self.gl.width(), 1), max(self.gl.height(), 1))

    def _leave(self) -> None:
        if self.hovered is not None:
            self.hovered = None
            self.hover_cell = None
            for name in self._box_rgba:
                self._upload_colors(name)
            self._update_outlines()
            self.block_hovered.emit("")

    def _hover(self, pos: QPointF, global_pos: QPoint) -> None:
        hit = self.pick_at(pos.x(), pos.y())
        bid = hit.block_id if hit else None
        cell = (bid, hit.cell[0], hit.cell[1]) if hit and hit.cell is not None else None
        changed_block = bid != self.hovered
        if changed_block or cell != self.hover_cell:
            old_fam = self.layout.by_id[self.hover_cell[0]].family if self.hover_cell else None
            self.hovered = bid
            self.hover_cell = cell
            fams = {f for f in (old_fam, self.layout.by_id[bid].family if cell else None) if f}
            for name in fams:
                self._upload_colors(name)
            self._update_outlines()
            if changed_block:
                self.block_hovered.emit(bid or "")
            text = self.tooltip_text(hit) if hit else ""
            self.last_tooltip = text
            if text:
                QToolTip.showText(global_pos, _plain_tooltip(text), self.container)
            else:
                QToolTip.hideText()

    def _click(self, pos: QPointF) -> None:
        hit = self.pick_at(pos.x(), pos.y())
        if hit is None:
            return
        b = self.layout.by_id[hit.block_id]
        self.select_block(b.id)  # and into view, should part of it lie off screen
        if b.part in ("slab", "marker"):
            self.layer_clicked.emit(b.layer - 1)
        if hit.cell is not None:
            r, c = hit.cell
            if b.kind == "moe.experts":
                self.expert_clicked.emit(r * b.grid[1] + c)
            if b.part == "tensor" and b.kind in LINEAR_IN:
                self.follow = (b.id, r, c)
                self._update_outlines()
        self.block_clicked.emit(b.id)
        if hit.cell is not None:
            self.cell_clicked.emit(b.id, hit.cell[0], hit.cell[1])

    def _context(self, pos: QPointF, global_pos: QPoint, keyboard: bool = False) -> None:
        """A right-click (or the Menu key: the selected block) asks for the block's context menu."""
        if keyboard:
            if self.selected:
                self.context_requested.emit(self.selected, -1, -1, global_pos)
            return
        hit = self.pick_at(pos.x(), pos.y())
        if hit is None:
            return
        r, c = hit.cell if hit.cell is not None else (-1, -1)
        self.context_requested.emit(hit.block_id, int(r), int(c), global_pos)

    def _double_click(self, pos: QPointF) -> None:
        """A double-click on a block selects it (as a click: the pair's first click may not have come) and
        centres and frames it; on a slab of the stack it selects the layer, whose framing follows."""
        hit = self.pick_at(pos.x(), pos.y())
        if hit is None:
            return
        self._click(pos)
        if self.layout.by_id.get(hit.block_id) is not None and self.layout.by_id[hit.block_id].part not in (
                "slab", "marker"):
            self.frame_block(hit.block_id)

    # ================================================================ text
    def tooltip_text(self, hit) -> str:
        return tooltip_text(self.layout, hit.block_id, hit.cell, self.drawn_trace(), self.pass_index, self.token,
                            self.tr)

    def _overlay_input(self, camera=None, lens: bool = True) -> OverlayInput:
        """What the labels, the header and the legend draw; lens=False leaves out the lens column's labels (the
        camera's band needs only the header and the legend: a layer change then does not lay them out)."""
        tokens = None
        trace = self.drawn_trace()
        if trace is not None:
            tokens = [trace.tokens[p][0] if p < len(trace.tokens) else "" for p in self.layout.row_positions]
        note = ""
        if self.step_kind:
            note = self.tr(scene_note_key(self.step_kind, self.layout.dims), **model_args(self.layout.dims))  # the shown model's
            if note.startswith("[scene.step."):  # a step kind this catalogue does not know
                note = self.tr("scene.step.generic", step=self.step_kind)
        return OverlayInput(layout=self.layout, camera=camera if camera is not None else self.cam, tr=self.tr, selected=self.selected,
                            hovered=self.hovered, has_trace=trace is not None, tokens=tokens,
                            step_note=note, flow_on=bool(self.flow_edges), focus=self.focus_ids(),
                            label_scale=self.label_scale,
                            weights=getattr(trace, "weights_name", "") if trace is not None else "",
                            **self._explain_labels(lens))

    def _explain_labels(self, lens: bool = True) -> dict:
        """The OverlayInput fields of the lens column and the route (scene/explain_overlay.py); lens=False: all
        but the lens column's labels."""
        ov, layout = self.explanation, self.layout  # read once: the render thread may call this without the lock
        outside = self.tr("scene.outside") if self._outside and self.drawn_trace() is not None else ""
        if ov is None:
            return dict(outside_note=outside)
        key = (id(ov), id(layout), id(self._tr))  # the overlay input is built every frame: once per change
        cached = getattr(self, "_explain_cache", None)
        if cached is None or cached[0] != key:
            if not lens:
                return dict(explain_note=header_note(ov, self.tr), route_on=bool(ov.route), route_kind=ov.route_kind,
                            outside_note=outside)
            labels = lens_column.label_candidates(layout, ov.lens, _lens_piece) if ov.lens else None
            if ov.attention and 0 <= layout.layer < len(ov.attention):  # the strongest arcs' names, per head
                trace = self.drawn_trace()
                tokens = ([trace.tokens[p][0] if p < len(trace.tokens) else "" for p in layout.row_positions]
                          if trace is not None else None)
                labels = (labels or []) + attention_arcs.label_candidates(
                    layout, ov.position, ov.attention[layout.layer], tokens, self.tr,
                    layout.dims.mixers[layout.layer])
            cached = self._explain_cache = (key, labels, header_note(ov, self.tr), (ov, layout))  # keeps the ids
        return dict(lens_labels=cached[1] if lens else None, explain_note=cached[2], route_on=bool(ov.route),
                    route_kind=ov.route_kind, outside_note=outside)


def _lens_piece(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"


def _plain_tooltip(text: str) -> str:
    """A hover text shown as the literal text: it names the model (a config's display_name, untrusted), and Qt
    shows a tooltip that looks like markup as rich text (an `<img src>` in it would read a local file)."""
    from PySide6.QtGui import Qt as GuiQt

    if not GuiQt.mightBeRichText(text) and "&" not in text:
        return text
    return "<p style='white-space:pre-wrap'>" + html.escape(text, quote=False) + "</p>"
