"""GL items of the scene: a merged family mesh with a headlight shader, recoloured by colour buffer only.

pyqtgraph's GLMeshItem does the buffer work (QOpenGLBuffer uploads, attribute binding); this subclass
feeds it prepared arrays and marks only the buffers that changed as dirty, so a recolour re-uploads the
colour buffer and nothing else (docs/spec/platform.md).
"""
from __future__ import annotations

import threading

import numpy as np
from OpenGL import GL
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.GLGraphicsItem import GLOptions
from pyqtgraph.opengl.items.GLLinePlotItem import GLLinePlotItem
from pyqtgraph.opengl.items.GLMeshItem import DirtyFlag, GLMeshItem
from pyqtgraph.opengl.items.GLScatterPlotItem import GLScatterPlotItem

# Frames are drawn in a render thread (scene/frames.py) while the UI thread changes the items. The UI thread
# changes the items it owns under SCENE_LOCK (a few attribute assignments); the render thread, under the same
# lock, copies their state into render twins (make_twin / sync_twin: references, no array copies) and then
# draws the twins without any lock, so neither thread waits for the other's work. PAINT_LOCK lets one painter
# (the render thread or an export on the UI thread) use the twins' GL buffers at a time.
SCENE_LOCK = threading.RLock()
PAINT_LOCK = threading.Lock()

_HEADLIGHT = None


def headlight_shader() -> shaders.ShaderProgram:
    """Flat colour lit by a light at the camera plus a soft key light from above-left (view space)."""
    global _HEADLIGHT
    if _HEADLIGHT is None:
        _HEADLIGHT = shaders.ShaderProgram("k3_headlight", [
            # Lighting per vertex: every face is flat (its 4 vertices share one normal), so the light is the
            # same at every fragment of it and the fragment shader only copies the colour, which on a
            # software rasteriser is most of a frame's cost.
            shaders.VertexShader("""
                uniform mat4 u_mvp;
                uniform mat3 u_normal;
                attribute vec4 a_position;
                attribute vec3 a_normal;
                attribute vec4 a_color;
                varying vec4 v_color;
                void main() {
                    vec3 n = normalize(u_normal * a_normal);
                    float head = abs(n.z);
                    float key = max(dot(n, normalize(vec3(-0.35, 0.6, 0.7))), 0.0);
                    float light = 0.38 + 0.42 * head + 0.28 * key;
                    v_color = vec4(min(a_color.rgb * light, vec3(1.0)), a_color.a);
                    gl_Position = u_mvp * a_position;
                }
            """),
            shaders.FragmentShader("""
                #ifdef GL_ES
                precision mediump float;
                #endif
                varying vec4 v_color;
                void main() {
                    gl_FragColor = v_color;
                }
            """),
        ])
    return _HEADLIGHT


class FamilyMesh(GLMeshItem):
    """One merged indexed mesh (many boxes). set_geometry uploads everything; set_colors only colours."""

    def __init__(self, **kwds):
        kwds.setdefault("shader", headlight_shader())
        # opaque, and back faces culled: every box is closed and wound counter-clockwise seen from outside
        # (scene/geometry.py), so the hidden half of its triangles is never rasterised
        kwds.setdefault("glOptions", {**GLOptions["opaque"], GL.GL_CULL_FACE: True})
        super().__init__(**kwds)
        self._dirty = DirtyFlag(0)

    def set_geometry(self, verts: np.ndarray, normals: np.ndarray, faces: np.ndarray,
                     colors: np.ndarray | None = None) -> DirtyFlag:
        """New geometry; only the buffers whose array is not the one already held are uploaded again (cached
        geometry hands back the same arrays: scene/geometry.py), and None when nothing changed. colors=None:
        the caller sets the colours (set_colors) before the next frame is drawn. Returns what will be uploaded."""
        arrays = {DirtyFlag.POSITION: ("vertexes", np.ascontiguousarray(verts, np.float32)),
                  DirtyFlag.NORMAL: ("normals", np.ascontiguousarray(normals, np.float32)),
                  DirtyFlag.FACES: ("faces", np.ascontiguousarray(faces, np.uint32))}
        if colors is not None:
            arrays[DirtyFlag.COLOR] = ("colors", np.ascontiguousarray(colors, np.float32))
        changed = DirtyFlag(0)
        with SCENE_LOCK:
            for flag, (name, arr) in arrays.items():
                if getattr(self, name) is not arr:
                    setattr(self, name, arr)
                    changed |= flag
            self._dirty |= changed
        if changed:
            self.update()
        return changed

    def set_colors(self, colors: np.ndarray, notify: bool = True):
        """New colours (the colour buffer only); notify=False when the caller is drawing the frame itself."""
        colors = np.ascontiguousarray(colors, np.float32)
        with SCENE_LOCK:
            self.colors = colors
            self._dirty |= DirtyFlag.COLOR
        if notify:
            self.update()

    def parseMeshData(self) -> DirtyFlag:  # GLMeshItem asks which buffers to upload
        d, self._dirty = self._dirty, DirtyFlag(0)
        return d

    def n_triangles(self) -> int:
        return 0 if self.faces is None else len(self.faces)


class Lines(GLLinePlotItem):
    """GLLinePlotItem whose data changes are atomic for the render thread."""

    def setData(self, **kwds):
        with SCENE_LOCK:
            super().setData(**kwds)


class Dots(GLScatterPlotItem):
    """GLScatterPlotItem whose data changes are atomic for the render thread."""

    def setData(self, **kwds):
        with SCENE_LOCK:
            super().setData(**kwds)


# what a twin copies from its item, per class (array references; the UI side always assigns new arrays)
_DATA = {
    FamilyMesh: ("vertexes", "normals", "faces", "colors"),
    Lines: ("pos", "color", "width", "mode", "antialias"),
    Dots: ("pos", "color", "size", "pxMode"),
}
_DIRTY = {FamilyMesh: "_dirty", Lines: "dirty_bits", Dots: "dirty_bits"}


def make_twin(item):
    """A render-side copy of a scene item (same class, its own GL buffers); created on the UI thread."""
    if type(item) not in _DATA:
        raise TypeError(f"{type(item).__name__} has no render twin (use FamilyMesh, Lines or Dots)")
    return type(item)()


def sync_twin(twin, item) -> None:
    """Bring twin up to item's state: data, visibility, GL options, dirty flags (moved from item to twin, so
    each change is uploaded once). Caller holds SCENE_LOCK."""
    for key in _DATA[type(item)]:
        setattr(twin, key, getattr(item, key))
    flag = _DIRTY[type(item)]
    bits = getattr(item, flag)
    setattr(twin, flag, getattr(twin, flag) | bits)
    setattr(item, flag, type(bits)(0))
    twin._GLGraphicsItem__visible = item.visible()
    twin._GLGraphicsItem__glOpts = item._GLGraphicsItem__glOpts
