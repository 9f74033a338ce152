"""The explanation drawn in the 3D view, in the real window with real events:
- the logit-lens column: the Explain dock's result (computed on its pool thread even while its tab is covered)
  reaches the 3D view as a strip beside the stack, one box per reading, lit by the explained word's
  probability (pixels: the last layer's box is bright, the embedding's dark), and as word labels left of it;
- the contribution route: ticking "Contribution route" outlines exactly the blocks whose |direct contribution|
  (compute.explain's float64 route, summed per layer's mixer / FFN) reaches the slider's share of the
  largest; End / Home on the slider light one block / every block; the outlines are on screen (pixels);
- a click on a slab in the 3D stack shows what that layer's mixer and FFN promote and suppress, the same words
  as compute.explain's per-block effects summed over the FFN's experts;
- the choices are remembered; Korean header and dock texts."""
from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from app import i18n
from scene import camera as camlib
from scene.explain_overlay import _q
from scene.labels import place_labels
from scene.lens_column import STRIP_W, STRIP_X
from tests.app.gui_helpers import image_array, pump, wait_idle
from tests.app.test_explain_dock import open_page


def _result(win, timeout_s: float = 120.0):
    dock = win.docks["ExplainDock"]
    end = time.monotonic() + timeout_s
    while dock.result is None or dock.busy or win.scene.explanation is None:
        assert time.monotonic() < end, dock.status.text()
        pump(30)
    return dock, dock.result


def _window(make_window, qtbot, name: str = "settings.ini"):
    """A real window, idle, with the Explain dock's result drawn in its 3D view: (win, dock, result, scene)."""
    win = make_window(name)
    wait_idle(qtbot, win)
    dock, res = _result(win)
    return win, dock, res, win.scene


def _settle(qtbot, scene):
    """No camera move under way: render_image then draws the state the test set (synchronously)."""
    qtbot.waitUntil(lambda: scene.camera.path is None, timeout=5000)


def _frame(scene) -> np.ndarray:
    return image_array(scene.render_image(scene.gl.width(), scene.gl.height(), transparent=False))[..., :3]


def _px(scene, point) -> tuple[int, int]:
    (x, y), = camlib.project(np.asarray(point, float)[None], scene.cam, scene.gl.width(), scene.gl.height())[0]
    return int(round(x)), int(round(y))


def _explanation(win):
    from app import api

    trace = win.state.trace
    return api.explain("".join(p for p, _ in trace.tokens[:trace.prompt_len]), weights=trace.weights_name)


def test_lens_column_follows_the_dock_and_is_drawn(make_window, qtbot):
    win, dock, res, scene = _window(make_window, qtbot)
    ov = scene.explanation
    assert ov.word == res.word and ov.position == win.state.trace.prompt_len - 1
    n = scene.layout.dims.n_layers
    assert [e[0] for e in ov.lens] == list(range(n + 1))
    assert [e[3] for e in ov.lens] == res.lens_rank and ov.lens[-1][3] == 1
    items = scene.explain_items
    assert items.strip.visible() and items.strip_layers == list(range(n + 1))
    # the strip's colours follow the word's probability: brighter where it is likelier
    lum = items.strip_rgba[:, :3].sum(1)
    probs = np.array(res.lens_prob)
    assert np.all(np.diff(lum[np.argsort(probs, kind="stable")]) >= -1e-6)
    _settle(qtbot, scene)
    img = _frame(scene).astype(int)
    lay = scene.layout

    def strip_pixel(layer):
        b = lay.by_id["embedding" if layer == 0 else f"L{layer}/stack.layer"]
        return _px(scene, (STRIP_X, b.lo[1] + 0.2 - 0.17, b.center[2]))

    x, y = strip_pixel(n)
    top = img[y - 1:y + 2, x - 1:x + 2].reshape(-1, 3).mean(0)
    x0, y0 = strip_pixel(1)
    low = img[y0 - 1:y0 + 2, x0 - 1:x0 + 2].reshape(-1, 3).mean(0)
    assert res.lens_prob[-1] > 0.3 and res.lens_prob[1] < 0.05
    assert top.sum() > low.sum() + 150, (top, low)  # amber at the answer, dark where the lens has not got it
    assert top[0] > top[2] + 80  # amber, not grey
    # the word labels: the last layer's top word (the answer) and the embedding's reading, left of the strip
    pl = place_labels(scene.overlay_input(), scene.gl.width(), scene.gl.height())
    lens = {lb.block_id: lb for lb in pl.labels if lb.block_id.startswith("lens/")}
    assert f"lens/{n}" in lens and lens[f"lens/{n}"].name.endswith(_q(res.word))
    assert all(lb.rect.right() <= strip_pixel(0)[0] + 4 for lb in lens.values())
    assert len(lens) >= 5
    assert "position" in scene.overlay_input().explain_note


