"""Which labels the overlay shows and what they say, in a real SceneView under Xvfb:
- the legend names the model by its display name ("Kimi K3"), not its config id ("kimi-k3"), for every shipped
  config in English and Korean;
- an MLA layer at the prefill step, framed as the player and the export frame it, labels its latent cache c_kv
  (its narrow block used to lose every spot to its neighbour's wider label), over no other block;
- in a narrow picture the header's lines wrap inside its panel (the Korean title ran off the image)."""
import json
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage, QPainter

from assets.plurals import format_text
from scene.label_obstacles import BlockOutlines

from compute.config import ModelConfig, available_configs
from scene.labels import _legend_layout, block_screen_box, paint_overlay, place_labels
from scene.steps import build_steps
from scene.view import SCENE_CATALOGUES
from scene_helpers import shown_view

I18N = Path(__file__).resolve().parents[2] / "assets" / "i18n"


def scene_tr(lang: str):
    table = {}
    for name in SCENE_CATALOGUES:
        table.update(json.loads((I18N / f"{name}.{lang}.json").read_text(encoding="utf-8")))

    def tr(key, **fmt):
        return format_text(table.get(key, f"[{key}]"), **fmt)  # str.format with count phrases, as the app
    return tr


@pytest.mark.parametrize("stem", sorted(available_configs()))
def test_the_legend_names_the_model_by_its_display_name(qtbot, stem):
    cfg = ModelConfig.from_json(available_configs()[stem])
    assert cfg.display_name != cfg.name  # each shipped config has one
    view = shown_view(qtbot, cfg, 800, 500)
    for lang in ("en", "ko"):
        view.set_translator(scene_tr(lang))
        notes = " ".join(_legend_layout(view.overlay_input(), 800, 500, 1.0)["notes"])
        assert cfg.display_name in notes and cfg.name not in notes, (lang, notes)


def prefill_view(qtbot, config, trace, w, h):
    """A view at layer 4 (Gated MLA) and step 6 (prefill), as the player and the export show it."""
    view = shown_view(qtbot, config, w, h)
    view.set_trace(trace)
    prefill = next(s for s in build_steps(trace) if s.index == 5)  # step 6, as the player counts
    view.set_layer(3, animate=False)
    view.set_pass(prefill.pass_index)
    view.set_token(prefill.token)
    view.set_step_focus(prefill.kind)
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)
    return view


@pytest.mark.parametrize("size,export", [((1600, 900), True), ((1060, 930), False), ((1600, 1000), True)])
def test_an_mla_layer_at_prefill_labels_its_latent_cache(qtbot, k3_config, trace_a, size, export):
    w, h = size
    view = prefill_view(qtbot, k3_config, trace_a, w, h)
    assert view.layout.dims.mixers[3] == "mla"
    scale = max(0.75, min(w / 1280, h / 800)) if export else 1.0  # what an export and the screen use
    placement = place_labels(view.overlay_input(), w, h, scale)
    box = block_screen_box(view.layout.by_id["L4/mla.c_kv"], view.cam, w, h)
    assert box is not None and 0 <= box.center().x() <= w and 0 <= box.center().y() <= h  # on screen
    label = placement.label_for("L4/mla.c_kv")
    assert label is not None, "no label for the latent cache c_kv"
    # on its own block, or (where every spot by it covers another block) tied to it by a leader line
    if not label.rect.adjusted(-6, -6, 6, 6).intersects(box):
        assert label.leader is not None
        x1, y1 = label.leader[2:]
        assert box.adjusted(-1, -1, 1, 1).contains(x1, y1)
    assert not BlockOutlines(view.layout, view.cam, w, h).hits(label.rect.adjusted(3 * scale, 3 * scale,
                                                                                   -3 * scale, -3 * scale),
                                                              "L4/mla.c_kv")  # over no other block


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_header_wraps_inside_its_panel_in_a_narrow_picture(qtbot, k3_config, trace_a, lang):
    """Pixels: the overlay of a 360 x 640 export painted alone; no text in the header's right padding or beyond
    it, and the whole title is there (wrapped, not cut)."""
    w, h = 360, 640
    view = prefill_view(qtbot, k3_config, trace_a, w, h)
    view.set_translator(scene_tr(lang))
    inp = view.overlay_input()
    scale = max(0.75, min(w / 1280, h / 800))
    img = QImage(w, h, QImage.Format_RGBA8888)
    img.fill(0)
    p = QPainter(img)
    placement = paint_overlay(p, inp, w, h, scale)
    p.end()
    header = placement.header
    assert header.right() <= w - 4
    px = np.frombuffer(img.constBits(), np.uint8, img.sizeInBytes()).reshape(h, img.bytesPerLine())[:, :w * 4]
    rgba = px.reshape(h, w, 4).astype(int)
    band = rgba[int(header.top()) + 2:int(header.bottom()) - 2]
    bright = band[..., :3].max(axis=-1) > 150  # text, not the dark panel or its edge
    right_pad = int(header.right() - 6 * scale)
    assert not bright[:, right_pad:].any(), "header text runs into the panel's edge or off the picture"
    header_text = "".join(t for _, t in _header_lines_drawn(inp, w, scale))
    for word in inp.tr("scene.title").split():
        assert word in header_text


