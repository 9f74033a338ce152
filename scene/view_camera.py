"""The SceneView's camera (a mixin: scene/view.py): framing a block or the exploded layer between the header and
the legend as they are drawn (free_band), presets, the camera's state, and the eased moves between cameras. It
has .cam, .gl, .container, .layout, ._anim (a QVariantAnimation), ._anim_path, ._refit, .labels_enabled,
.export_size, _overlay_input() and _redraw(); the maths is scene/navigation.py's."""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QVector3D

from scene import camera as camlib
from scene import navigation as nav
from scene.gl_items import SCENE_LOCK
from scene.labels import _fonts, _header_rect, _legend_layout  # the overlay's real boxes, for the camera's band
from scene.legend import export_label_scale

BAND_GAP = 6.0  # px (x label scale) kept between a framing and the header / the legend


class CameraMixin:
    """Where a SceneView looks and how it moves there."""

    def frame_block(self, block_id: str, animate: bool = True) -> bool:
        """Move the camera (eased) to centre the block and frame it, from the current angles where they show
        it (a double-click). False for an unknown block."""
        if self.layout is None or block_id not in self.layout.by_id:
            return False

        def fit(bid=block_id):
            b = self.layout.by_id.get(bid)
            if b is None:
                return self._anim_target()
            return nav.frame_block(b.lo, b.hi, self._anim_target(), self._aspect(), self.free_band())
        self._animate_to(fit(), animate, refit=fit)
        return True

    def box_camera(self, lo, hi, fill: float = nav.FRAME_FILL) -> camlib.Camera:
        """The camera that frames the world box (lo, hi) between the header and the legend, filling `fill` of
        that band, from the angles the camera is going to (as frame_block does for a block, which fills half)."""
        current = self._anim_target()
        az, el = nav.block_angles(current)
        fill_y, centre_y = nav.band_fill(self.free_band())
        base = camlib.Camera(azimuth=az, elevation=el, fov=current.fov)
        return camlib.fit_points(base, camlib.box_corners(np.asarray(lo, float), np.asarray(hi, float)),
                                 self._aspect(), nav.FILL_X * fill, fill_y * fill, centre_y)

    def frame_box(self, lo, hi, animate: bool = True) -> None:
        """Move the camera (eased) to frame the world box (lo, hi): a part of the scene that is no block (the
        lens column, the attention arcs' ladder, the guided tour's chapters)."""
        lo, hi = tuple(float(v) for v in lo), tuple(float(v) for v in hi)
        self._animate_to(self.box_camera(lo, hi), animate, refit=lambda: self.box_camera(lo, hi))

    def block_in_view(self, block_id: str, cam: camlib.Camera | None = None) -> bool:
        """Whether the block's box lies whole in the view, between the header and the legend, seen by cam
        (default: where the camera is going)."""
        b = self.layout.by_id.get(block_id) if self.layout is not None else None
        if b is None:
            return False
        w, h = self.container.width(), self.container.height()
        return nav.box_in_view(b.lo, b.hi, cam if cam is not None else self._anim_target(), w, h,
                               self.free_band())

    def reveal_block(self, block_id: str, animate: bool = True) -> bool:
        """Bring a block that is not whole in the view into it: the exploded layer's framing when that shows
        it whole, else the block framed (frame_block). Slabs and markers of the stack select a layer, whose
        framing follows (set_layer). True when the camera moves."""
        b = self.layout.by_id.get(block_id) if self.layout is not None else None
        if b is None or b.part in ("slab", "marker", "backdrop") or min(self.container.width(),
                                                                         self.container.height()) < 50:
            return False
        if self.block_in_view(block_id):
            return False
        if b.layer == self.layout.layer + 1 and b.family != "stack":
            layer_cam = self._layer_camera()
            if self.block_in_view(block_id, layer_cam):
                self._animate_to(layer_cam, animate, refit=self._layer_camera)
                return True
        return self.frame_block(block_id, animate)

    def free_band(self, width: float | None = None, height: float | None = None,
                  scale: float = 1.0) -> tuple[float, float] | None:
        """(top, bottom): the part of the view's height, as fractions, below the header and above the legend
        as they are really drawn for a width x height view (default: the widget's size) with labels at
        scale x label_scale; None without labels or when they leave no useful room (the fixed band is used).
        With export_size set (an export of that size: the CLI, render()), the labels as that image draws them."""
        export = width is None and height is None and self.export_size is not None
        if export:
            width, height = self.export_size
            scale = export_label_scale(width, height)  # as _paint_labels scales an export's labels
        w = float(width if width is not None else self.container.width())
        h = float(height if height is not None else self.container.height())
        if not self.labels_enabled or self.layout is None or w < 50 or h < 50:
            return None
        inp = self._overlay_input(lens=False)  # the header and the legend only
        if export:
            inp.label_scale = 1.0  # exports are sized to the image, not to presentation mode
        s = scale * inp.label_scale
        header = _header_rect(inp, w, s, _fonts(s))
        legend = _legend_layout(inp, w, h, s)["box"]
        top, bottom = (header.bottom() + BAND_GAP * s) / h, (legend.top() - BAND_GAP * s) / h
        return (top, bottom) if bottom - top >= 0.3 else None

    def set_camera_preset(self, name: str, animate: bool = True) -> None:
        """Animate to a preset (camera.PRESETS); "top" looks down on the current layer (scene/navigation.py)."""
        if name not in camlib.PRESETS:
            raise ValueError(f"unknown camera preset {name!r}")

        def fit():
            return nav.preset_camera(name, self.layout, self._aspect(), self.free_band())
        self._animate_to(fit(), animate, refit=fit)

    def camera_state(self) -> dict:
        return self.cam.to_dict()

    def set_camera_state(self, state: dict) -> None:
        self._refit = None
        self._stop_anim()
        self._apply_camera(camlib.Camera.from_dict(state))
    def _aspect(self) -> float:
        w, h = self.container.width(), self.container.height()
        return w / h if w > 10 and h > 10 else 1.6

    def _layer_camera(self) -> camlib.Camera:
        """Frame the exploded layer (and its slab in the stack), from the current angles where they show it."""
        return nav.frame_layer(self.layout, self._anim_target(), self._aspect(), self.free_band())

    def _anim_target(self) -> camlib.Camera:
        """Where the camera is going: the running animation's target, else the camera itself."""
        return self._anim_path[1] if self._anim_path is not None else self.cam

    def _apply_camera(self, cam: camlib.Camera) -> None:
        cam = cam.sanitized()  # whatever asked for it, the view only ever holds a finite camera
        o = self.gl.opts
        with SCENE_LOCK:  # the render thread reads the camera and the options together
            self.cam = cam
            o["center"] = QVector3D(*[float(v) for v in cam.center])
            o["distance"] = float(cam.distance)
            o["azimuth"] = float(cam.azimuth)
            o["elevation"] = float(cam.elevation)
            o["fov"] = float(cam.fov)
        self._redraw()

    def _stop_anim(self) -> None:
        self._anim_path = None
        self._anim.stop()  # stop() does not emit finished: the camera stays where the animation was

    def _animate_to(self, target: camlib.Camera, animate: bool = True, refit=None) -> None:
        self._stop_anim()
        self._refit = refit
        if not animate or not self.isVisible():
            self._apply_camera(target)
            return
        self._anim_path = (camlib.Camera.from_dict(self.cam.to_dict()), target)
        self._anim.start()

    def _anim_step(self, t) -> None:
        if self._anim_path is not None:
            start, target = self._anim_path
            self._apply_camera(camlib.lerp(start, target, float(t)))

    def _anim_done(self) -> None:
        if self._anim_path is not None:
            target = self._anim_path[1]
            self._anim_path = None
            self._apply_camera(target)