def test_route_lights_blocks_over_the_threshold(make_window, qtbot):
    win, dock, res, scene = _window(make_window, qtbot)
    ex = _explanation(win)
    assert ex.word == res.word
    totals = ex.route.totals()  # float64, compute's own folding
    largest = max(abs(v) for v in totals.values())
    _settle(qtbot, scene)
    before = _frame(scene).astype(int)
    controls = dock.show3d
    win.state.show_dock("ExplainDock", "")
    open_page(dock, "route")  # the 3D view's choices are on the route page
    qtbot.waitUntil(lambda: controls.route.isVisible(), timeout=5000)
    QTest.mouseClick(controls.route, Qt.LeftButton, Qt.NoModifier,
                     QPoint(8, controls.route.height() // 2))
    controls.kind.setFocus()
    QTest.keyClick(controls.kind, Qt.Key_Down)  # the direct effects (not causal): this test's route
    assert controls.route_kind() == "direct"
    qtbot.waitUntil(lambda: bool(scene.explanation.route), timeout=5000)
    pct = controls.slider.value()
    want = {k for k, v in totals.items() if abs(v) >= pct / 100 * largest * (1 - 1e-6)}
    got = set(scene.explanation.lit)
    assert want - got == set() and len(got - want) <= 1, (want ^ got)  # float32 engine vs float64 at the edge
    assert scene.explain_items.route.visible()
    # End: 100 % -> only the largest block; Home: 0 % -> every block
    controls.slider.setFocus()
    QTest.keyClick(controls.slider, Qt.Key_End)
    assert len(scene.explanation.lit) == 1
    (only,) = scene.explanation.lit
    assert only == max(totals, key=lambda k: abs(totals[k]))
    QTest.keyClick(controls.slider, Qt.Key_Home)
    assert len(scene.explanation.lit) == len(totals)
    QTest.keyClick(controls.slider, Qt.Key_End)
    assert "1" in controls.threshold_label.text()
    # on screen: the lit block's outline in the route's colour, and the other layers dimmed
    _settle(qtbot, scene)
    after = _frame(scene).astype(int)
    layer, part = only
    b = scene.layout.by_id["embedding" if layer == 0 else f"L{layer}/stack.layer"]
    corners = camlib.box_corners(b.lo, b.hi)
    px, ok = camlib.project(corners, scene.cam, scene.gl.width(), scene.gl.height())
    (x0, y0), (x1, y1) = px.min(0).astype(int) - 4, px.max(0).astype(int) + 4
    sign = 1 if totals[only] >= 0 else -1
    ref = np.array([250, 140, 41]) if sign > 0 else np.array([77, 140, 255])
    near = np.abs(after[y0:y1, x0:x1] - ref).sum(-1) < 90
    near_before = np.abs(before[y0:y1, x0:x1] - ref).sum(-1) < 90
    assert near.sum() > near_before.sum() + 10, (near.sum(), near_before.sum())
    assert "route" in scene.overlay_input().explain_note
    # a second view of the same choice: the legend says what the colours mean
    assert scene.overlay_input().route_on


def test_clicking_a_slab_shows_what_the_layer_promotes(make_window, qtbot):
    win, dock, res, scene = _window(make_window, qtbot)
    _settle(qtbot, scene)
    target = 12 if scene.layout.layer + 1 != 12 else 13
    b = scene.layout.by_id[f"L{target}/stack.layer"]
    w, h = scene.gl.width(), scene.gl.height()
    at = None
    for fx in (0.5, 0.35, 0.65, 0.2, 0.8):
        pt = (b.lo[0] + fx * (b.hi[0] - b.lo[0]), b.lo[1], b.center[2])
        x, y = _px(scene, pt)
        hit = scene.pick_at(x, y)
        if hit is not None and hit.block_id == b.id:
            at = QPoint(x, y)
            break
    assert at is not None
    QTest.mouseClick(scene.gl, Qt.LeftButton, Qt.NoModifier, at)
    qtbot.waitUntil(lambda: win.state.layer == target - 1, timeout=5000)
    win.show_dock("ExplainDock")  # read where a person reads it: the dock's tab raised (a covered one waits)
    qtbot.waitUntil(lambda: f"Layer {target}" in dock.block_words.text(), timeout=5000)
    text = dock.block_words.text()
    ex = _explanation(win)
    i_mixer = next(i for i, c in enumerate(ex.blocks) if c.layer == target and c.part == "mixer")
    up, down = ex.promotes(i_mixer, 3)
    eff = sum(ex.route.word_effects(i) for i, c in enumerate(ex.blocks)
              if c.layer == target and c.part not in ("mixer", "embedding"))
    vocab = ex.model.vocab
    f_up = [vocab[j][0] for j in np.argsort(-eff, kind="stable")[:3]]
    assert f"Layer {target}" in text
    for piece in [p for p, _ in up] + [p for p, _ in down] + f_up:
        assert _q(piece).replace("'", "&#x27;") in text or _q(piece) in text, (piece, text)


def test_choices_are_remembered_and_korean(make_window, qtbot):
    win = make_window("s3d.ini")
    wait_idle(qtbot, win)
    dock, _res = _result(win)
    dock.show3d.set_values(False, True, 55, False)
    assert not dock.show3d.lens.isChecked()
    qtbot.waitUntil(lambda: win.scene.explanation is not None and not win.scene.explanation.lens
                    and win.scene.explanation.route_kind == "causal", timeout=5000)  # the default route
    assert not win.scene.explain_items.strip.visible()
    i18n.set_language("ko")
    win.state.language_changed.emit("ko")  # the dock and the scene retranslate in the emit
    assert dock.show3d.route.text() == "기여 경로" and "임계값" in dock.show3d.threshold_label.text()
    assert "경로" in win.scene.overlay_input().explain_note
    win.close()
    win2 = make_window("s3d.ini")
    wait_idle(qtbot, win2)
    d2 = win2.docks["ExplainDock"]
    assert d2.show3d.values()[:3] == (False, True, 55)
    _result(win2, 400)  # the causal route's knock-outs, off the UI thread
    assert win2.scene.explanation.route and not win2.scene.explanation.lens
    # both off: nothing is drawn
    d2.show3d.set_values(False, False, 55, False)
    qtbot.waitUntil(lambda: win2.scene.explanation is None, timeout=5000)
    assert not win2.scene.explain_items.strip.visible() and not win2.scene.explain_items.route.visible()


def test_attention_arcs_follow_the_layer(make_window, qtbot):
    """One arc per head and source (never a head mean), in its head's colour, ending at its source's rung of the
    token ladder; the rungs stand at least a label's height apart on screen; the strongest arc is named in the
    overlay with its token and its signed weight (compute's own float64 attention)."""
    from scene.attention_arcs import MIN_ALPHA, SEGMENTS, head_colour, ladder

    win, dock, res, scene = _window(make_window, qtbot)
    ex = _explanation(win)
    t = res.position
    items = scene.explain_items
    assert dock.show3d.arcs.isChecked() and scene.explanation.attention

    def check(layer0):
        w = ex.attention(layer0 + 1)[:, t, :]  # compute's own heads x T x T, float64: [H, T] for position t
        assert w.shape[0] >= 2
        top = np.abs(w[:, :t + 1]).max()
        want = [(h, i) for h in range(w.shape[0]) for i in range(t) if abs(w[h, i]) / top >= MIN_ALPHA]
        rows = list(scene.layout.row_positions)
        x0, rung_z = ladder(scene.layout)
        pos, col = items.arcs.pos, items.arcs.color
        arcs_pos, arcs_col = pos[2 * len(rows):], col[2 * len(rows):]  # after the rungs' ties to the wall
        n = len(arcs_pos) // (2 * SEGMENTS)
        assert items.arcs.visible() and n == len(want)
        firsts = arcs_col[::2 * SEGMENTS]
        heads_drawn = {tuple(round(float(v), 3) for v in c[:3]) for c in firsts}
        assert heads_drawn == {tuple(round(float(v), 3) for v in head_colour(h)) for h in {h for h, _ in want}}
        h_top, i_top = max(want, key=lambda hi: abs(w[hi]))
        last = arcs_pos[-1]  # drawn last (on top): the strongest arc, its end at its source's rung
        assert abs(last[2] - rung_z[rows.index(i_top)]) < 1e-4
        assert np.allclose(arcs_col[-1, :3], head_colour(h_top), atol=1e-3)
        pts, _ok = camlib.project(np.array([[x0, 0.0, z] for z in rung_z]), scene.cam, scene.gl.width(),
                                  scene.gl.height())
        assert np.abs(np.diff(pts[:, 1])).min() >= 14  # a token row high (the labels' font) at least
        labels = place_labels(scene.overlay_input(), scene.gl.width(), scene.gl.height()).labels
        name = f"'{win.state.trace.tokens[i_top][0]}' {w[h_top, i_top]:+.2f}"
        assert any(lb.name == name and lb.block_id == f"arc/{h_top}/{i_top}" for lb in labels), (
            name, [lb.name for lb in labels])
        return pos

    a = check(scene.layout.layer)
    _settle(qtbot, scene)
    with_arcs = _frame(scene).astype(int)
    scene.gl.setFocus()
    QTest.keyClick(scene.gl, Qt.Key_PageUp)
    qtbot.waitUntil(lambda: win.state.layer == scene.layout.layer and scene.layout.layer >= 0, timeout=5000)
    check(scene.layout.layer)
    QTest.keyClick(scene.gl, Qt.Key_PageDown)
    qtbot.waitUntil(lambda: scene.layout.layer == win.state.layer, timeout=5000)
    dock.show3d.arcs.setChecked(False)
    qtbot.waitUntil(lambda: not scene.explanation.attention, timeout=5000)
    assert not items.arcs.visible()
    _settle(qtbot, scene)
    without = _frame(scene).astype(int)
    from scene.attention_arcs import first_token_wall, ladder

    wall, (lx, rung_z) = first_token_wall(scene.layout), ladder(scene.layout)
    (x0, y0) = _px(scene, (lx - 2.5, wall.lo[1], max(rung_z)))
    (x1, y1) = _px(scene, (wall.lo[0], wall.lo[1], wall.lo[2]))
    region = np.abs(with_arcs[y0:y1, x0:x1] - without[y0:y1, x0:x1]).sum(-1) > 40
    assert region.sum() > 30, region.sum()  # the arcs are on screen, left of the wall
