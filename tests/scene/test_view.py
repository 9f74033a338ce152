"""SceneView in a real window under Xvfb: picking vs the renderer's matrices, real mouse drag / click / hover,
the inspector filled by a click, rendered pixels (KDA vs MLA, trace change, Korean labels)."""
import numpy as np
import pytest
from PySide6.QtCore import QAbstractAnimation, QCoreApplication, QPoint, QPointF, Qt
from PySide6.QtGui import QFontMetricsF, QImage, QMatrix4x4, QVector4D
from PySide6.QtTest import QTest
from scene_helpers import shown_view

W, H = 1100, 700
_KEEP = []  # AppState registers itself with app.i18n for good: keep it alive past the test that made it


def image_array(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format_RGBA8888)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    rows = arr.reshape(img.height(), img.bytesPerLine())[:, : img.width() * 4]
    return rows.reshape(img.height(), img.width(), 4).copy()  # a copy: the buffer dies with the QImage


@pytest.fixture
def view(qtbot, k3_config):
    return shown_view(qtbot, k3_config, W, H)


def renderer_project(v, point) -> QPointF:
    """Project with pyqtgraph's OWN matrices (what GL draws), independent of scene.camera."""
    g = v.gl
    region = (0, 0, g.width(), g.height())
    m: QMatrix4x4 = g.projectionMatrix(region, region) * g.viewMatrix()
    c = m.map(QVector4D(float(point[0]), float(point[1]), float(point[2]), 1.0))
    x, y = c.x() / c.w(), c.y() / c.w()
    return QPointF((x + 1) / 2 * g.width(), (1 - y) / 2 * g.height())


def settle(qtbot, v):
    """The camera where it is going: a move under way ends now, and what that posted has run."""
    v.camera.stop()
    QCoreApplication.processEvents()
    qtbot.waitUntil(lambda: v.camera.path is None and v.camera.anim.state() != QAbstractAnimation.State.Running,
                    timeout=5000)


@pytest.mark.parametrize("azim, elev", [(-90.0, 6.0), (-100.0, 14.0), (-65.0, 22.0), (-120.0, 10.0)])
def test_pick_finds_every_exploded_block_at_its_projected_centre(view, qtbot, azim, elev, trace_a):
    view.set_trace(trace_a)
    for layer0 in (36, 3):
        view.set_layer(layer0, animate=False)
        lay = view.layout
        lo, hi = lay.panel_bounds
        view.set_camera_state(dict(center=list((lo + hi) / 2), distance=30.0, azimuth=azim, elevation=elev, fov=38))
        settle(qtbot, view)
        blocks = lay.layer_blocks()
        assert len(blocks) > 20
        for b in blocks:
            # the centre of the block's front face (walls) or top face (plates)
            pt = b.center.copy()
            if b.orient == "wall":
                pt[1] = b.lo[1]
            else:
                pt[2] = b.hi[2]
            p = renderer_project(view, pt)
            hit = view.pick_at(p.x(), p.y())
            assert hit is not None and hit.block_id == b.id, (b.id, azim, elev, hit and hit.block_id)
            if b.grid is not None:
                assert 0 <= hit.cell[0] < b.grid[0] and 0 <= hit.cell[1] < b.grid[1]


def test_pick_reports_the_cell_under_the_cursor(view, qtbot, trace_a):
    view.set_trace(trace_a)
    view.set_layer(36, animate=False)
    view.set_camera_state(dict(center=[10, 0, 8], distance=22.0, azimuth=-90.0, elevation=8.0, fov=38))
    settle(qtbot, view)
    b = view.layout.by_id["L37/kda.q_proj"]
    for r, c in [(0, 0), (3, 5), (b.grid[0] - 1, b.grid[1] - 1)]:
        centre = b.cell_centers()[r * b.grid[1] + c].copy()
        centre[1] = b.lo[1]
        p = renderer_project(view, centre)
        hit = view.pick_at(p.x(), p.y())
        assert (hit.block_id, hit.cell) == (b.id, (r, c))


