"""Labels stay clear of the blocks (a CLI export of layer 4 at 1600 x 900 had "Final RMSNorm" drawn on the LM head
block and "q norm" over the W_qb plate): in a real SceneView under Xvfb, for an MLA and a KDA layer at the export's
sizes and label scale, no label covers a block other than its own, beyond a graze of its edge. Exempt: the labels
the placement must show even without a free spot (a step's focus, the selected block, a cache), which still keep
clear of the other labels. The stack's four cap blocks are checked against their projected bounding boxes too.
Labels once dropped at some of these sizes must show (MUST_SHOW, SHAPE_SHOWN), and a label moved off its block
has a leader line to it."""
import pytest
from PySide6.QtCore import QRectF

from scene.label_obstacles import BlockOutlines
from scene.labels import GRAZE, block_screen_box, place_labels
from scene_helpers import shown_view

CAPS = ("final.attnres", "final.norm", "lm_head", "sampling")
# labels once dropped at these layers and sizes: W_qa and q norm (no clear spot above their blocks at 1600 x 900:
# now they may sit beside or below them, with a leader line), the "93" layer number (Final AttnRes took its spot
# beside the top slab), the LM head's shape (no room to grow where its name stood beside the cap). At 1600 x 900
# the stack's top was then under the header (the cap blocks hidden); lowered out from under it, the LM head's name
# sits between the header and "o_proj W_o" with no room for its shape (its tooltip gives it)
MUST_SHOW = {(4, (1600, 900)): ("L4/mla.q_a", "L4/mla.q_a_norm", "L93/stack.layer"),
             (37, (1280, 720)): ("L93/stack.layer",), (37, (1600, 900)): ("L93/stack.layer",),
             (37, (1920, 1080)): ("L93/stack.layer",)}
SHAPE_SHOWN = {(4, (1280, 720)): ("lm_head",)}


@pytest.fixture(scope="module")
def trace(engine):
    return engine.run("The robot lifted a red cup", max_new_tokens=2)


@pytest.mark.parametrize("size", [(1280, 720), (1600, 900), (1920, 1080)])
@pytest.mark.parametrize("layer", [4, 37])
def test_no_label_covers_another_block(qtbot, k3_config, trace, layer, size):
    w, h = size
    view = shown_view(qtbot, k3_config, w, h)
    view.set_trace(trace)
    view.set_layer(layer - 1, animate=False)
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)
    assert view.layout.dims.mixers[layer - 1] == ("mla" if layer == 4 else "kda")
    scale = max(0.75, min(w / 1280, h / 800))  # what an export uses
    inp = view.overlay_input()
    placement = place_labels(inp, w, h, scale)
    outlines = BlockOutlines(view.layout, view.cam, w, h)
    graze = GRAZE * scale * inp.label_scale
    by_id = view.layout.by_id
    names = {lb.block_id: lb.name for lb in placement.labels}
    assert len(placement.labels) >= 25, sorted(names.values())  # the clearance does not cost most names
    for cap in CAPS:
        assert cap in names, (cap, sorted(names.values()))  # every cap block still named
    for bid in MUST_SHOW.get((layer, size), ()):
        assert bid in names, (bid, sorted(names.values()))
    for bid in SHAPE_SHOWN.get((layer, size), ()):
        assert placement.label_for(bid).shape, bid
    for lb in placement.labels:  # a label moved away from its block is tied to it by a leader line
        box = outlines.screen_box(lb.block_id)
        if lb.where == "above" and box is not None and not lb.rect.intersects(box.adjusted(-12, -12, 12, 12)):
            assert lb.leader is not None, lb.name
    covering = []
    for lb in placement.labels:
        block = by_id.get(lb.block_id)
        if lb.focus or block is None or block.role == "state" or lb.block_id in (inp.selected, inp.hovered):
            continue
        hit = outlines.hits(lb.rect.adjusted(graze, graze, -graze, -graze), lb.block_id)
        if hit:
            covering.append((lb.name, hit))
    assert not covering, covering
    # the caps: a cap's label (inset by the graze) off every other cap's projected box
    for lb in placement.labels:
        if lb.block_id not in CAPS:
            continue
        r = lb.rect.adjusted(graze, graze, -graze, -graze)
        for other in CAPS:
            if other != lb.block_id and other in by_id:
                box = block_screen_box(by_id[other], view.cam, w, h)
                assert box is None or not r.intersects(box), (lb.name, other, r, box)


def test_outlines_hit_a_block_and_miss_the_empty_view(qtbot, k3_config):
    """The outline test itself: a rectangle on a block's projected box hits it (not when it is the label's own
    block); one in the empty corner of the view hits nothing."""
    w, h = 1280, 720
    view = shown_view(qtbot, k3_config, w, h)
    outlines = BlockOutlines(view.layout, view.cam, w, h)
    box = block_screen_box(view.layout.by_id["lm_head"], view.cam, w, h)
    r = QRectF(box.center().x() - 5, box.center().y() - 2, 10, 4)
    assert "lm_head" in outlines.hits(r)
    assert "lm_head" not in outlines.hits(r, own="lm_head") and not outlines.clear(r) and outlines.clear(
        QRectF(w - 12, 2, 10, 4))
