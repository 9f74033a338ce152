"""SceneView: the 3D scene widget (S1-S8) — the API the app shell codes against.

    SceneView(parent=None)
    set_translator(fn), set_config(cfg), set_trace(trace), set_layer(layer0), set_pass(i), set_token(pos),
    set_step_focus(step_kind), select_block(block_id), select_expert(e), set_camera_preset(name),
    camera_state() -> dict, set_camera_state(dict), render_image(w, h, transparent=False) -> QImage
    set_explanation(overlay) (the lens column, arcs and route: scene/explain_overlay.py)
    signals: block_hovered(str), block_clicked(str), cell_clicked(str, int, int), layer_clicked(int),
             expert_clicked(int), context_requested(str, int, int, QPoint)

The view owns five parts, each an object with its own state that reads the view's public names only:
`camera` (scene/view_camera.py: the camera, its eased moves, framing), `colours` (scene/view_colours.py: the
colour job), `exporter` (scene/view_export.py: images off screen), `pointer` (scene/view_input.py: picking,
hover, clicks) and `texts` (scene/view_texts.py: what the labels draw). This module keeps the state, the layout
and the lines, and the public API above (thin calls into the parts).

The 3D picture (`SceneView.gl`, also `SceneView.container`: scene/gl_widget.py) is a plain raster widget holding
pyqtgraph's GLViewMixin state; its frames are drawn by a render thread into an FBO (scene/frames.py) and blitted,
with the labels (scene/label_cache.py) painted over them, so no software-GL frame ever runs on the UI thread.
Its mouse / wheel / key events go to `SceneView.input` (scene/input.py), which moves the camera with the Qt-free
maths of scene/navigation.py. Exports render into an FBO with an off-screen context of the application's share
group (needs Qt.AA_ShareOpenGLContexts, which pyqtgraph needs anyway).

Everything drawn comes from one `Layout` (scene/layout.py). Geometry is merged per family into a few
FamilyMesh items; a new trace / pass / token only rewrites colour buffers, and a layer change reuses the arrays
(and GL buffers) of a layer of the same shape (scene/geometry.py). A state change never computes cell colours
on the UI thread: they are marked stale and the next frame computes them (apply_colours, in the render thread, outside
SCENE_LOCK; an export on the UI thread computes them there), or the engine thread has computed them ahead
(precolour). Redraws happen on demand.
"""
from __future__ import annotations

import json

import numpy as np
from PySide6.QtCore import QPoint, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from assets import asset_path, plurals
from scene import camera as camlib
from scene import palette
from scene import highlights, route_glow
from scene import navigation as nav
from scene.explain_overlay import ExplainItems
from scene.geometry import GeometryCache, build_families
from scene.gl_items import Dots, FamilyMesh, Lines
from scene.gl_widget import GLWidget
from scene.input import InputAdapter
from scene.view_camera import ANIM_MS, CameraController  # noqa: F401 - ANIM_MS: the camera moves' length
from scene.view_colours import ColourJob, atomic
from scene.view_export import SceneExporter
from scene.view_input import ScenePointer
from scene.view_texts import SceneTexts
from scene.layout import Layout, build_layout
from scene.picking import Picker


SCENE_CATALOGUES = ("scene", "weights", "explain3d", "why", "units3d")  # the catalogues whose keys the scene's own texts use


