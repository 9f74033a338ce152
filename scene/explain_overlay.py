"""What the 3D view draws of an explanation (feature I1 + I3): the logit-lens column and the contribution
route, as plain data handed over by the app (the Explain dock), and the GL items that draw them.

`ExplainOverlay` is Qt-free plain data; `ExplainItems` owns a box mesh (the lens strip) and a line item (the
route) and fills them for a layout. The label candidates (the lens words) and the header line come from
`label_candidates` / `header_note`, which the view's OverlayInput carries to the label placer.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from scene import attention_arcs, lens_column, route_glow
from scene.geometry import boxes_mesh
from scene.gl_items import FamilyMesh, Lines, SCENE_LOCK
from scene.layout import Layout

__all__ = ["ExplainOverlay", "ExplainItems", "header_note"]


@dataclass(frozen=True)
class ExplainOverlay:
    """position / piece: the explained position (0-based) and its token; word: the piece predicted there.
    lens: (layer, top_word, top_prob, word_rank, word_prob) per reading (layer 0 = the embedding), or () when
    the lens column is off. route: (layer, part, value) direct contributions, or () when the route is off;
    threshold: the absolute |value| from which a block glows."""

    position: int
    piece: str
    word: str
    lens: tuple = ()
    route: tuple = ()
    threshold: float = 0.0
    logit: float = 0.0
    attention: tuple = ()  # per layer (1-based: index ℓ-1), what the position reads at each position 0..position
    # per head [H][T] (KDA's implicit A or MLA's softmax), or () when the arcs are off
    extra: dict = field(default_factory=dict, compare=False)

    @functools.cached_property  # computed once per overlay (the header, the stack colours and the lines read it)
    def lit(self) -> dict:
        return route_glow.lit_blocks(self.route, self.threshold) if self.route else {}


def _q(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"


def header_note(ov: ExplainOverlay | None, tr) -> str:
    """The header's line about what the lens column and the route show ("" when neither is on)."""
    if ov is None or not (ov.lens or ov.route or ov.attention):
        return ""
    parts = [tr("scene.explain.what", position=ov.position, piece=_q(ov.piece), word=_q(ov.word))]
    if ov.lens:
        settled = lens_column.settled_rank_one([e[3] for e in ov.lens])
        parts.append(tr("scene.explain.lens_from", layer=ov.lens[settled][0]) if settled is not None
                     else tr("scene.explain.lens_never"))
    if ov.attention:
        parts.append(tr("scene.explain.arcs"))
    if ov.route:
        parts.append(tr("scene.explain.route", n=len(ov.lit), threshold=f"{ov.threshold:.2f}",
                        logit=f"{ov.logit:.2f}"))
    return " · ".join(parts)


class ExplainItems:
    """The lens strip (one box per reading) and the route lines, added to a GL widget once."""

    def __init__(self, gl):
        self.strip = FamilyMesh()
        self.route = Lines(mode="lines", width=2.5, antialias=True, color=(1.0, 1.0, 1.0, 1.0))
        self.arcs = Lines(mode="lines", width=attention_arcs.LINE_WIDTH, antialias=True, color=(1.0, 1.0, 1.0, 1.0))
        self.arcs.setGLOptions("translucent")  # each arc's opacity is its weight
        for item in (self.strip, self.route, self.arcs):
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

    @staticmethod
    def _set(item, pts, cols) -> None:
        if pts is None:
            with SCENE_LOCK:
                item.setVisible(False)
        else:
            item.setData(pos=pts, color=cols)
            with SCENE_LOCK:
                item.setVisible(True)
