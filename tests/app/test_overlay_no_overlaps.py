"""No overlaps in the 3D view's overlay at the default sizes (issue 40.6): the real window opened on screens of
1920x1080, 1366x768 and 1280x720, English and Korean, layers 4 (Gated MLA) and 37 (KDA), with the Why-this-word
explanation drawn (lens column, per-head attention arcs): no label's rectangle overlaps another's, none covers a
block other than its own (a 3-px graze of an edge allowed, as the placer's), none reaches under the header or
the legend, and neither the legend nor the header lies over a block (the top of the stack stays in sight) —
checked on the placement and on the pixels (the picture drawn without the overlay is plain background where the
legend and the header go). Then, with a knock-out and the causal route on (the header's longest form: before ->
after, readable, decided, route), neither the header nor the legend covers a block. Screenshots go to
$TMPDIR/k3_overlaps/."""
import os
import tempfile

import numpy as np
import pytest

from scene.label_obstacles import BlockOutlines
from scene.labels import GRAZE, place_labels
from tests.app.gui_helpers import image_array, pump
from tests.app.test_small_screens import open_window

SHOTS = os.path.join(tempfile.gettempdir(), "k3_overlaps")
SIZES = [(1920, 1080), (1366, 768), (1280, 720)]


def _explained(win):
    dock = win.docks["ExplainDock"]
    while dock.result is None or dock.busy or win.scene.explanation is None:
        pump(30)
    return win.scene.explanation


def _at_layer(qtbot, win, layer0: int) -> None:
    """The layer selected, its framing reached, and no explanation on its way (one that arrives changes the
    header, and the camera refits to it)."""
    win.state.select_layer(layer0)
    dock = win.docks["ExplainDock"]
    qtbot.waitUntil(lambda: win.scene.layout.layer == layer0 and win.scene.camera.path is None and not dock.busy,
                    timeout=400000)
    pump(50)
    qtbot.waitUntil(lambda: win.scene.camera.path is None, timeout=10000)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_no_label_overlaps_a_label_a_block_or_the_legend(qtbot, tmp_path, size, lang):
    from app import i18n

    win = open_window(qtbot, tmp_path, *size, lang)
    try:
        ov = _explained(win)
        assert ov.lens and ov.attention  # the explanation is on: lens column and arcs
        for layer in (4, 37):
            _at_layer(qtbot, win, layer - 1)
            sc = win.scene
            w, h = sc.gl.width(), sc.gl.height()
            inp = sc.overlay_input()
            placement = place_labels(inp, w, h)
            os.makedirs(SHOTS, exist_ok=True)  # saved first: a failing case's picture is there to look at
            sc.render_image(w, h).save(os.path.join(SHOTS, f"{lang}_{size[0]}x{size[1]}_L{layer}.png"))
            outlines = BlockOutlines(inp.layout, inp.camera, w, h)
            rects = [(lb.name, lb.rect, lb.block_id, lb.forced) for lb in placement.labels]
            assert len(rects) >= 25 and any(bid.startswith("arc/") for _, _, bid, _ in rects), ([r[0] for r in rects], [c[2] for c in inp.lens_labels or []], placement.legend, (w, h))
            overlaps = [(a[0], b[0]) for k, a in enumerate(rects) for b in rects[k + 1:] if a[1].intersects(b[1])]
            assert not overlaps, (size, lang, layer, overlaps)
            g = GRAZE * inp.label_scale
            covering = [(n, outlines.hits(r.adjusted(g, g, -g, -g), bid)) for n, r, bid, forced in rects
                        if not forced]
            covering = [c for c in covering if c[1]]
            assert not covering, (size, lang, layer, covering)
            under = [n for n, r, _, _ in rects if r.intersects(placement.legend) or r.intersects(placement.header)]
            assert not under, (size, lang, layer, under)
            if layer == 37:  # KDA: the short convolution's note reads as the arcs' key's last entry, beside one
                # of its entries (it stood one label width away from them in a 1280 x 720 export); where no spot
                # beside them is free it is left out, as any lower-priority label (the Explain dock says it too)
                keys = [r for _, r, bid, _ in rects if bid.startswith("arc/") and bid != "arc/conv"]
                note = [r for _, r, bid, _ in rects if bid == "arc/conv"]
                assert keys and (note or size != SIZES[0]), (size, lang, [n for n, *_ in rects])
                near = 10 * inp.label_scale
                assert not note or any(note[0].adjusted(-near, -near, near, near).intersects(k) for k in keys), \
                    (size, lang, note[0], keys)
            assert not outlines.hits(placement.legend), (size, lang, layer, outlines.hits(placement.legend))
            assert not outlines.hits(placement.header), (size, lang, layer, outlines.hits(placement.header))
            # pixels: without the overlay, the legend's and the header's boxes are plain background (no block there)
            plain = image_array(_plain(sc, w, h))[..., :3]
            for panel in (placement.legend, placement.header):
                assert _plain_box(plain, panel), (size, lang, layer, panel)
        _header_with_a_knockout(qtbot, win, size, lang)
    finally:
        win.close()
        i18n.set_language("en")


def _header_with_a_knockout(qtbot, win, size, lang) -> None:
    """Layer 37 with a token knocked out and the causal route drawn: the header's longest form and the legend
    with the route's note cover no block."""
    dock = win.docks["ExplainDock"]
    lens, _route, pct, arcs = dock.show3d.values()
    dock.show3d.set_values(lens, True, pct, arcs)
    dock.add_knockout(("token", 1), "zero")
    qtbot.waitUntil(lambda: not dock.busy and dock.result is not None and dock.result.knockout is not None
                    and bool(dock.result.causal), timeout=400000)
    sc = win.scene
    qtbot.waitUntil(lambda: sc.explanation is not None and bool(sc.explanation.after), timeout=10000)
    _at_layer(qtbot, win, 36)
    w, h = sc.gl.width(), sc.gl.height()
    inp = sc.overlay_input()
    assert "→" in inp.explain_note
    placement = place_labels(inp, w, h)
    sc.render_image(w, h).save(os.path.join(SHOTS, f"{lang}_{size[0]}x{size[1]}_L37_knockout.png"))
    outlines = BlockOutlines(inp.layout, inp.camera, w, h)
    assert not outlines.hits(placement.header), (size, lang, "knock-out", outlines.hits(placement.header))
    assert not outlines.hits(placement.legend), (size, lang, "knock-out", outlines.hits(placement.legend))
    plain = image_array(_plain(sc, w, h))[..., :3]
    for panel in (placement.header, placement.legend):
        assert _plain_box(plain, panel), (size, lang, "knock-out", panel)


def _plain_box(plain, r) -> bool:
    """Whether the picture drawn without the overlay is plain background inside r (no block drawn there)."""
    box = plain[max(0, int(r.top())):int(r.bottom()), max(0, int(r.left())):int(r.right())].astype(int)
    return bool(box.size) and (np.abs(box - box[0, 0]).sum(-1) > 30).mean() < 0.002


def _plain(sc, w, h):
    """The picture without the overlay. Drawn twice: the first off-screen render in a window, after another
    window's export of another size in this process, can come out with that size's projection (about 10 %
    larger here; a cross-window artefact of the shared export context — one window, as a user has, renders the
    same picture twice)."""
    before = sc.labels_enabled
    sc.labels_enabled = False
    try:
        sc.render_image(w, h)
        return sc.render_image(w, h)
    finally:
        sc.labels_enabled = before
