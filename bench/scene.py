"""Scene performance: prints one JSON object.

    python bench/scene.py            # under Xvfb; starts its own Xvfb when DISPLAY is unset

frame_ms_median   one redraw of the default view (whole stack + exploded MoE layer with all 896 experts, labels)
                  through the event loop (update() -> render thread -> frame on screen -> frameSwapped), 1280x800
render_phases_ms  the render thread's phases of the last steady frame (snapshot incl. cell colours, draw calls,
                  rasterisation + read-back, labels)
floor_ms_median   the same triangles as ONE merged GLMeshItem (same shader, same camera, same widget size)
frame_over_floor  ratio of the two, measured in the same run, interleaved rounds (target <= 1.25)
select_layer_ms   set_layer() to layers of other shapes (3, 36, 0, 92, 50, 36), wall ms: layout rebuild + geometry
                  (the cell colours are computed by the render thread for the next frame; uploads happen there)
layer_step_cpu_ms set_layer() one layer up (PgUp) through layers 30-60, UI-thread CPU ms (time.thread_time: a
                  loaded machine's waits do not count); geometry of a layer of the same shape is reused
layer_colours_ms  what the render thread computes for the first frame of a new layer (its cell colours)
pick_ms           one hover pick (ray-AABB over every block + cell index)
recolour_ms       set_trace() with a new trace of the same shapes, UI-thread part (the colours themselves are
                  computed by the render thread for the next frame: render_phases_ms.snapshot_ms)
set_trace_cpu_ms  the same, UI-thread CPU ms
orbit_frame_ms    one frame while orbiting (camera changed: GL + the label overlay laid out and painted again)
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from xdisplay import x_display  # noqa: E402


def main() -> dict:
    with x_display("bench/scene.py"):
        return _run()


def _run() -> dict:
    import numpy as np
    from PySide6.QtCore import QCoreApplication, QElapsedTimer, Qt
    from PySide6.QtWidgets import QApplication

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication([])
    import pyqtgraph.opengl as gl

    from compute.config import load_default
    from compute.engine import ToyK3
    from compute.trace import Knobs
    from scene.gl_items import FamilyMesh
    from scene.view import SceneView

    cfg = load_default()
    engine = ToyK3()
    trace = engine.run("로봇이 컵을 집었다", max_new_tokens=2)
    trace2 = engine.run("로봇이 컵을 집었다", max_new_tokens=2, knobs=Knobs(alpha=0.5, beta=0.9))

    view = SceneView()
    view.resize(1280, 800)
    view.show()
    view.set_config(cfg)
    view.set_trace(trace)
    view.set_layer(36, animate=False)
    view.set_camera_preset("reset", animate=False)

    view.apply_colours()  # the colours the first frame would compute: the floor draws them too
    # the floor: all triangles of the scene's family meshes as ONE GLMeshItem in an identical widget
    floor = gl.GLViewWidget()
    floor.resize(1280, 800)
    floor.setBackgroundColor(view.gl.opts["bgcolor"])
    verts, norms, faces, cols = [], [], [], []
    off = 0
    for m in view.meshes.values():
        if m.visible() and m.vertexes is not None:
            verts.append(m.vertexes)
            norms.append(m.normals)
            faces.append(m.faces + off)
            cols.append(m.colors)
            off += len(m.vertexes)
    merged = FamilyMesh()
    merged.set_geometry(np.concatenate(verts), np.concatenate(norms), np.concatenate(faces), np.concatenate(cols))
    floor.addItem(merged)
    for k in ("center", "distance", "azimuth", "elevation", "fov"):
        floor.opts[k] = view.gl.opts[k]
    n_tris = int(sum(len(f) for f in faces))

    def one_frame(widget, done):
        done.clear()
        timer = QElapsedTimer()
        timer.start()
        widget.update()
        while not done:
            app.processEvents()
        return timer.nsecsElapsed() / 1e6

    view.move(0, 0)
    floor.move(40, 40)
    floor.show()
    view.show()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.5:
        app.processEvents()
    done_v, done_f = [], []
    view.gl.frameSwapped.connect(lambda: done_v.append(1))
    floor.frameSwapped.connect(lambda: done_f.append(1))
    for _ in range(3):  # warm up both
        one_frame(view.gl, done_v)
        one_frame(floor, done_f)
    scene_ms, floor_ms = [], []
    for _ in range(30):  # interleaved frame by frame: both see the same machine load
        scene_ms.append(one_frame(view.gl, done_v))
        floor_ms.append(one_frame(floor, done_f))
    phases = {k: round(v, 2) for k, v in view.gl.renderer.timings.items()}
    floor.hide()

    # orbiting: the camera changes every frame, so the label overlay is re-laid-out and re-painted too
    from scene import camera as camlib
    orbit_ms = []
    for i in range(12):
        cam = camlib.Camera.from_dict(view.camera_state())
        cam.azimuth += 0.7
        done_v.clear()
        timer = QElapsedTimer()
        timer.start()
        view.camera.apply(cam)
        while not done_v:
            app.processEvents()
        orbit_ms.append(timer.nsecsElapsed() / 1e6)
    view.set_camera_preset("reset", animate=False)

    sel = []
    for layer in (3, 36, 0, 92, 50, 36):
        t = time.perf_counter()
        view.set_layer(layer, animate=False)
        sel.append((time.perf_counter() - t) * 1e3)
    step_cpu, colours_ms = [], []
    for layer in range(30, 61):
        t = time.thread_time()
        view.set_layer(layer, animate=False)
        step_cpu.append((time.thread_time() - t) * 1e3)
        t = time.thread_time()
        view.apply_colours()  # here instead of in the render thread, to time it
        colours_ms.append((time.thread_time() - t) * 1e3)
    view.set_layer(36, animate=False)

    rng = np.random.default_rng(0)
    picks = []
    for _ in range(300):
        x, y = rng.uniform(0, 1280), rng.uniform(0, 800)
        t = time.perf_counter()
        view.pick_at(x, y)
        picks.append((time.perf_counter() - t) * 1e3)

    rec, rec_cpu = [], []
    for i in range(8):
        t, c = time.perf_counter(), time.thread_time()
        view.set_trace(trace2 if i % 2 == 0 else trace)
        rec.append((time.perf_counter() - t) * 1e3)
        rec_cpu.append((time.thread_time() - c) * 1e3)

    fm, fl = statistics.median(scene_ms), statistics.median(floor_ms)
    result = dict(
        frame_ms_median=round(fm, 2), floor_ms_median=round(fl, 2), frame_over_floor=round(fm / fl, 3),
        select_layer_ms=round(statistics.median(sel), 2), pick_ms=round(statistics.median(picks), 3),
        layer_step_cpu_ms=round(statistics.median(step_cpu), 2),
        layer_colours_ms=round(statistics.median(colours_ms), 2),
        recolour_ms=round(statistics.median(rec), 2), set_trace_cpu_ms=round(statistics.median(rec_cpu), 2),
        orbit_frame_ms=round(statistics.median(orbit_ms), 2),
        render_phases_ms=phases, triangles=n_tris, blocks=len(view.layout.blocks),
        widget="1280x800", gl_renderer=_renderer(view), load_average=round(os.getloadavg()[0], 2))
    return result


def _renderer(view) -> str:
    try:
        from OpenGL import GL

        from scene.gl_widget import _ExportContext
        ctx = _ExportContext.get()
        ctx.make_current()
        r = GL.glGetString(GL.GL_RENDERER)
        ctx.done_current()
        return r.decode() if isinstance(r, bytes) else str(r)
    except Exception:  # noqa: BLE001 - informative only
        return "unknown"


if __name__ == "__main__":
    print(json.dumps(main()))
