"""What the 3D view draws of an explanation (feature I1 + I3): the logit-lens column and the contribution
route, as plain data handed over by the app (the Explain dock), and the GL items that draw them.

`ExplainOverlay` is Qt-free plain data (scene/explain_data.py); `ExplainItems` owns a box mesh (the lens strip)
and a line item (the route) and fills them for a layout. The label candidates (the lens words) and the header line come from
`label_candidates` / `header_note`, which the view's OverlayInput carries to the label placer.
"""
from __future__ import annotations

import numpy as np

from scene import attention_arcs, causal_lanes, effect_cells, knockout_marks, lens_column, route_glow
from scene.explain_data import ExplainOverlay
from scene.geometry import boxes_mesh
from scene.gl_items import FamilyMesh, Lines, SCENE_LOCK
from scene.layout import Layout

__all__ = ["ExplainOverlay", "ExplainItems", "header_note"]


def _q(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"


def header_note(ov: ExplainOverlay | None, tr) -> str:
    """The header's line about what the lens column, the route and a knock-out show ("" when none is on)."""
    if ov is None or not (ov.lens or ov.route or ov.route_kind or ov.attention or ov.after or ov.units is not None):
        return ""
    parts = [tr("scene.explain.what", position=ov.position, piece=_q(ov.piece), word=_q(ov.word))]
    if ov.after:
        parts.append(knockout_note(ov, tr))
    if ov.lens:
        settled = lens_column.settled_rank_one([e[3] for e in ov.lens])
        parts.append(tr("scene.explain.readable", layer=ov.lens[settled][0]) if settled is not None
                     else tr("scene.explain.lens_never"))
    if ov.decided_at is not None:
        parts.append(tr("scene.explain.decided", layer=ov.decided_at))
    if ov.attention:
        parts.append(tr("scene.explain.arcs"))
    if ov.route_kind == "causal" and ov.computing:
        parts.append(tr("scene.explain.computing"))
    elif ov.route_kind == "causal":
        pct = f"{100 * ov.threshold:.0f}"
        parts.append(tr("scene.explain.causal", n=len(ov.lit), pct=pct) if ov.lit
                     else tr("scene.explain.spread", pct=pct, top=f"{100 * ov.largest:.0f}"))
        if ov.lanes:
            parts.append(tr("scene.explain.lanes"))
    elif ov.route:
        parts.append(tr("scene.explain.direct", n=len(ov.lit), threshold=f"{ov.threshold:.2f}",
                        logit=f"{ov.logit:.2f}"))
    if ov.units is not None:  # the heads' and experts' colour: total effects, never direct ones
        parts.append(tr("scene.units.computing") if ov.units.computing else
                     tr("scene.units.computing_experts") if ov.units.experts_computing else
                     tr("scene.units.error", message=ov.units.error) if ov.units.error else tr("scene.units.header"))
    return " · ".join(parts)


def knockout_note(ov: ExplainOverlay, tr) -> str:
    """'knock-out (zero): ' 상자' p 0.62 · logit 12.16 → ' 공' p 0.41 (' 상자' p 0.02 · logit 6.47)'."""
    mode, after, p_after, p_word_after, logit_after, p_before = ov.after
    return tr("scene.knockout.note", mode=tr(f"explain.mode.{mode}"), word=_q(ov.word), p=f"{p_before:.2f}",
              logit=f"{ov.logit:.2f}", after=_q(after), p_after=f"{p_after:.2f}", p_word_after=f"{p_word_after:.2f}",
              logit_after=f"{logit_after:.2f}")


class ExplainItems:
    """The lens strip (one box per reading) and the route lines, added to a GL widget once."""

    def __init__(self, gl):
        self.strip = FamilyMesh()
        self.route = Lines(mode="lines", width=2.5, antialias=True, color=(1.0, 1.0, 1.0, 1.0))
        self.arcs = Lines(mode="lines", width=attention_arcs.LINE_WIDTH, antialias=True, color=(1.0, 1.0, 1.0, 1.0))
        self.arcs.setGLOptions("translucent")  # each arc's opacity is its weight
        self.crossed = Lines(mode="lines", width=3.0, antialias=True, color=(1.0, 1.0, 1.0, 1.0))
        self.lanes = FamilyMesh()  # the causal-tracing map: token lanes on the slabs' front faces
        self.lane_keys: list[tuple[int, int]] = []  # tests: (row, position) of each lane box
        self.lane_rgba: np.ndarray | None = None
        self.units = FamilyMesh()  # the exploded layer's head lanes and expert plates (scene/effect_cells.py)
        self.unit_keys: list[tuple] = []  # tests: ("head" | "expert", layer, index) of each plate
        self.unit_rgba: np.ndarray | None = None
        for item in (self.strip, self.route, self.arcs, self.crossed, self.lanes, self.units):
            item.setVisible(False)
            gl.addItem(item)
        self.strip_layers: list[int] = []  # tests: which readings the strip shows, in box order
        self.strip_rgba: np.ndarray | None = None

    def update(self, layout: Layout | None, ov: ExplainOverlay | None) -> None:
        lens = ov.lens if ov is not None and layout is not None else ()
        if lens:
            centres, sizes, kept = lens_column.strip_boxes(layout, [e[0] for e in lens])
            prob = {int(e[0]): float(e[4]) for e in lens}
            rgba = lens_column.strip_colours([prob[k] for k in kept])
            verts, normals, faces = boxes_mesh(centres, sizes)
            self.strip.set_geometry(verts, normals, faces, colors=np.repeat(rgba, len(verts) // max(1, len(kept)), 0))
            self.strip_layers, self.strip_rgba = kept, rgba
        else:
            self.strip_layers, self.strip_rgba = [], None
        with SCENE_LOCK:
            self.strip.setVisible(bool(lens) and bool(self.strip_layers))
        pts, cols = (route_glow.route_lines(layout, ov.lit) if ov is not None and ov.route and layout is not None
                     else (None, None))
        self._set(self.route, pts, cols)
        arcs = (None, None)
        if ov is not None and ov.attention and layout is not None and layout.layer < len(ov.attention):
            arcs = attention_arcs.arc_lines(layout, ov.position, ov.attention[layout.layer])
        self._set(self.arcs, *arcs)
        self._update_lanes(layout, ov)
        self._update_units(layout, ov)
        crossed = (knockout_marks.knockout_lines(layout, ov.knockout, ov.n_tokens)
                   if ov is not None and ov.knockout and layout is not None else (None, None))
        self._set(self.crossed, *crossed)

    def _update_lanes(self, layout, ov) -> None:
        lanes = ov.lanes if ov is not None and layout is not None else ()
        self.lane_keys, self.lane_rgba = [], None
        if lanes:
            centres, sizes, keys, vals = causal_lanes.lane_boxes(layout, lanes)
            if keys:
                rgba = causal_lanes.lane_colours(vals)
                verts, normals, faces = boxes_mesh(centres, sizes)
                self.lanes.set_geometry(verts, normals, faces, colors=np.repeat(rgba, len(verts) // len(keys), 0))
                self.lane_keys, self.lane_rgba = keys, rgba
        with SCENE_LOCK:
            self.lanes.setVisible(bool(self.lane_keys))

    def _update_units(self, layout, ov) -> None:
        units = ov.units if ov is not None and layout is not None else None
        self.unit_keys, self.unit_rgba = [], None
        if units is not None and units.ready:
            parts = [(effect_cells.head_boxes(layout, units), units.head_scale),
                     (effect_cells.expert_boxes(layout, units), units.expert_scale)]
            parts = [(boxes, scale) for boxes, scale in parts if boxes[2]]
            if parts:
                centres = np.concatenate([b[0] for b, _s in parts])
                sizes = np.concatenate([b[1] for b, _s in parts])
                rgba = np.concatenate([effect_cells.colours(b[3], s) for b, s in parts])
                centres, sizes, all_rgba = effect_cells.with_rims(centres, sizes, rgba)
                verts, normals, faces = boxes_mesh(centres, sizes)
                self.unit_keys = [k for b, _s in parts for k in b[2]]
                self.units.set_geometry(verts, normals, faces,
                                        colors=np.repeat(all_rgba, len(verts) // len(all_rgba), 0))
                self.unit_rgba = rgba
        with SCENE_LOCK:
            self.units.setVisible(bool(self.unit_keys))

    @staticmethod
    def _set(item, pts, cols) -> None:
        if pts is None:
            with SCENE_LOCK:
                item.setVisible(False)
        else:
            item.setData(pos=pts, color=cols)
            with SCENE_LOCK:
                item.setVisible(True)
