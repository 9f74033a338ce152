"""Labels and header at every trace step, in a real SceneView under Xvfb.

For each step of a real trace, the view is put where the player puts it (the step's layer, pass, token and
focus, camera animation finished) at the 3D view's size in a 1280 x 720 and a 1920 x 1080 window. Then:
- every block the step highlights (the step table's blocks) that is on screen has its label placed, and that
  label sits on its own block's projected box, clear of the header and the legend;
- the header and the legend are opaque panels: no pixel of the 3D scene shows through them;
- pixels: the highlighted block really is drawn where its label sits (a render without labels).
"""
import numpy as np
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter

from scene.labels import block_screen_box, paint_overlay
from scene.steps import build_steps, focus_layer

# the 3D view's size inside a 1280 x 720 and a 1920 x 1080 main window (docks on both sides)
VIEW_SIZES = {"1280x720": (460, 640), "1920x1080": (1060, 930)}


def image_array(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format_RGBA8888)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    rows = arr.reshape(img.height(), img.bytesPerLine())[:, : img.width() * 4]
    return rows.reshape(img.height(), img.width(), 4).copy()


def _show_step(view, qtbot, trace, step) -> None:
    """What the app does for a step: the layer that fits it, its pass and token, its focus; then wait until
    the camera stands still and that state is on screen."""
    mixers = [L.mixer for L in trace.passes[0].layers]
    ffns = [L.ffn for L in trace.passes[0].layers]
    view.set_layer(focus_layer(step, mixers, ffns, view.layer0), animate=False)
    view.set_pass(step.pass_index)
    view.set_token(step.token)
    view.set_step_focus(step.kind)
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)
    view.gl.repaint()


def _inset(r: QRectF, d: float) -> QRectF:
    return r.adjusted(d, d, -d, -d)


@pytest.fixture
def step_view(qtbot, k3_config, trace_a):
    from scene.view import SceneView

    v = SceneView()
    qtbot.addWidget(v)
    v.set_config(k3_config)
    v.set_trace(trace_a)
    return v


def _check_steps(view, qtbot, trace, size):
    view.resize(*size)
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: view.gl.paint_count > 0, timeout=10000)
    steps = build_steps(trace)
    assert len(steps) >= 17
    checked = 0
    for step in steps:
        _show_step(view, qtbot, trace, step)
        placement = view.gl.labels.placement
        assert placement is not None
        w, h = view.gl.width(), view.gl.height()
        screen = QRectF(0, 0, w, h)
        focus = view.focus_ids()
        assert {lb.block_id for lb in placement.labels if lb.focus} <= set(focus), step.kind
        for bid in focus:
            block = view.layout.by_id[bid]
            box = block_screen_box(block, view.cam, w, h)
            on_screen = box is not None and _inset(screen, 4).intersects(box)
            label = placement.label_for(bid)
            if not on_screen:
                continue
            assert label is not None, f"step {step.index + 1} ({step.kind}): no label for {bid}"
            if label.leader is not None:  # a cap's name beside the cap: its leader line runs to its own block
                x0, y0, x1, y1 = label.leader
                assert box.adjusted(-1, -1, 1, 1).contains(x1, y1), (step.kind, bid, label.leader, box)
                assert label.rect.adjusted(-1, -1, 1, 1).contains(x0, y0), (step.kind, bid, label.leader)
            else:
                d = 6 if label.where == "above" else 14  # stack labels stand a little beside their slab / bracket
                assert label.rect.adjusted(-d, -d, d, d).intersects(box), (step.kind, bid, label.rect, box)
            assert not label.rect.intersects(placement.header), (step.kind, bid, "under the header")
            assert not label.rect.intersects(placement.legend), (step.kind, bid, "under the legend")
            checked += 1
        # labels never overlap one another unless a step's own labels had no free spot at all
        free = [lb for lb in placement.labels if not lb.forced]
        for i, a in enumerate(free):
            for b in free[i + 1:]:
                assert not a.rect.intersects(b.rect), (step.kind, a.block_id, b.block_id)
        _check_panels_opaque(view, placement)
    assert checked >= 17  # most steps name blocks that are on screen


