"""What a layer change and a new trace cost the UI thread and the GL buffers (issues 11 and 16): the cell colours
are computed off the UI thread, geometry the view already has is reused (not rebuilt, not uploaded again), a new
trace on the same layer uploads colours only, and the picture is the same whatever way the view got there."""
import threading

import numpy as np
import pytest
from PySide6.QtGui import QImage
from pyqtgraph.opengl.items.GLMeshItem import DirtyFlag
from scene_helpers import shown_view

W, H = 900, 560
GEOMETRY = DirtyFlag.POSITION | DirtyFlag.NORMAL | DirtyFlag.FACES


@pytest.fixture
def view(qtbot, k3_config):
    return shown_view(qtbot, k3_config, W, H)


@pytest.fixture(scope="module")
def trace_a_knob(engine):
    """trace_a's prompt with α and β overridden: the same shapes, other numbers (a slider move)."""
    from compute.trace import Knobs

    return engine.run("로봇이 컵을 집었다", max_new_tokens=2, knobs=Knobs(alpha=0.5, beta=0.9))


def pixels(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format_RGBA8888)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return arr.reshape(img.height(), img.bytesPerLine())[:, : img.width() * 4].reshape(
        img.height(), img.width(), 4).copy()


def on_screen(qtbot, view) -> None:
    """Wait until the frame of the current state is on screen (its buffers uploaded)."""
    view.camera.stop()
    target = view.gl.version
    view.gl.update()
    qtbot.waitUntil(lambda: view.gl.shown_version >= target, timeout=10000)


def record_uploads(view) -> list:
    """(family, dirty flags) of every buffer upload the render twins of the family meshes make from now on."""
    uploads = []
    names = {id(mesh): name for name, mesh in view.meshes.items()}
    for item, twin in view.gl._twins:
        if id(item) in names:
            def upload(bits, twin=twin, name=names[id(item)], original=twin.upload_vertex_buffers):
                uploads.append((name, bits))
                return original(bits)
            twin.upload_vertex_buffers = upload
    return uploads


def same_shape_layers(view, trace) -> tuple[int, int]:
    """Two neighbouring layers whose exploded layer has the same geometry (same type, same AttnRes inputs)."""
    from scene.geometry import block_signature
    from scene.layout import build_layout

    def signature(layer0):
        lay = build_layout(view.cfg, layer0, trace)
        return [block_signature(b) for b in lay.blocks if b.family == "cells"]
    for layer0 in range(38, 90):
        if layer0 != view.layer0 and signature(layer0) == signature(layer0 + 1):
            return layer0, layer0 + 1
    raise AssertionError("no two neighbouring layers of the same shape")


def test_a_layer_change_computes_no_cell_colours_on_the_ui_thread(view, qtbot, trace_a, monkeypatch):
    from scene import colouring

    view.set_trace(trace_a)
    on_screen(qtbot, view)
    threads = []
    original = colouring.block_colors

    def spy(*args, **kwargs):
        threads.append(threading.current_thread() is threading.main_thread())
        return original(*args, **kwargs)
    monkeypatch.setattr(colouring, "block_colors", spy)
    view.set_layer(50, animate=False)
    assert not any(threads), "set_layer computed cell colours on the UI thread"
    on_screen(qtbot, view)
    assert threads, "the frame of the new layer computed no cell colours"
    if view.gl.renderer.threaded:
        assert not any(threads), "the cell colours of the new layer were computed on the UI thread"


def test_a_layer_of_the_same_shape_reuses_the_geometry_and_uploads_colours_only(view, qtbot, trace_a):
    view.set_trace(trace_a)
    a, b = same_shape_layers(view, trace_a)
    view.set_layer(a, animate=False)
    on_screen(qtbot, view)
    verts = {name: mesh.vertexes for name, mesh in view.meshes.items()}
    uploads = record_uploads(view)
    view.set_layer(b, animate=False)
    on_screen(qtbot, view)
    assert view.layout.layer == b
    assert view.meshes["cells"].vertexes is verts["cells"]
    assert view.meshes["experts"].vertexes is verts["experts"]
    by_family = {}
    for name, bits in uploads:
        by_family[name] = by_family.get(name, DirtyFlag(0)) | bits
    assert not by_family.get("cells", DirtyFlag(0)) & GEOMETRY, f"cells geometry uploaded again: {uploads}"
    assert not by_family.get("experts", DirtyFlag(0)) & GEOMETRY, f"experts geometry uploaded again: {uploads}"
    assert DirtyFlag.COLOR in by_family.get("cells", DirtyFlag(0)), "the new layer's cell colours were not uploaded"


def test_a_new_trace_on_the_same_layer_updates_colours_only(view, qtbot, trace_a, trace_a_knob):
    view.set_trace(trace_a)
    view.set_layer(40, animate=False)
    on_screen(qtbot, view)
    layout, families = view.layout, view.families
    before = {name: mesh.colors for name, mesh in view.meshes.items()}
    uploads = record_uploads(view)
    view.set_trace(trace_a_knob)
    on_screen(qtbot, view)
    assert view.layout is layout and view.families is families, "a trace of the same shapes rebuilt the layout"
    assert uploads and all(bits == DirtyFlag.COLOR for _, bits in uploads), uploads
    assert {name for name, _ in uploads} <= {"cells", "experts"}, uploads
    assert not np.array_equal(view.meshes["cells"].colors, before["cells"]), "the cells kept the old colours"


def test_the_picture_does_not_depend_on_the_way_to_a_layer(view, qtbot, trace_a):
    """Geometry reused from a layer of the same shape, colours computed in the render thread: the frame is
    pixel for pixel the one a view that built everything afresh for that layer draws."""
    from scene.geometry import GeometryCache

    view.labels_enabled = False
    view.set_trace(trace_a)
    a, b = same_shape_layers(view, trace_a)
    cam = dict(center=[18, 0, 9], distance=40.0, azimuth=-80.0, elevation=12.0, fov=38)
    view.set_layer(a, animate=False)
    on_screen(qtbot, view)
    view.set_layer(b, animate=False)  # the geometry built for layer a
    view.set_camera_state(cam)
    on_screen(qtbot, view)
    reused = pixels(view.render_image(640, 400))
    view._geometry = GeometryCache()  # nothing kept: layer b built afresh
    view.set_layer(3, animate=False)
    on_screen(qtbot, view)
    view.set_layer(b, animate=False)
    view.set_camera_state(cam)
    on_screen(qtbot, view)
    fresh = pixels(view.render_image(640, 400))
    assert np.array_equal(reused, fresh)
