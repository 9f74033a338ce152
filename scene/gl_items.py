"""GL items of the scene: a merged family mesh with a headlight shader, recoloured by colour buffer only.

pyqtgraph's GLMeshItem does the buffer work (QOpenGLBuffer uploads, attribute binding); this subclass
feeds it prepared arrays and marks only the buffers that changed as dirty, so a recolour re-uploads the
colour buffer and nothing else (spec/platform.md).
"""
from __future__ import annotations

import numpy as np
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.items.GLMeshItem import DirtyFlag, GLMeshItem

_HEADLIGHT = None


def headlight_shader() -> shaders.ShaderProgram:
    """Flat colour lit by a light at the camera plus a soft key light from above-left (view space)."""
    global _HEADLIGHT
    if _HEADLIGHT is None:
        _HEADLIGHT = shaders.ShaderProgram("k3_headlight", [
            shaders.VertexShader("""
                uniform mat4 u_mvp;
                uniform mat3 u_normal;
                attribute vec4 a_position;
                attribute vec3 a_normal;
                attribute vec4 a_color;
                varying vec4 v_color;
                varying vec3 v_normal;
                void main() {
                    v_normal = normalize(u_normal * a_normal);
                    v_color = a_color;
                    gl_Position = u_mvp * a_position;
                }
            """),
            shaders.FragmentShader("""
                #ifdef GL_ES
                precision mediump float;
                #endif
                varying vec4 v_color;
                varying vec3 v_normal;
                void main() {
                    vec3 n = normalize(v_normal);
                    float head = abs(n.z);
                    float key = max(dot(n, normalize(vec3(-0.35, 0.6, 0.7))), 0.0);
                    float light = 0.38 + 0.42 * head + 0.28 * key;
                    gl_FragColor = vec4(min(v_color.rgb * light, vec3(1.0)), v_color.a);
                }
            """),
        ])
    return _HEADLIGHT


class FamilyMesh(GLMeshItem):
    """One merged indexed mesh (many boxes). set_geometry uploads everything; set_colors only colours."""

    def __init__(self, **kwds):
        kwds.setdefault("shader", headlight_shader())
        kwds.setdefault("glOptions", "opaque")
        super().__init__(**kwds)
        self._dirty = DirtyFlag(0)

    def set_geometry(self, verts: np.ndarray, normals: np.ndarray, faces: np.ndarray, colors: np.ndarray):
        self.vertexes = np.ascontiguousarray(verts, np.float32)
        self.normals = np.ascontiguousarray(normals, np.float32)
        self.faces = np.ascontiguousarray(faces, np.uint32)
        self.colors = np.ascontiguousarray(colors, np.float32)
        self._dirty = DirtyFlag.POSITION | DirtyFlag.NORMAL | DirtyFlag.FACES | DirtyFlag.COLOR
        self.update()

    def set_colors(self, colors: np.ndarray):
        self.colors = np.ascontiguousarray(colors, np.float32)
        self._dirty |= DirtyFlag.COLOR
        self.update()

    def parseMeshData(self) -> DirtyFlag:  # GLMeshItem asks which buffers to upload
        d, self._dirty = self._dirty, DirtyFlag(0)
        return d

    def n_triangles(self) -> int:
        return 0 if self.faces is None else len(self.faces)
