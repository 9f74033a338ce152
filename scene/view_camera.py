"""The SceneView's camera controller (a part the view owns: `SceneView.camera`): the camera, its one eased
animation, how to frame again for a new widget shape (refit), framing a block or the exploded layer between the
header and the legend as they are drawn (free_band), presets and the camera's state. It reads the view's public
state only (.gl, .container, .layout, .labels_enabled, .export_size, overlay_input(), isVisible(), redraw()); the
maths is scene/navigation.py's."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QVariantAnimation
from PySide6.QtGui import QVector3D

from scene import camera as camlib
from scene import navigation as nav
from scene.gl_items import SCENE_LOCK
from scene.labels import _fonts, _header_rect, _legend_layout  # the overlay's real boxes, for the camera's band
from scene.legend import export_label_scale

BAND_GAP = 6.0  # px (x label scale) kept between a framing and the header / the legend
ANIM_MS = 300


class CameraController:
    """Where a SceneView looks and how it moves there."""

    def __init__(self, view):
        self.view = view
        self.cam = camlib.Camera()
        # one camera animation, reused by every move: a new QVariantAnimation per move (parented to the view)
        # would live as long as the view, with the two cameras its closures hold
        self.anim = QVariantAnimation(view)
        self.anim.setStartValue(0.0)
        self.anim.setEndValue(1.0)
        self.anim.setDuration(ANIM_MS)
        self.anim.valueChanged.connect(self._step)
        self.anim.finished.connect(self._done)
        self.path: tuple[camlib.Camera, camlib.Camera] | None = None  # (from, to) while the animation runs
        # how to recompute the current framing for a new widget shape; None once the user moved the camera
        self.refit = lambda: nav.preset_camera("reset", self.view.layout, self.aspect(), self.free_band())

    # ---------------------------------------------------------------- framing
    def frame_block(self, block_id: str, animate: bool = True) -> bool:
        """Move the camera (eased) to centre the block and frame it, from the current angles where they show
        it (a double-click). False for an unknown block."""
        layout = self.view.layout
        if layout is None or block_id not in layout.by_id:
            return False

        def fit(bid=block_id):
            b = self.view.layout.by_id.get(bid)
            if b is None:
                return self.target()
            return nav.frame_block(b.lo, b.hi, self.target(), self.aspect(), self.free_band())
        self.animate_to(fit(), animate, refit=fit)
        return True

    def box_camera(self, lo, hi, fill: float = nav.FRAME_FILL) -> camlib.Camera:
        """The camera that frames the world box (lo, hi) between the header and the legend, filling `fill` of
        that band, from the angles the camera is going to (as frame_block does for a block, which fills half)."""
        current = self.target()
        az, el = nav.block_angles(current)
        fill_y, centre_y = nav.band_fill(self.free_band())
        base = camlib.Camera(azimuth=az, elevation=el, fov=current.fov)
        return camlib.fit_points(base, camlib.box_corners(np.asarray(lo, float), np.asarray(hi, float)),
                                 self.aspect(), nav.FILL_X * fill, fill_y * fill, centre_y)

    def frame_box(self, lo, hi, animate: bool = True) -> None:
        """Move the camera (eased) to frame the world box (lo, hi): a part of the scene that is no block (the
        lens column, the attention arcs' ladder, the guided tour's chapters)."""
        lo, hi = tuple(float(v) for v in lo), tuple(float(v) for v in hi)
        self.animate_to(self.box_camera(lo, hi), animate, refit=lambda: self.box_camera(lo, hi))

    def block_in_view(self, block_id: str, cam: camlib.Camera | None = None) -> bool:
        """Whether the block's box lies whole in the view, between the header and the legend, seen by cam
        (default: where the camera is going)."""
        layout = self.view.layout
        b = layout.by_id.get(block_id) if layout is not None else None
        if b is None:
            return False
        container = self.view.container
        return nav.box_in_view(b.lo, b.hi, cam if cam is not None else self.target(), container.width(),
                               container.height(), self.free_band())

    def reveal_block(self, block_id: str, animate: bool = True) -> bool:
        """Bring a block that is not whole in the view into it: the exploded layer's framing when that shows
        it whole, else the block framed (frame_block). Slabs and markers of the stack select a layer, whose
        framing follows (set_layer). True when the camera moves."""
        layout, container = self.view.layout, self.view.container
        b = layout.by_id.get(block_id) if layout is not None else None
        if b is None or b.part in ("slab", "marker", "backdrop") or min(container.width(), container.height()) < 50:
            return False
        if self.block_in_view(block_id):
            return False
        if b.layer == layout.layer + 1 and b.family != "stack":
            layer_cam = self.layer_camera()
            if self.block_in_view(block_id, layer_cam):
                self.animate_to(layer_cam, animate, refit=self.layer_camera)
                return True
        return self.frame_block(block_id, animate)

    def free_band(self, width: float | None = None, height: float | None = None,
                  scale: float = 1.0) -> tuple[float, float] | None:
        """(top, bottom): the part of the view's height, as fractions, below the header and above the legend
        as they are really drawn for a width x height view (default: the widget's size) with labels at
        scale x label_scale; None without labels or when they leave no useful room (the fixed band is used).
        With the view's export_size set (an export of that size: the CLI, render()), the labels as that image
        draws them."""
        view = self.view
        export = width is None and height is None and view.export_size is not None
        if export:
            width, height = view.export_size
            scale = export_label_scale(width, height)  # as the export's labels are scaled
        w = float(width if width is not None else view.container.width())
        h = float(height if height is not None else view.container.height())
        if not view.labels_enabled or view.layout is None or w < 50 or h < 50:
            return None
        inp = view.overlay_input(lens=False)  # the header and the legend only
        if export:
            inp.label_scale = 1.0  # exports are sized to the image, not to presentation mode
        s = scale * inp.label_scale
        header = _header_rect(inp, w, s, _fonts(s))
        legend = _legend_layout(inp, w, h, s)["box"]
        top, bottom = (header.bottom() + BAND_GAP * s) / h, (legend.top() - BAND_GAP * s) / h
        return (top, bottom) if bottom - top >= 0.3 else None

    def set_preset(self, name: str, animate: bool = True) -> None:
        """Animate to a preset (camera.PRESETS); "top" looks down on the current layer (scene/navigation.py)."""
        if name not in camlib.PRESETS:
            raise ValueError(f"unknown camera preset {name!r}")

        def fit():
            return nav.preset_camera(name, self.view.layout, self.aspect(), self.free_band())
        self.animate_to(fit(), animate, refit=fit)

    def state(self) -> dict:
        return self.cam.to_dict()

    def set_state(self, state: dict) -> None:
        """Put the camera where `state` says (a user's or a view file's camera: no refit afterwards)."""
        self.refit = None
        self.stop()
        self.apply(camlib.Camera.from_dict(state))

    def follow_shape(self) -> None:
        """The widget's shape or the labels' size changed: frame again, unless the user moved the camera."""
        if self.refit is not None:
            self.stop()
            self.apply(self.refit())

    def aspect(self) -> float:
        w, h = self.view.container.width(), self.view.container.height()
        return w / h if w > 10 and h > 10 else 1.6

    def layer_camera(self) -> camlib.Camera:
        """Frame the exploded layer (and its slab in the stack), from the current angles where they show it."""
        return nav.frame_layer(self.view.layout, self.target(), self.aspect(), self.free_band())

    def target(self) -> camlib.Camera:
        """Where the camera is going: the running animation's target, else the camera itself."""
        return self.path[1] if self.path is not None else self.cam

    # ---------------------------------------------------------------- moving
    def apply(self, cam: camlib.Camera) -> None:
        """Show the view from `cam` now (no animation)."""
        cam = cam.sanitized()  # whatever asked for it, the view only ever holds a finite camera
        o = self.view.gl.opts
        with SCENE_LOCK:  # the render thread reads the camera and the options together
            self.cam = cam
            o["center"] = QVector3D(*[float(v) for v in cam.center])
            o["distance"] = float(cam.distance)
            o["azimuth"] = float(cam.azimuth)
            o["elevation"] = float(cam.elevation)
            o["fov"] = float(cam.fov)
        self.view.redraw()

    def stop(self) -> None:
        """Stop a move under way where it is (QVariantAnimation.stop() does not emit finished)."""
        self.path = None
        self.anim.stop()

    def animate_to(self, target: camlib.Camera, animate: bool = True, refit=None) -> None:
        """Move (eased, or at once when not animated or not visible) to target; refit: how to frame the same
        thing again for another widget shape (None: keep the camera as it is then)."""
        self.stop()
        self.refit = refit
        if not animate or not self.view.isVisible():
            self.apply(target)
            return
        self.path = (camlib.Camera.from_dict(self.cam.to_dict()), target)
        self.anim.start()

    def _step(self, t) -> None:
        if self.path is not None:
            start, target = self.path
            self.apply(camlib.lerp(start, target, float(t)))

    def _done(self) -> None:
        if self.path is not None:
            target = self.path[1]
            self.path = None
            self.apply(target)
