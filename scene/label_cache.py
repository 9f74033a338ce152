"""The on-screen labels of the 3D view as one cached image (render thread): laid out and painted again only when
something they show changed."""
from __future__ import annotations

from PySide6.QtGui import QImage, QPainter

from scene.labels import OverlayInput, draw_token_names, paint_overlay


class LabelCache:
    """The labels as one premultiplied image, laid out and painted again only when something they show
    changed (one QPainter pass, Qt fonts, so Korean renders). Two levels: everything but the token names by the
    rows, and those names on top, so a knob change that only changes sampled tokens re-lays out just those.
    Used by the render thread only."""

    def __init__(self):
        self._base_key = None
        self._base: QImage | None = None
        self._taken: list = []
        self.placement = None  # what the labels on screen are and where (scene.labels.Placement)
        self._key = None
        self._img: QImage | None = None
        self.paint_count = 0

    def image(self, inp: OverlayInput, version: int, w: int, h: int, dpr: float) -> QImage:
        """The labels of inp for a w x h view at dpr; version changes whenever any text may have changed."""
        c = inp.camera
        # everything paint_overlay reads: the layout object (rebuilt whenever its blocks change), the camera,
        # the view size and the OverlayInput fields
        base_key = (version, id(inp.layout), tuple(c.center), c.distance, c.azimuth, c.elevation, c.fov,
                    w, h, dpr, inp.selected, inp.hovered, inp.has_trace, inp.step_note, inp.flow_on, inp.focus,
                    inp.theme, inp.label_scale)
        key = (base_key, tuple(inp.tokens or ()))
        if key == self._key and self._img is not None:
            return self._img
        if base_key != self._base_key or self._base is None:
            img = QImage(max(1, int(w * dpr)), max(1, int(h * dpr)), QImage.Format.Format_ARGB32_Premultiplied)
            img.setDevicePixelRatio(dpr)
            img.fill(0)
            p = QPainter(img)
            try:
                self.placement = paint_overlay(p, inp, w, h, 1.0, with_tokens=False)
                self._taken = self.placement.taken
            finally:
                p.end()
            self._base, self._base_key, self._layout = img, base_key, inp.layout  # keeps id(layout) unique
        img = self._base.copy()
        p = QPainter(img)
        try:
            draw_token_names(p, inp, w, h, 1.0, list(self._taken))
        finally:
            p.end()
        self._img, self._key = img, key
        self.paint_count += 1
        return self._img