def test_real_mouse_drag_orbits_and_shift_drag_pans(view, qtbot):
    before = view.camera_state()
    g = view.gl
    start = QPoint(W // 2, H // 2)
    QTest.mousePress(g, Qt.LeftButton, Qt.NoModifier, start)
    for i in range(1, 11):
        QTest.mouseMove(g, QPoint(start.x() + 12 * i, start.y() + 4 * i))
        QTest.qWait(5)
    QTest.mouseRelease(g, Qt.LeftButton, Qt.NoModifier, QPoint(start.x() + 120, start.y() + 40))
    after = view.camera_state()
    assert after["azimuth"] != pytest.approx(before["azimuth"], abs=5)
    assert after["elevation"] > before["elevation"] + 5
    assert after["center"] == pytest.approx(before["center"])
    # Shift + drag pans: the centre moves, the angles stay
    QTest.mousePress(g, Qt.LeftButton, Qt.ShiftModifier, start)
    for i in range(1, 11):
        QTest.mouseMove(g, QPoint(start.x() + 10 * i, start.y()))
        QTest.qWait(5)
    QTest.mouseRelease(g, Qt.LeftButton, Qt.ShiftModifier, QPoint(start.x() + 100, start.y()))
    panned = view.camera_state()
    assert panned["azimuth"] == pytest.approx(after["azimuth"])
    assert np.linalg.norm(np.subtract(panned["center"], after["center"])) > 0.5


def test_wheel_zooms_and_presets_animate(view, qtbot):
    d0 = view.camera_state()["distance"]
    QTest.mouseMove(view.gl, QPoint(W // 2, H // 2))
    from PySide6.QtGui import QWheelEvent
    ev = QWheelEvent(QPointF(W / 2, H / 2), QPointF(view.gl.mapToGlobal(QPoint(W // 2, H // 2))), QPoint(0, 0),
                     QPoint(0, 240), Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
    from PySide6.QtWidgets import QApplication
    QApplication.sendEvent(view.gl, ev)
    assert view.camera_state()["distance"] < d0 * 0.9
    view.set_camera_preset("top")
    qtbot.waitUntil(lambda: view.camera_state()["elevation"] > 60, timeout=2000)  # "top": from high above
    with pytest.raises(ValueError):
        view.set_camera_preset("nowhere")
    state = dict(center=[1.0, 2.0, 3.0], distance=17.0, azimuth=10.0, elevation=20.0, fov=38.0)
    view.set_camera_state(state)
    assert view.camera_state() == state
    # the GL widget draws with exactly that camera
    assert view.gl.opts["distance"] == 17.0 and view.gl.opts["azimuth"] == 10.0
    assert tuple(view.gl.opts["center"].toTuple()) == (1.0, 2.0, 3.0)


def test_real_click_selects_block_and_fills_inspector(view, qtbot, trace_a, k3_config):
    from app.docks.inspector import InspectorDock
    from app.state import AppState

    state = AppState()
    _KEEP.append(state)
    dock = InspectorDock(state)
    dock.set_config(k3_config)
    qtbot.addWidget(dock)
    dock.show()
    view.block_clicked.connect(state.select_block)
    view.cell_clicked.connect(dock.show_cell)
    state.set_trace(trace_a)
    view.set_trace(trace_a)
    view.set_layer(36, animate=False)
    view.set_camera_state(dict(center=[10, 0, 8], distance=22.0, azimuth=-90.0, elevation=8.0, fov=38))
    settle(qtbot, view)
    b = view.layout.by_id["L37/kda.q_proj"]
    row, col = 2, 5
    centre = b.cell_centers()[row * b.grid[1] + col].copy()
    centre[1] = b.lo[1]
    p = renderer_project(view, centre).toPoint()
    with qtbot.waitSignal(view.cell_clicked, timeout=2000) as cell_sig:
        with qtbot.waitSignal(view.block_clicked, timeout=2000) as blk:
            QTest.mouseClick(view.gl, Qt.LeftButton, Qt.NoModifier, p)
    assert blk.args == ["L37/kda.q_proj"]
    assert cell_sig.args == ["L37/kda.q_proj", row, col]
    assert state.block == "L37/kda.q_proj" and view.selected == "L37/kda.q_proj"
    assert dock.name_label.text() == "W_q"
    meta = dock.meta_label.text()
    assert "7,168 → 12,288" in meta  # real K3 shape
    assert dock.table.rowCount() > 0 and dock.table.columnCount() == 8
    # follow one number, checked against an independent float64 product of the trace's arrays
    pos = row  # the prompt fits the drawn rows: row == absolute position, processed by the prefill
    x = np.asarray(trace_a.passes[0].layers[36].tensors["norm.mixer"], np.float64)[pos]
    w = np.asarray(trace_a.weights[36]["kda.q_proj"], np.float64)[:, col]
    expected = float(sum(x[i] * w[i] for i in range(len(x))))
    text = dock.follow_label.text()
    assert f"{expected:+.10f}" in text
    import re
    assert len(re.findall(r"x\[\d+\] · W\[\d+,\d+\] = ", text)) == len(x)  # one term per input feature
    assert f"{x[0] * w[0]:+.4f}" in text
    # the input row and the weight column are outlined in 3D
    assert view.follow == ("L37/kda.q_proj", row, col) and view.line_follow.visible()


def test_hover_tooltip_names_block_cell_and_value(view, qtbot, trace_a):
    view.set_trace(trace_a)
    view.set_layer(36, animate=False)
    view.set_camera_state(dict(center=[10, 0, 8], distance=22.0, azimuth=-90.0, elevation=8.0, fov=38))
    settle(qtbot, view)
    b = view.layout.by_id["L37/norm.mixer"]
    centre = b.cell_centers()[1 * b.grid[1] + 3].copy()
    centre[1] = b.lo[1]
    p = renderer_project(view, centre).toPoint()
    with qtbot.waitSignal(view.block_hovered, timeout=2000) as sig:
        QTest.mouseMove(view.gl, p)
    assert sig.args == ["L37/norm.mixer"]
    tip = view.last_tooltip
    value = float(trace_a.passes[0].layers[36].tensors["norm.mixer"][1, 3])
    assert "RMSNorm" in tip and "feature 3" in tip and trace_a.tokens[1][0] in tip
    assert f"{value:+.4f}" in tip
    assert view.hovered == "L37/norm.mixer"
    # the cursor leaving the 3D view (Qt sends it a Leave event) clears the hover
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication
    with qtbot.waitSignal(view.block_hovered, timeout=2000) as left:
        QApplication.sendEvent(view.gl, QEvent(QEvent.Leave))
    assert left.args == [""] and view.hovered is None and not view.line_hover.visible()


def test_click_on_slab_and_pgup_emit_layer(view, qtbot):
    view.set_camera_preset("stack", animate=False)
    settle(qtbot, view)
    slab = view.layout.by_id["L50/stack.layer"]
    pt = slab.center.copy()
    pt[1] = slab.lo[1]
    p = renderer_project(view, pt).toPoint()
    with qtbot.waitSignal(view.layer_clicked, timeout=2000) as sig:
        QTest.mouseClick(view.gl, Qt.LeftButton, Qt.NoModifier, p)
    assert sig.args == [49]
    view.set_layer(10, animate=False)
    with qtbot.waitSignal(view.layer_clicked, timeout=2000) as sig2:
        QTest.keyClick(view.gl, Qt.Key_PageUp)
    assert sig2.args == [11] and view.layer0 == 11
    view.camera.stop()
    az = view.camera_state()["azimuth"]
    QTest.keyClick(view.gl, Qt.Key_Left)
    assert view.camera_state()["azimuth"] == pytest.approx(az + 5.0)
    d = view.camera_state()["distance"]
    QTest.keyClick(view.gl, Qt.Key_Minus)
    assert view.camera_state()["distance"] > d


def _panel_region(view, w, h):
    from scene.camera import project

    lo, hi = view.layout.panel_bounds
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    px, _ = project(corners, view.cam, w, h)
    x0, y0 = np.clip(px.min(axis=0), 0, [w - 1, h - 1]).astype(int)
    x1, y1 = np.clip(px.max(axis=0), 0, [w - 1, h - 1]).astype(int)
    return x0, y0, x1, y1


def test_kda_and_mla_layers_render_differently(view, qtbot, trace_a):
    view.set_trace(trace_a)
    view.labels_enabled = False
    cam = dict(center=[16, 0, 14], distance=48.0, azimuth=-95.0, elevation=12.0, fov=38)
    view.set_layer(36, animate=False)
    view.set_camera_state(cam)
    kda = image_array(view.render_image(640, 400)).astype(int)
    view.set_layer(3, animate=False)
    view.set_camera_state(cam)
    mla = image_array(view.render_image(640, 400)).astype(int)
    diff = np.abs(kda - mla)[..., :3].max(axis=-1) > 20
    assert diff.mean() > 0.05
    # the background is the palette's, and something is drawn
    assert (np.abs(kda[..., :3] - kda[5, 5, :3]).max(axis=-1) > 20).mean() > 0.15


def test_cell_colours_change_with_the_trace_and_not_elsewhere(view, qtbot, trace_a, trace_b):
    view.labels_enabled = False
    view.set_layer(36, animate=False)
    view.set_trace(trace_a)
    lo, hi = view.layout.panel_bounds
    cam = dict(center=list((lo + hi) / 2), distance=75.0, azimuth=-90.0, elevation=8.0, fov=38)
    view.set_camera_state(cam)
    a = image_array(view.render_image(800, 500)).astype(int)
    view.set_trace(trace_b)
    view.set_camera_state(cam)
    b = image_array(view.render_image(800, 500)).astype(int)
    x0, y0, x1, y1 = _panel_region(view, 800, 500)
    changed = np.abs(a - b)[y0:y1, x0:x1, :3].max(axis=-1) > 20
    assert changed.mean() > 0.05
    # the cell under a projected cell centre has the diverging colour of the engine's value
    from scene import palette
    from scene.camera import project
    blk = view.layout.by_id["L37/norm.ffn"]
    vals = np.asarray(trace_b.passes[0].layers[36].tensors["norm.ffn"], float)
    r, c = int(np.argmax(np.abs(vals[:, 0]))), 0  # the most saturated cell of column 0
    centre = blk.cell_centers()[r * blk.grid[1] + c].copy()
    centre[1] = blk.lo[1]
    pix, _ = project(centre[None], view.cam, 800, 500)
    px, py = pix[0]
    assert 0 <= px < 800 and 0 <= py < 500
    want = palette.diverging(np.array([vals[r, c]]), np.abs(vals).max())[0, :3] * 255
    got = b[int(py), int(px), :3]
    # shading scales brightness: compare hue direction (which channel dominates), not the exact value
    assert np.argmax(got) == np.argmax(want) and np.argmin(got) == np.argmin(want)


def test_korean_labels_render_glyphs(view, qtbot):
    from app import i18n
    from scene.labels import make_font

    try:
        i18n.set_language("ko")
        view.set_translator(i18n.tr)
        title = i18n.tr("scene.rows_cols")
        font = make_font(12)
        fm = QFontMetricsF(font)
        assert all(fm.inFontUcs4(ord(ch)) for ch in title if not ch.isspace())  # a CJK font has the glyphs
        img = image_array(view.render_image(900, 560)).astype(int)
        bg = img[550, 890, :3]
        # the subtitle row of the title block (top-left: the layer line and the rows/cols note) has glyph pixels
        region = img[26:42, 10:300, :3]
        assert (np.abs(region - bg).max(axis=-1) > 60).mean() > 0.02
        view.set_translator(lambda key, **fmt: "")
        empty = image_array(view.render_image(900, 560)).astype(int)[26:42, 10:300, :3]
        assert (np.abs(region - empty).max(axis=-1) > 60).mean() > 0.02
    finally:
        i18n.set_language("en")


def test_render_image_size_transparency_and_view_restored(view, qtbot):
    cam = view.camera_state()
    img = view.render_image(320, 200, transparent=True)
    assert (img.width(), img.height()) == (320, 200)
    arr = image_array(img)
    assert arr[2, 318, 3] == 0  # background corner is transparent
    assert arr[..., 3].max() == 255  # the scene is opaque
    assert view.camera_state() == cam
    with pytest.raises(ValueError):
        view.render_image(0, 10)


def test_step_focus_draws_flow_lines_and_moves_the_camera(view, qtbot, trace_a):
    view.set_trace(trace_a)
    c_first = view.camera_state()
    view.set_step_focus("prefill")
    assert view.flow_edges and view.line_flow.visible()
    assert view.camera_state() == c_first  # the first step keeps the overview the user sees at start
    c0 = view.camera_state()
    view.set_step_focus("lm_head")
    qtbot.waitUntil(lambda: view.camera.anim.state() == view.camera.anim.State.Stopped, timeout=2000)
    assert view.camera_state()["center"] != c0["center"]
    assert not view.flow_edges


def test_switching_model_config_keeps_working(view, qtbot, trace_a):
    from compute.config import ModelConfig, available_configs

    view.set_trace(trace_a)
    view.set_config(ModelConfig.from_json(available_configs()["deepseek-v3"]))
    assert len([b for b in view.layout.blocks if b.part == "slab"]) == 61
    assert view.drawn_trace() is None  # a K3 trace is not painted onto DeepSeek-V3's blocks
    b = view.layout.by_id[f"L{view.layer0 + 1}/moe.experts"]
    view.set_camera_state(dict(center=list(b.center), distance=12.0, azimuth=-90.0, elevation=5.0, fov=38))
    settle(qtbot, view)
    pt = b.cell_centers()[3 * b.grid[1] + 5].copy()
    pt[1] = b.lo[1]
    p = renderer_project(view, pt).toPoint()
    QTest.mouseMove(view.gl, QPoint(2, 2))  # Qt drops a move to where the cursor already is
    QTest.mouseMove(view.gl, p)
    qtbot.waitUntil(lambda: view.hovered == b.id, timeout=3000)  # the pointer is on DeepSeek-V3's expert grid
    # a K3 trace is not DeepSeek-V3's: the cell says it has no number, and no expert score is made up
    qtbot.waitUntil(lambda: view.tr("scene.tip.no_value") in view.last_tooltip, timeout=3000)
    assert "Expert" not in view.last_tooltip.split("\n", 1)[1]
    assert "s = " not in view.last_tooltip and "s=" not in view.last_tooltip
    img = view.render_image(400, 250)
    assert img.width() == 400
    view.set_config(ModelConfig.from_json(available_configs()["kimi-k3"]))
    assert view.drawn_trace() is trace_a


def test_click_on_an_expert_cell_emits_its_id_and_select_expert_outlines_it(view, qtbot, trace_a):
    view.set_trace(trace_a)
    view.set_layer(36, animate=False)
    b = view.layout.by_id["L37/moe.experts"]
    view.set_camera_state(dict(center=list(b.center), distance=12.0, azimuth=-90.0, elevation=5.0, fov=38))
    settle(qtbot, view)
    rows, cols = b.grid
    r, c = 3, 5
    centre = b.cell_centers()[r * cols + c].copy()
    centre[1] = b.lo[1]
    p = renderer_project(view, centre).toPoint()
    with qtbot.waitSignal(view.expert_clicked, timeout=2000) as sig:
        QTest.mouseClick(view.gl, Qt.LeftButton, Qt.NoModifier, p)
    assert sig.args == [r * cols + c]
    # the tooltip reports the engine's router score and whether the expert was selected (Qt drops a move to
    # where the cursor already is, so come from elsewhere; a widget's moves arrive through the X server)
    e = r * cols + c
    QTest.mouseMove(view.gl, QPoint(2, 2))
    QTest.mouseMove(view.gl, p)
    qtbot.waitUntil(lambda: f"Expert {e}" in view.last_tooltip, timeout=3000)
    s = float(trace_a.passes[0].layers[36].tensors["moe.router"][0][e])
    assert f"{s:.4f}" in view.last_tooltip
    view.select_expert(17)
    assert view.line_follow.visible()


def _screen_pixels(view, qtbot, before_count):
    """What the X server shows in the GL window (not an FBO re-render): the real on-screen frame."""
    from PySide6.QtWidgets import QApplication

    # painted and flushed to the X server; the grab is a later request on the same connection, so it sees it
    qtbot.waitUntil(lambda: view.gl.paint_count > before_count, timeout=5000)
    top_left = view.gl.mapToGlobal(QPoint(0, 0))
    shot = QApplication.primaryScreen().grabWindow(0, top_left.x(), top_left.y(), view.gl.width(), view.gl.height())
    return image_array(shot.toImage()).astype(int)


def test_on_screen_frame_has_the_labels_and_they_follow_the_state(view, qtbot, trace_a, trace_b):
    from scene import palette

    view.set_trace(trace_a)
    view.set_layer(36, animate=False)
    view.set_camera_state(dict(center=[10, 0, 8], distance=30.0, azimuth=-90.0, elevation=8.0, fov=38))
    settle(qtbot, view)
    n = view.gl.paint_count
    view.gl.update()
    shown = _screen_pixels(view, qtbot, n)
    assert shown.shape[:2] == (H, W)
    bg = np.array(palette.role("background")[:3]) * 255
    title = shown[8:40, 8:360, :3]  # the HUD title is drawn into the GL frame itself
    assert (np.abs(title - bg).max(axis=-1) > 60).mean() > 0.03
    view.labels_enabled = False
    n = view.gl.paint_count
    view.gl.update()
    bare = _screen_pixels(view, qtbot, n)
    # the same frame without labels: the title's glyph pixels are gone (the 3D content stays)
    assert (np.abs(bare[8:40, 8:360, :3] - title).max(axis=-1) > 60).mean() > 0.03
    # the title sits on an opaque panel: none of the 3D content under it shows in the labelled frame
    under = np.abs(bare[8:40, 8:360, :3] - bg).max(axis=-1) > 60
    panel = np.abs(title - bg).max(axis=-1) < 20
    assert not under.any() or panel[under].mean() > 0.5
    view.labels_enabled = True
    # another prompt: new cells and token names by the rows reach the screen, not a stale label picture
    n = view.gl.paint_count
    view.set_trace(trace_b)
    other = _screen_pixels(view, qtbot, n)
    assert np.abs(other - shown)[..., :3].max(axis=-1).astype(bool).mean() > 0.001


def test_a_burst_of_changes_ends_on_screen_as_the_last_state(view, qtbot, trace_a, trace_b):
    """Frames are drawn in a render thread and requests coalesce: 30 changes made without waiting give fewer
    frames, and the frame finally on screen is the last state (compared with a fresh render of it)."""
    view.set_trace(trace_a)
    view.set_layer(36, animate=False)
    settle(qtbot, view)
    before = view.gl.renderer.frames
    for i in range(30):
        view.set_trace(trace_b if i % 2 == 0 else trace_a)
        view.set_pass(i % len(trace_a.passes))
        view.set_camera_state(dict(center=[10, 0, 8], distance=26.0 + i * 0.3, azimuth=-100.0 + i,
                                   elevation=6.0 + i * 0.2, fov=38))
    target = view.gl.version
    qtbot.waitUntil(lambda: view.gl.shown_version >= target, timeout=10000)
    assert view.gl.renderer.frames - before < 30
    shown = image_array(view.gl.grab().toImage()).astype(int)[..., :3]  # the widget paints its last frame
    exact = image_array(view.gl.grabFramebuffer()).astype(int)[..., :3]  # the current state, rendered again
    assert shown.shape == exact.shape
    # the same picture up to anti-aliasing (exports use 4x MSAA, frames do not)
    assert np.abs(shown - exact).mean() < 3.0
    assert (np.abs(shown - exact).max(axis=-1) > 80).mean() < 0.02


def test_held_zoom_keys_wheel_pans_and_orbits_keep_the_camera_finite(view, qtbot):
    """'-' held down (key auto-repeat), the wheel spun out, long pans and orbits: the camera stays finite and in
    range, and the view still draws ."""
    import math

    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QKeyEvent, QWheelEvent
    from PySide6.QtWidgets import QApplication

    from scene.camera import MAX_REACH, ZOOM_MAX, ZOOM_MIN

    g = view.gl

    def hold(key, text, n=3000):
        for i in range(n):  # one press, then what auto-repeat sends while the key stays down
            QApplication.sendEvent(g, QKeyEvent(QEvent.KeyPress, key, Qt.NoModifier, text, i > 0))
        QApplication.sendEvent(g, QKeyEvent(QEvent.KeyRelease, key, Qt.NoModifier, text, False))

    def check():
        s = view.camera_state()
        values = [*s["center"], s["distance"], s["azimuth"], s["elevation"]]
        assert all(math.isfinite(v) for v in values), s
        assert all(math.isfinite(float(view.gl.opts[k])) for k in ("distance", "azimuth", "elevation"))
        return s

    hold(Qt.Key_Minus, "-")
    assert check()["distance"] == pytest.approx(ZOOM_MAX)
    hold(Qt.Key_Plus, "+")
    assert check()["distance"] == pytest.approx(ZOOM_MIN)
    centre = QPointF(W / 2, H / 2)
    for _ in range(300):  # a fast wheel spun outwards
        QApplication.sendEvent(g, QWheelEvent(centre, QPointF(g.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                                              QPoint(0, -1200), Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False))
    assert check()["distance"] == pytest.approx(ZOOM_MAX)
    for modifier in (Qt.ShiftModifier, Qt.NoModifier):  # pan far (Shift-drag), then orbit round and round
        for _ in range(40):
            QTest.mousePress(g, Qt.LeftButton, modifier, QPoint(20, H // 2))
            for x in (300, 600, 900, W - 20):
                QTest.mouseMove(g, QPoint(x, H // 2))
            QTest.mouseRelease(g, Qt.LeftButton, modifier, QPoint(W - 20, H // 2))
        s = check()
        assert max(abs(v) for v in s["center"]) <= MAX_REACH and abs(s["azimuth"]) <= 360.0
    img = view.render_image(320, 200)
    assert not img.isNull() and img.width() == 320


def _layer_box_on_screen(view):
    """Projected pixel box (x0, y0, x1, y1) of the exploded layer's blocks (and its slab) and whether every
    corner lies in front of the camera."""
    from scene.camera import project

    lay = view.layout
    boxes = [(b.lo, b.hi) for b in lay.layer_blocks()]
    corners = np.array([[x, y, z] for lo, hi in boxes for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])])
    px, ok = project(corners, view.cam, view.gl.width(), view.gl.height())
    return (*px.min(axis=0), *px.max(axis=0)), bool(ok.all())


def _drag(widget, start: QPoint, step: QPoint, n: int = 12):
    QTest.mousePress(widget, Qt.LeftButton, Qt.NoModifier, start)
    for i in range(1, n + 1):
        QTest.mouseMove(widget, start + step * i)
        QTest.qWait(5)
    QTest.mouseRelease(widget, Qt.LeftButton, Qt.NoModifier, start + step * n)


@pytest.mark.parametrize("step", [QPoint(-40, 0), QPoint(25, 30), QPoint(0, -30), QPoint(60, 5)])
def test_choosing_a_layer_after_orbiting_frames_that_layer(view, qtbot, step):
    """Orbit away with the mouse (or zoom far in), then PgUp / the layer slider: the camera moves to the new
    layer and all of its blocks are inside the view."""
    view.set_layer(20, animate=False)
    _drag(view.gl, QPoint(W // 2, H // 2), step)
    for _ in range(6):  # and zoom in on some corner
        QTest.keyClick(view.gl, Qt.Key_Plus)
    QTest.keyClick(view.gl, Qt.Key_PageUp)
    assert view.layer0 == 21
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=3000)
    (x0, y0, x1, y1), in_front = _layer_box_on_screen(view)
    assert in_front
    assert x0 >= 0 and y0 >= 0 and x1 <= view.gl.width() and y1 <= view.gl.height(), (x0, y0, x1, y1)
    assert (x1 - x0) * (y1 - y0) > 0.25 * view.gl.width() * view.gl.height()  # framed, not a speck
    view.set_layer(60)  # the layer slider: same
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=3000)
    (x0, y0, x1, y1), in_front = _layer_box_on_screen(view)
    assert in_front and x0 >= 0 and y0 >= 0 and x1 <= view.gl.width() and y1 <= view.gl.height()


def test_top_preset_looks_down_on_the_current_layer_filling_the_view(view, qtbot, trace_a, tmp_path):
    view.set_trace(trace_a)
    view.set_layer(40, animate=False)
    view.set_camera_preset("top", animate=False)
    cam = view.cam
    assert cam.elevation > 60
    (x0, y0, x1, y1), in_front = _layer_box_on_screen(view)
    w, h = view.gl.width(), view.gl.height()
    assert in_front and x0 >= -1 and y0 >= -1 and x1 <= w + 1 and y1 <= h + 1
    assert (x1 - x0) * (y1 - y0) > 0.45 * w * h, "the layer's blocks should fill a good share of the frame"
    # the rendered frame: most of the layer's area shows drawn cells, not background
    img = image_array(view.gl.grabFramebuffer())
    dpr = img.shape[1] / w
    region = img[int(y0 * dpr):int(y1 * dpr), int(x0 * dpr):int(x1 * dpr), :3].astype(int)
    bg = np.array([int(c * 255) for c in view.gl.opts["bgcolor"][:3]])
    drawn = (np.abs(region - bg).sum(axis=2) > 30).mean()
    assert drawn > 0.3, drawn
    view.gl.grabFramebuffer().save(str(tmp_path / "top.png"))