def _header_lines_drawn(inp, w, scale):
    from scene.labels import _fitted_header_lines, _fonts

    return _fitted_header_lines(inp, w, scale * inp.label_scale, _fonts(scale * inp.label_scale))


CAPS = ("final.attnres", "final.norm", "lm_head", "sampling")


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
@pytest.mark.parametrize("stem", sorted(available_configs()))
def test_every_block_of_the_stack_cap_is_named_beside_itself(qtbot, stem, size):
    """The four thin blocks over the stack (final AttnRes, final norm, LM head, sampling) all get a label, in
    both languages, for every shipped model: above them only two names fit, so the LM head's was lost at
    1280 x 720 (K3) and in a DeepSeek-V3 export (the sampling label took its place). A side label's leader line
    ends on its own block, and no two labels overlap."""
    w, h = size
    cfg = ModelConfig.from_json(available_configs()[stem])
    view = shown_view(qtbot, cfg, w, h)
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)
    scale = max(0.75, min(w / 1280, h / 800))
    for lang in ("en", "ko"):
        view.set_translator(scene_tr(lang))
        placement = place_labels(view.overlay_input(), w, h, scale)
        caps = [c for c in CAPS if c in view.layout.by_id]
        assert len(caps) >= 3
        for cap in caps:
            label = placement.label_for(cap)
            assert label is not None, (stem, lang, cap, [lb.name for lb in placement.labels])
            assert 0 <= label.rect.left() and label.rect.right() <= w
            box = block_screen_box(view.layout.by_id[cap], view.cam, w, h)
            if label.leader is not None:
                x0, y0, x1, y1 = label.leader
                assert box.left() - 1 <= x1 <= box.right() + 1 and box.top() - 1 <= y1 <= box.bottom() + 1
        rects = [lb.rect for lb in placement.labels]
        for i, a in enumerate(rects):
            assert not any(a.intersects(b) for b in rects[i + 1:]), (stem, lang)
            assert not a.intersects(placement.header) and not a.intersects(placement.legend), (stem, lang)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_legend_note_wider_than_the_view_wraps_inside_it(qtbot, lang):
    """The causal route's legend line is wider than a 700-px view: it wraps at its spaces,
    every line and the box inside the picture, and no word of it lost (it ran off the right edge)."""
    from PySide6.QtGui import QFontMetricsF

    cfg = ModelConfig.from_json(available_configs()["kimi-k3"])
    view = shown_view(qtbot, cfg, 700, 900)
    tr = scene_tr(lang)
    view.set_translator(tr)
    inp = view.overlay_input()
    inp.route_on, inp.route_kind = True, "causal"
    lg = _legend_layout(inp, 700, 900, 1.0)
    fm = QFontMetricsF(lg["font"])
    note = tr("scene.legend.route_causal")
    assert fm.horizontalAdvance(note) > 700 - 2 * lg["pad"]  # the case: one note wider than the view
    assert lg["box"].right() <= 700 and lg["box"].left() >= 0
    assert all(fm.horizontalAdvance(t) <= lg["box"].width() - 2 * lg["pad"] + 0.5 for t in lg["notes"])
    joined = " ".join(lg["notes"])
    assert all(word in joined for word in note.split())


def test_the_header_notes_a_prompt_outside_the_toy_language(qtbot, k3_config, trace_a, trace_b):
    """The header's note follows the trace's own record of its prompt (Trace.prompt_in_language): trace_b's
    English sentence is outside the toy language, trace_a's Korean one inside."""
    assert trace_a.prompt_in_language is True and trace_b.prompt_in_language is False
    view = shown_view(qtbot, k3_config, 800, 500)
    view.set_translator(scene_tr("en"))
    outside = scene_tr("en")("scene.outside")
    view.set_trace(trace_b)
    assert view.outside and view.overlay_input().outside_note == outside
    view.set_trace(trace_a)
    assert not view.outside and view.overlay_input().outside_note == ""
