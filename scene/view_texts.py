"""The SceneView's texts (a part the view owns: `SceneView.texts`): the OverlayInput the labels, the header and
the legend are drawn from, with the explanation's labels laid out once per change. Called on the UI thread and in
the render thread (scene/gl_widget.py's frame snapshot). It reads the view's public state only (.layout, .cam,
.selected, .hovered, .flow_edges, .step_kind, .label_scale, .explanation, .outside, .translator, tr(),
drawn_trace(), focus_ids())."""
from __future__ import annotations

from scene import attention_arcs, effect_cells, lens_column
from scene.explain_overlay import header_note
from scene.labels import OverlayInput
from scene.steps import scene_note_key
from scene.tooltips import model_args


class SceneTexts:
    """What the labels of a SceneView say."""

    def __init__(self, view):
        self.view = view
        self._explain_cache = None  # (key, lens labels, header note, (overlay, layout)): kept per change

    def overlay_input(self, camera=None, lens: bool = True) -> OverlayInput:
        """What the labels, the header and the legend draw; lens=False leaves out the lens column's labels (the
        camera's band needs only the header and the legend: a layer change then does not lay them out)."""
        v = self.view
        layout = v.layout
        tokens = None
        trace = v.drawn_trace()
        if trace is not None:
            tokens = [trace.tokens[p][0] if p < len(trace.tokens) else "" for p in layout.row_positions]
        note = ""
        if v.step_kind:
            note = v.tr(scene_note_key(v.step_kind, layout.dims), **model_args(layout.dims))  # the shown model's
            if note.startswith("[scene.step."):  # a step kind this catalogue does not know
                note = v.tr("scene.step.generic", step=v.step_kind)
        return OverlayInput(layout=layout, camera=camera if camera is not None else v.cam, tr=v.tr,
                            selected=v.selected, hovered=v.hovered, has_trace=trace is not None, tokens=tokens,
                            step_note=note, flow_on=bool(v.flow_edges), focus=v.focus_ids(),
                            label_scale=v.label_scale,
                            weights=getattr(trace, "weights_name", "") if trace is not None else "",
                            **self.explain_labels(lens))

    def explain_labels(self, lens: bool = True) -> dict:
        """The OverlayInput fields of the lens column and the route (scene/explain_overlay.py); lens=False: all
        but the lens column's labels."""
        v = self.view
        ov, layout = v.explanation, v.layout  # read once: the render thread may call this without the lock
        outside = v.tr("scene.outside") if v.outside and v.drawn_trace() is not None else ""
        if ov is None:
            return dict(outside_note=outside)
        key = (id(ov), id(layout), id(v.translator))  # the overlay input is built every frame: once per change
        cached = self._explain_cache
        if cached is None or cached[0] != key:
            if not lens:
                return dict(explain_note=header_note(ov, v.tr), route_on=bool(ov.route), route_kind=ov.route_kind,
                            outside_note=outside, units_on=ov.units is not None)
            labels = lens_column.label_candidates(layout, ov.lens, _lens_piece) if ov.lens else None
            if ov.attention and 0 <= layout.layer < len(ov.attention):  # the strongest arcs' names, per head
                trace = v.drawn_trace()
                tokens = ([trace.tokens[p][0] if p < len(trace.tokens) else "" for p in layout.row_positions]
                          if trace is not None else None)
                labels = (labels or []) + attention_arcs.label_candidates(
                    layout, ov.position, ov.attention[layout.layer], tokens, v.tr,
                    layout.dims.mixers[layout.layer])
            if ov.units is not None:  # the strongest heads and experts of the exploded layer, named
                labels = (labels or []) + effect_cells.label_candidates(layout, ov.units, v.tr)
            cached = self._explain_cache = (key, labels, header_note(ov, v.tr), (ov, layout))  # keeps the ids
        return dict(lens_labels=cached[1] if lens else None, explain_note=cached[2], route_on=bool(ov.route),
                    route_kind=ov.route_kind, outside_note=outside, units_on=ov.units is not None)


def _lens_piece(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"