def _check_panels_opaque(view, placement):
    """The header and the legend hide the scene completely: the on-screen frame inside them is exactly the
    overlay painted over magenta, and no magenta is left there."""
    w, h = view.gl.width(), view.gl.height()
    frame = image_array(view.gl.grabFramebuffer().scaled(w, h))
    probe = QImage(w, h, QImage.Format_ARGB32_Premultiplied)
    probe.fill(QColor(255, 0, 255))
    p = QPainter(probe)
    paint_overlay(p, view.overlay_input(), w, h, 1.0)
    p.end()
    over = image_array(probe)
    for rect in (placement.header, placement.legend):
        r = _inset(rect, 4).toAlignedRect()
        sl = (slice(max(r.top(), 0), min(r.bottom(), h)), slice(max(r.left(), 0), min(r.right(), w)))
        region = over[sl][..., :3].astype(int)
        magenta = (region[..., 0] > 200) & (region[..., 1] < 60) & (region[..., 2] > 200)
        assert magenta.mean() == 0.0, f"the scene shows through {rect}"
        diff = np.abs(frame[sl][..., :3].astype(int) - region).max(axis=-1)
        assert (diff > 24).mean() < 0.01, f"blocks drawn over the panel {rect}"


@pytest.mark.parametrize("window", list(VIEW_SIZES))
def test_every_step_labels_its_highlighted_blocks_and_keeps_the_header_clear(step_view, qtbot, trace_a, window):
    _check_steps(step_view, qtbot, trace_a, VIEW_SIZES[window])


def test_korean_labels_at_every_step(step_view, qtbot, trace_a):
    from app import i18n

    i18n.set_language("ko")
    try:
        step_view.set_translator(i18n.tr)
        _check_steps(step_view, qtbot, trace_a, VIEW_SIZES["1280x720"])
    finally:
        i18n.set_language("en")


def test_a_highlighted_label_sits_on_its_drawn_block(step_view, qtbot, trace_a):
    """Pixels: without labels, the block under each highlighted label is really drawn there (its box is not
    background), and the label's rect lies over that box; with labels, the label's pixels are inside its rect."""
    view = step_view
    view.resize(*VIEW_SIZES["1280x720"])
    view.show()
    qtbot.waitExposed(view)
    steps = {s.kind: s for s in build_steps(trace_a)}
    for kind in ("kda_state", "mla_cache", "moe", "lm_head"):
        _show_step(view, qtbot, trace_a, steps[kind])
        placement = view.gl.labels.placement
        w, h = view.gl.width(), view.gl.height()
        view.labels_enabled = False
        try:
            bare = image_array(view.gl.grabFramebuffer().scaled(w, h))
        finally:
            view.labels_enabled = True
        shown = image_array(view.gl.grabFramebuffer().scaled(w, h))
        bg = np.array([int(c * 255) for c in view.gl.opts["bgcolor"][:3]])
        for lb in placement.labels:
            if not lb.focus or lb.block_id.startswith("stack."):
                continue
            box = block_screen_box(view.layout.by_id[lb.block_id], view.cam, w, h).toAlignedRect()
            sl = (slice(max(box.top(), 0), min(box.bottom(), h)), slice(max(box.left(), 0), min(box.right(), w)))
            drawn = np.abs(bare[sl][..., :3].astype(int) - bg).max(axis=-1) > 30
            assert drawn.mean() > 0.2, (kind, lb.block_id, "the block is not where it projects")
            assert lb.rect.adjusted(-6, -6, 6, 6).intersects(QRectF(box)), (kind, lb.block_id)
            r = lb.rect.toAlignedRect()
            inside = (slice(max(r.top(), 0), min(r.bottom() + 1, h)), slice(max(r.left(), 0), min(r.right() + 1, w)))
            changed = np.abs(shown[inside][..., :3].astype(int) - bare[inside][..., :3].astype(int)).max(axis=-1)
            assert (changed > 40).mean() > 0.3, (kind, lb.block_id, "the label is not drawn in its rect")