def _default_translator():
    """English from the scene's catalogues, for a view without the app's translator (API, bench, tests)."""
    table = {}
    for name in SCENE_CATALOGUES:
        try:
            table.update(json.loads(asset_path("i18n", f"{name}.en.json").read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass

    def tr(key, **fmt):
        text = table.get(key, f"[{key}]")
        return plurals.format_text(text, **fmt) if fmt else text  # str.format, with count phrases
    return tr


def _default_layer0(cfg) -> int:
    from compute.config import default_config
    from compute.model_defaults import default_layer

    return default_layer(cfg if cfg is not None else default_config()) - 1


class SceneView(QWidget):
    block_hovered = Signal(str)
    block_clicked = Signal(str)
    cell_clicked = Signal(str, int, int)
    layer_clicked = Signal(int)
    expert_clicked = Signal(int)
    context_requested = Signal(str, int, int, QPoint)  # block id, cell row, column (-1: none), global position

    def __init__(self, parent=None, cfg=None):
        """cfg: the model config to lay out (None: Kimi K3's); the same as set_config(cfg) afterwards, without
        building the layout twice."""
        super().__init__(parent)
        self.setObjectName("sceneView")
        self.translator = _default_translator()
        self.cfg = cfg
        self.trace = None
        self.layer0 = _default_layer0(cfg)  # the model's default layer until set_layer (compute.model_defaults)
        self.pass_index = 0
        self.token = 0
        self.step_kind: str | None = None
        self.step_block_ids: tuple[str, ...] = ()  # block ids the current step outlines (the step table's)
        self.selected: str | None = None
        self.hovered: str | None = None
        self.hover_cell: tuple[str, int, int] | None = None
        self.follow: tuple[str, int, int] | None = None
        self.expert: int | None = None
        self.labels_enabled = True
        self.label_scale = 1.0  # fonts of the on-screen labels (presentation mode enlarges them)
        self.overlay_version = 0  # bumped whenever a text the labels draw may differ (the frame snapshot's key)
        self.export_size: tuple[int, int] | None = None  # frame for an image of this size (its labels' size)
        self.last_tooltip = ""
        self.flow_edges: list[tuple[str, str]] = []
        self.camera = CameraController(self)
        self.colours = ColourJob(self)
        self.exporter = SceneExporter(self)
        self.pointer = ScenePointer(self)
        self.texts = SceneTexts(self)
        self.input = InputAdapter(self)  # the GL widget's mouse / wheel / key events go there

        self.gl = GLWidget(self, self)
        self.gl.setObjectName("sceneGL")
        self.gl.setMinimumSize(16, 16)
        self.container = self.gl  # the widget that shows the 3D picture (where it sits, its size)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.container)
        self.meshes: dict[str, FamilyMesh] = {}
        for fam in ("stack", "cells", "experts"):
            m = FamilyMesh()
            self.meshes[fam] = m
            self.gl.addItem(m)
        self.line_flow = Lines(mode="lines", width=2.0, antialias=True, color=(1.0, 0.78, 0.3, 0.9))
        self.line_follow = Lines(mode="lines", width=2.5, antialias=True, color=(1.0, 0.95, 0.35, 1.0))
        self.line_sel = Lines(mode="lines", width=2.0, antialias=True, color=(1.0, 1.0, 1.0, 1.0))
        self.line_link = Lines(mode="lines", width=1.2, antialias=True, color=(0.6, 0.75, 0.8, 0.55))
        self.line_hover = Lines(mode="lines", width=1.5, antialias=True, color=(0.75, 0.8, 0.9, 0.9))
        self.line_step = Lines(mode="lines", width=2.0, antialias=True, color=(1.0, 0.62, 0.2, 1.0))
        # a dot where each conceptual flow arrives: shows the direction without animating (render on demand)
        self.flow_heads = Dots(size=7.0, color=(1.0, 0.85, 0.4, 1.0), pxMode=True)
        self.flow_heads.setGLOptions("translucent")
        for item in (self.line_link, self.line_flow, self.flow_heads, self.line_step, self.line_follow,
                     self.line_sel, self.line_hover):
            item.setVisible(False)
            self.gl.addItem(item)
        self.explanation = None  # scene.explain_overlay.ExplainOverlay: the lens column / route drawn, or None
        self.outside = False  # the drawn trace's prompt is outside the toy language
        self.explain_items = ExplainItems(self.gl)
        self.layout: Layout | None = None
        self.picker: Picker | None = None
        self.families: dict = {}
        self._geometry = GeometryCache()  # the last few families' vertex arrays (a layer change reuses them)
        self.trace_version = 0
        self._rebuild()
        self.camera.apply(nav.preset_camera("reset", self.layout, 1.6))

    # ================================================================ public API
    @property
    def cam(self) -> camlib.Camera:
        """The camera the view is seen from now (the camera part's)."""
        return self.camera.cam

    def redraw(self) -> None:
        """Something shown changed: draw at the next frame. The label picture is laid out again only if what it
        shows differs (see scene/label_cache.py), so a new trace of the same shape (a slider drag) reuses it and
        its GL texture."""
        self.gl.update()

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        self.camera.follow_shape()  # until the user moves the camera, the framing follows the widget's shape

    def set_translator(self, fn) -> None:
        self.translator = fn
        self.overlay_version += 1  # every text may differ
        if self.isVisible():  # another header / legend size: frame for it
            self.camera.follow_shape()
        self.redraw()

    def tr(self, key: str, **fmt) -> str:
        return self.translator(key, **fmt)

    def set_config(self, cfg) -> None:
        self.cfg = cfg
        n = self.layout.dims.n_layers if self.layout else 93
        self._rebuild()
        if self.layout.dims.n_layers != n:
            self.set_camera_preset("reset", animate=False)

    @atomic
    def set_trace(self, trace) -> None:
        old = self.trace
        self.trace = trace
        outside = getattr(trace, "prompt_in_language", None) is False  # a field of the trace (compute.trace)
        if outside != self.outside:
            self.outside = outside
            self.overlay_version += 1  # the header's line
        self.trace_version = self.gl.version + 1  # frames of at least this version show this trace
        if trace is not None:
            self.pass_index = min(self.pass_index, len(trace.passes) - 1)
        if trace is None or old is None or not self.same_shapes(old, trace):
            self._rebuild()
        else:  # same grids: only the colour buffers of the cells change
            self.recolour(("cells", "experts"))

    def same_shapes(self, a, b) -> bool:
        """Whether traces a and b fill the same grids at the shown layer (a new trace then only recolours)."""
        if len(a.tokens) != len(b.tokens) or len(a.passes) != len(b.passes) or a.n_layers != b.n_layers:
            return False
        la, lb = a.passes[0].layers[self.layer0].tensors, b.passes[0].layers[self.layer0].tensors
        return {k: getattr(v, "shape", None) for k, v in la.items()} == {
            k: getattr(v, "shape", None) for k, v in lb.items()}

    def set_layer(self, layer0: int, animate: bool = True) -> None:
        n = self.layout.dims.n_layers
        layer0 = int(min(max(layer0, 0), n - 1))
        if layer0 == self.layer0:
            return
        self.layer0 = layer0
        self.follow = None
        self._rebuild()
        self.camera.animate_to(self.camera.layer_camera(), animate, refit=self.camera.layer_camera)

    def set_pass(self, i: int) -> None:
        n = len(self.trace.passes) if self.trace is not None else 1
        self.pass_index = int(min(max(i, 0), n - 1))
        self.recolour(("cells", "experts"))

    def set_token(self, pos: int) -> None:
        self.token = int(pos)
        self.recolour(("cells", "experts"))

    def set_step_focus(self, step_kind: str | None) -> None:
        # the first step ever shown keeps the overview; later steps move the camera to what they are about
        same = step_kind == self.step_kind or self.step_kind is None
        self.step_kind = step_kind
        self._update_flow()
        self.recolour()
        boxes = highlights.step_focus_boxes(self.layout, step_kind)
        if boxes and not same:
            lo = np.min([b[0] for b in boxes], axis=0)
            hi = np.max([b[1] for b in boxes], axis=0)
            angles = (self.cam.azimuth, self.cam.elevation)
            camera = self.camera

            def focus(lo=lo, hi=hi, angles=angles):
                base = camlib.Camera(azimuth=angles[0], elevation=angles[1], fov=camera.cam.fov)
                return camlib.focus_in_band(lo, hi, base, camera.aspect(), camera.free_band(), min_dist=26.0)
            camera.animate_to(focus(), True, refit=focus)
        self.redraw()

    def set_label_scale(self, factor: float) -> None:
        """Fonts of the on-screen labels, header and legend (1 = normal; presentation mode uses more)."""
        self.label_scale = float(min(max(factor, 0.5), 3.0))
        self.camera.follow_shape()  # a larger header / legend: the framing keeps the model clear of them
        self.redraw()

    def focus_ids(self) -> tuple[str, ...]:
        """Ids of the blocks the current step highlights (the step table's blocks, scene/steps.py): their
        labels are always drawn, outlined, whatever else competes for the room."""
        return highlights.step_blocks(self.layout, self.step_kind) if self.layout is not None else ()

    def select_block(self, block_id: str | None, reveal: bool = True) -> None:
        """Select (outline) a block; with reveal, a selection not whole in the view is brought into it
        (reveal_block), whoever selected it (a click, the inspector, the step list, a view file)."""
        self.selected = block_id if block_id and block_id in self.layout.by_id else None
        self.update_outlines()
        if reveal and self.selected is not None:
            self.camera.reveal_block(self.selected)

    def select_expert(self, e: int) -> None:
        self.expert = int(e)
        self.update_outlines()

    # ================================================================ the parts' public faces
    def frame_block(self, block_id: str, animate: bool = True) -> bool:
        return self.camera.frame_block(block_id, animate)

    def box_camera(self, lo, hi, fill: float = nav.FRAME_FILL) -> camlib.Camera:
        return self.camera.box_camera(lo, hi, fill)

    def frame_box(self, lo, hi, animate: bool = True) -> None:
        self.camera.frame_box(lo, hi, animate)

    def block_in_view(self, block_id: str, cam: camlib.Camera | None = None) -> bool:
        return self.camera.block_in_view(block_id, cam)

    def reveal_block(self, block_id: str, animate: bool = True) -> bool:
        return self.camera.reveal_block(block_id, animate)

    def free_band(self, width: float | None = None, height: float | None = None,
                  scale: float = 1.0) -> tuple[float, float] | None:
        return self.camera.free_band(width, height, scale)

    def set_camera_preset(self, name: str, animate: bool = True) -> None:
        self.camera.set_preset(name, animate)

    def camera_state(self) -> dict:
        return self.camera.state()

    def set_camera_state(self, state: dict) -> None:
        self.camera.set_state(state)

    def precolour(self, trace) -> None:
        self.colours.precolour(trace)

    def recolour(self, families: tuple[str, ...] = ("stack", "cells", "experts")) -> None:
        self.colours.recolour(families)

    def apply_colours(self) -> None:
        self.colours.apply()

    def render_image(self, w: int, h: int, transparent: bool = False, theme: str = "dark"):
        return self.exporter.render_image(w, h, transparent, theme)

    def render_image_async(self, w: int, h: int, transparent: bool = False, theme: str = "dark",
                           after=None, done=None):
        return self.exporter.render_image_async(w, h, transparent, theme, after, done)

    def keeping_export_buffers(self):
        return self.exporter.keeping_export_buffers()

    def export_job_done(self, job, result, error) -> None:
        """A slot of this UI-thread object, so that the render thread's job_done is delivered on the UI thread."""
        self.exporter.job_done(job, result, error)

    def pick_at(self, x: float, y: float):
        return self.pointer.pick_at(x, y)

    def tooltip_text(self, hit) -> str:
        return self.pointer.tooltip_text(hit)

    def overlay_input(self, camera=None, lens: bool = True):
        return self.texts.overlay_input(camera, lens)

    # ================================================================ building / colouring
    @atomic
    def _rebuild(self) -> None:
        self.layout = build_layout(self.cfg, self.layer0, self.trace, self.pass_index)
        self.layer0 = self.layout.layer
        self.picker = Picker(self.layout)
        self.families = build_families(self.layout, self._geometry)
        # the colours follow in the next frame (apply_colours, in the render thread): not on the UI thread
        self.colours.reset(self.families)
        for name, mesh in self.meshes.items():
            fam = self.families.get(name)
            if fam is None:
                mesh.setVisible(False)
                continue
            mesh.setVisible(True)
            mesh.set_geometry(fam.verts, fam.normals, fam.faces)  # uploads only the arrays that changed
        if self.selected and self.selected not in self.layout.by_id:
            self.selected = None
        self.hovered = None
        self.hover_cell = None
        self._update_flow()
        self._update_link()
        self.explain_items.update(self.layout, self.explanation)
        self.update_outlines()

    def _update_link(self) -> None:
        """Thin lines from the selected slab of the stack to the exploded layer's backdrop."""
        lay = self.layout
        slab = lay.by_id.get(f"L{lay.layer + 1}/stack.layer")
        bd = lay.by_id.get(f"L{lay.layer + 1}/backdrop")
        if slab is None or bd is None:
            self._set_lines(self.line_link, None)
            return
        c = np.array(palette.role(slab.role))
        self.line_link.setData(color=(min(c[0] * 1.3, 1), min(c[1] * 1.3, 1), min(c[2] * 1.3, 1), 0.6))
        x0, x1 = slab.hi[0], bd.lo[0]
        pts = []
        for y in (slab.lo[1], slab.hi[1]):
            for zs, zb in ((slab.lo[2], bd.lo[2]), (slab.hi[2], bd.hi[2])):
                pts += [(x0, y, zs), (x1, bd.center[1] if y > 0 else bd.lo[1], zb)]
        self._set_lines(self.line_link, np.array(pts, np.float32))

    def drawn_trace(self):
        """The trace the cells show (None when it does not match the shown model's structure)."""
        return self.trace if self.layout is not None and self.layout.trace_ok else None

    def set_explanation(self, overlay) -> None:
        """Draw an explanation's logit-lens column and contribution route (a scene.explain_overlay.ExplainOverlay,
        plain data), or nothing (None)."""
        band = self.free_band() if self.camera.refit is not None and self.isVisible() else None
        self.explanation = overlay
        self.explain_items.update(self.layout, overlay)
        self.overlay_version += 1  # the lens words and the header line
        if band is not None and self.free_band() != band:  # the header's line came or went: frame for it
            self.camera.follow_shape()
        self.recolour(("stack",))  # the route dims the layers it does not pass through

    def stack_emphasis(self) -> set[int] | None:
        """The layers the stack shows bright (the route's, or the step's mixers); None: all."""
        dims = self.layout.dims
        ov = self.explanation
        if ov is not None and ov.route:
            return route_glow.lit_layers(ov.lit)
        if self.step_kind == "kda_state":
            return {i + 1 for i, m in enumerate(dims.mixers) if m == "kda"}
        if self.step_kind == "mla_cache":
            return {i + 1 for i, m in enumerate(dims.mixers) if m == "mla"}
        if self.step_kind == "decode_cache":
            return None
        return None

    # ================================================================ lines: outlines, follow, flow
    def update_outlines(self) -> None:
        """The selection, hover, step and follow lines again from the view's state (and a frame)."""
        lay = self.layout
        self.step_block_ids = highlights.step_blocks(lay, self.step_kind)
        self._set_lines(self.line_step, highlights.step_outlines(lay, self.step_block_ids))
        self._set_lines(self.line_sel, highlights.block_outline(lay, self.selected))
        hv = highlights.block_outline(lay, self.hovered) if self.hovered != self.selected else None
        if self.hover_cell is not None:  # and the cell under the cursor
            hb = lay.by_id.get(self.hover_cell[0])
            if hb is not None and hb.grid is not None:
                r, c = self.hover_cell[1], self.hover_cell[2]
                cell = highlights.cell_box(hb, r, r, c, c)
                hv = cell if hv is None else np.concatenate([hv, cell])
        self._set_lines(self.line_hover, hv)
        self._set_lines(self.line_follow, highlights.follow_segments(lay, self.follow, self.expert))
        self.redraw()

    def _update_flow(self) -> None:
        self.flow_edges = self.layout.flow if self.step_kind in highlights.FLOW_STEPS else []
        pts, heads = highlights.flow_lines(self.layout, self.flow_edges)
        self._set_lines(self.line_flow, pts)
        if heads is not None:
            self.flow_heads.setData(pos=heads)
        self.flow_heads.setVisible(heads is not None)

    @staticmethod
    def _set_lines(item, pts) -> None:
        if pts is None or len(pts) == 0:
            item.setVisible(False)
        else:
            item.setData(pos=np.asarray(pts, np.float32))
            item.setVisible(True)
