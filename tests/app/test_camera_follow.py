"""The camera goes where you click: a double-click on a block centres and frames it, and a
selection made anywhere (a click, the inspector, the step list, the state) that is not whole in the view is
brought into it. Real mouse events on the GL widget of the real window; geometry from the projected boxes."""
import numpy as np
from PySide6.QtCore import QCoreApplication, QEvent, QPoint, Qt
from PySide6.QtTest import QTest

from scene import camera as camlib
from tests.app.gui_helpers import wait_idle


def _flush_layouts():
    """Run every layout request Qt has posted and what they post in turn (a window's new size lays its docks
    out in rounds): the widgets then have their final sizes, and the scene its framing, which follows at once."""
    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        QCoreApplication.processEvents()


def _settle(qtbot, scene):
    """The layout has settled and no camera move is under way (they are animated: scene.view ANIM_MS)."""
    _flush_layouts()
    qtbot.waitUntil(lambda: scene.camera.path is None, timeout=5000)


def _screen_box(scene, block_id):
    b = scene.layout.by_id[block_id]
    px, ok = camlib.project(camlib.box_corners(b.lo, b.hi), scene.cam, scene.gl.width(), scene.gl.height())
    assert ok.all()
    return px.min(axis=0), px.max(axis=0)


def _pixel_of(scene, block_id) -> QPoint:
    """A pixel of the GL widget on the block's front face, where the picker finds that block."""
    b = scene.layout.by_id[block_id]
    w, h = scene.gl.width(), scene.gl.height()
    for fx, fz in ((0.5, 0.5), (0.3, 0.5), (0.7, 0.5), (0.5, 0.3), (0.5, 0.7)):
        pt = np.array([b.lo[0] + fx * (b.hi[0] - b.lo[0]), b.lo[1], b.lo[2] + fz * (b.hi[2] - b.lo[2])])
        (x, y), = camlib.project(pt[None], scene.cam, w, h)[0]
        hit = scene.pick_at(x, y)
        if hit is not None and hit.block_id == block_id and 0 < x < w and 0 < y < h:
            return QPoint(int(round(x)), int(round(y)))
    raise AssertionError(f"{block_id} is not under any sampled pixel")


def test_double_click_frames_the_block(make_window, qtbot, tmp_path):
    win = make_window()
    wait_idle(qtbot, win)
    scene = win.scene
    _settle(qtbot, scene)
    bid = f"L{scene.layout.layer + 1}/moe.experts"
    before = camlib.Camera.from_dict(scene.camera_state())
    b = scene.layout.by_id[bid]
    mid = (b.lo + b.hi) / 2
    at = _pixel_of(scene, bid)
    # the platform's sequence: press, release, then the second press as a double-click, release
    QTest.mouseClick(scene.gl, Qt.LeftButton, Qt.NoModifier, at)
    QTest.mouseDClick(scene.gl, Qt.LeftButton, Qt.NoModifier, at)
    QTest.mouseRelease(scene.gl, Qt.LeftButton, Qt.NoModifier, at)
    assert win.state.block == bid
    _settle(qtbot, scene)
    after = scene.cam
    # the camera's centre moved to the block, and it came closer
    assert np.linalg.norm(np.array(after.center) - mid) < 0.5 * np.linalg.norm(np.array(before.center) - mid)
    assert np.linalg.norm(np.array(after.center) - mid) < 3.0
    assert after.distance < before.distance
    (x0, y0), (x1, y1) = _screen_box(scene, bid)
    w, h = scene.gl.width(), scene.gl.height()
    assert abs((x0 + x1) / 2 - w / 2) < 0.05 * w  # centred
    assert scene.block_in_view(bid)
    assert (x1 - x0) > 0.3 * w or (y1 - y0) > 0.3 * h  # framed, not a speck
    scene.gl.grabFramebuffer().save(str(tmp_path / "double_click.png"))


def test_selection_off_screen_comes_into_view(make_window, qtbot, tmp_path):
    """Layer 40 (MLA), camera on the LM head (as step 14 leaves it): selecting mla.scores from the state (the
    inspector's and the step list's way) brings it whole into the view."""
    win = make_window()
    wait_idle(qtbot, win)
    scene = win.scene
    win.state.select_layer(39)
    _settle(qtbot, scene)
    assert scene.frame_block("lm_head")
    _settle(qtbot, scene)
    bid = "L40/mla.scores"
    assert not scene.block_in_view(bid)  # off screen, as in the issue
    win.state.select_block(bid)
    _settle(qtbot, scene)
    assert scene.selected == bid and scene.block_in_view(bid)
    (x0, y0), (x1, y1) = _screen_box(scene, bid)
    w, h = scene.gl.width(), scene.gl.height()
    assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
    scene.gl.grabFramebuffer().save(str(tmp_path / "revealed.png"))
    # a block already in view: selecting it does not move the camera
    cam = scene.camera_state()
    other = "L40/mla.softmax"
    if scene.block_in_view(other):
        win.state.select_block(other)
        _settle(qtbot, scene)
        assert scene.camera_state() == cam


def test_click_on_a_half_hidden_block_brings_it_whole_into_view(make_window, qtbot):
    win = make_window()
    wait_idle(qtbot, win)
    scene = win.scene
    _settle(qtbot, scene)
    bid = f"L{scene.layout.layer + 1}/moe.experts"
    b = scene.layout.by_id[bid]
    # camera centred on the block's right edge: its right half lies off screen
    st = scene.camera_state()
    st["center"] = [float(b.hi[0]) + 2.0, float((b.lo[1] + b.hi[1]) / 2), float((b.lo[2] + b.hi[2]) / 2)]
    st["distance"] = 25.0
    scene.set_camera_state(st)
    assert scene.camera_state()["distance"] == 25.0 and not scene.block_in_view(bid)
    QTest.mouseClick(scene.gl, Qt.LeftButton, Qt.NoModifier, _pixel_of(scene, bid))
    _settle(qtbot, scene)
    assert win.state.block == bid and scene.block_in_view(bid)


# ---- the header and the legend never cover the model ----------------------------------
def _overlay_rects(scene, w, h, scale=1.0, export=False):
    from scene.labels import _fonts, _header_rect, _legend_layout

    inp = scene.overlay_input()
    if export:
        inp.label_scale = 1.0
    s = scale * inp.label_scale
    return _header_rect(inp, w, s, _fonts(s)), _legend_layout(inp, w, h, s)["box"]


def _covered(scene, w, h, scale=1.0, export=False) -> list[str]:
    """Blocks of the stack (every slab, bracket, the embedding, final AttnRes / norm, LM head, sampling)
    whose projected box meets the header or the legend, or leaves the view."""
    from PySide6.QtCore import QRectF

    from scene.labels import block_screen_box

    header, legend = _overlay_rects(scene, w, h, scale, export)
    view = QRectF(0, 0, w, h)
    bad = []
    for b in scene.layout.blocks:
        if b.family != "stack" or b.part == "backdrop":
            continue
        box = block_screen_box(b, scene.cam, w, h)
        if box is None or box.intersects(header) or box.intersects(legend) or not view.contains(box):
            bad.append(b.id)
    return bad


def _top_clearance(scene, w, h, scale=1.0, export=False) -> float:
    """Pixels between the header's bottom and the top of the highest stack block (LM head / sampling)."""
    from scene.labels import block_screen_box

    header, _ = _overlay_rects(scene, w, h, scale, export)
    tops = [block_screen_box(scene.layout.by_id[k], scene.cam, w, h).top() for k in ("lm_head", "sampling")
            if k in scene.layout.by_id]
    return min(tops) - header.bottom()


def test_small_windows_keep_the_top_of_the_model_clear(make_window, qtbot, tmp_path):
    win = make_window()
    wait_idle(qtbot, win)
    scene = win.scene
    for size in ((1366, 768), (1280, 720)):
        win.resize(*size)
        qtbot.waitUntil(lambda: win.width() <= size[0] and win.height() <= size[1], timeout=5000)
        _settle(qtbot, scene)
        w, h = scene.gl.width(), scene.gl.height()
        assert _covered(scene, w, h) == [], (size, w, h)
        assert _top_clearance(scene, w, h) >= 0, size
        scene.gl.grabFramebuffer().save(str(tmp_path / f"window-{size[0]}.png"))
    # in Korean (other header and legend widths and wrapping) at the smallest size
    from app import i18n
    try:
        win.state.set_language("ko")
        qtbot.waitUntil(lambda: i18n.language() == "ko", timeout=5000)  # the scene's texts (and framing) follow
        _settle(qtbot, scene)
        w, h = scene.gl.width(), scene.gl.height()
        assert _covered(scene, w, h) == [], ("ko", w, h)
        scene.gl.grabFramebuffer().save(str(tmp_path / "window-ko.png"))
    finally:
        win.state.set_language("en")
        i18n.set_language("en")
        _flush_layouts()
    # presentation mode (F11): larger header and legend, the same guarantee
    scene_w = scene.width()
    win.enter_presentation()
    try:
        # full screen, the docks hidden: the 3D view takes the whole window
        qtbot.waitUntil(lambda: win.isFullScreen() and scene.width() > scene_w, timeout=5000)
        _settle(qtbot, scene)
        w, h = scene.gl.width(), scene.gl.height()
        assert _covered(scene, w, h) == [], ("F11", w, h)
        scene.gl.grabFramebuffer().save(str(tmp_path / "presentation.png"))
    finally:
        win.leave_presentation()


def test_export_front_camera_keeps_the_lm_head(qtbot, tmp_path):
    """The CLI's scene (app.api.build_scene) at 1920x1080 with --camera front, and at step 13 (Sampling in
    focus): no stack block under the image's header or legend, as the export draws them."""
    from app import player
    from app.api import build_scene, close_scene, ensure_app
    from app.files.viewfile import View
    from compute.config import load_default
    from compute.engine import ToyK3

    app = ensure_app()
    trace = ToyK3().run("The robot lifted a red cup", max_new_tokens=2)
    steps = player.build_steps(trace)
    W, H = 1920, 1080
    for camera, step in (("front", 1), (None, 13)):
        view = View(layer=37, step=step)
        scene = build_scene(app, load_default(), trace, view, steps[step - 1], W, H, camera)
        try:
            bad = _covered(scene, W, H, scale=min(W / 1280, H / 800), export=True)
            if camera == "front":
                assert bad == [], bad
                assert _top_clearance(scene, W, H, scale=min(W / 1280, H / 800), export=True) >= 0
            else:  # the step's focus, whole below the header
                from scene.labels import block_screen_box

                header, legend = _overlay_rects(scene, W, H, min(W / 1280, H / 800), export=True)
                focus = [scene.layout.by_id[k] for k in scene.focus_ids() if k in scene.layout.by_id]
                assert focus
                for b in focus:
                    box = block_screen_box(b, scene.cam, W, H)
                    assert box is not None and not box.intersects(header) and not box.intersects(legend), b.id
            scene.render_image(W, H).save(str(tmp_path / f"export-{camera}-{step}.png"))
        finally:
            close_scene(scene)
