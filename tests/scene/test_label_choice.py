"""Which labels the overlay shows and what they say, in a real SceneView under Xvfb:
- the legend names the model by its display name ("Kimi K3"), not its config id ("kimi-k3"), for every shipped
  config in English and Korean;
- an MLA layer at the prefill step, framed as the player and the export frame it, labels its latent cache c_kv
  (its narrow block used to lose every spot to its neighbour's wider label)."""
import json
from pathlib import Path

import pytest

from compute.config import ModelConfig, available_configs
from scene.labels import _legend_layout, block_screen_box, place_labels
from scene.steps import build_steps
from scene_helpers import shown_view

I18N = Path(__file__).resolve().parents[2] / "assets" / "i18n"


def scene_tr(lang: str):
    table = json.loads((I18N / f"scene.{lang}.json").read_text(encoding="utf-8"))

    def tr(key, **fmt):
        return table.get(key, f"[{key}]").format(**fmt)
    return tr


@pytest.mark.parametrize("stem", sorted(available_configs()))
def test_the_legend_names_the_model_by_its_display_name(qtbot, stem):
    cfg = ModelConfig.from_json(available_configs()[stem])
    assert cfg.display_name != cfg.name  # each shipped config has one
    view = shown_view(qtbot, cfg, 800, 500)
    for lang in ("en", "ko"):
        view.set_translator(scene_tr(lang))
        notes = " ".join(_legend_layout(view._overlay_input(), 800, 500, 1.0)["notes"])
        assert cfg.display_name in notes and cfg.name not in notes, (lang, notes)


@pytest.mark.parametrize("size,export", [((1600, 900), True), ((1060, 930), False), ((1600, 1000), True)])
def test_an_mla_layer_at_prefill_labels_its_latent_cache(qtbot, k3_config, trace_a, size, export):
    w, h = size
    view = shown_view(qtbot, k3_config, w, h)
    view.set_trace(trace_a)
    prefill = next(s for s in build_steps(trace_a) if s.index == 5)  # step 6, as the player counts
    view.set_layer(3, animate=False)  # layer 4: Gated MLA
    view.set_pass(prefill.pass_index)
    view.set_token(prefill.token)
    view.set_step_focus(prefill.kind)
    qtbot.waitUntil(lambda: view._anim_path is None, timeout=5000)
    assert view.layout.dims.mixers[3] == "mla"
    scale = max(0.75, min(w / 1280, h / 800)) if export else 1.0  # what an export and the screen use
    placement = place_labels(view._overlay_input(), w, h, scale)
    box = block_screen_box(view.layout.by_id["L4/mla.c_kv"], view.cam, w, h)
    assert box is not None and 0 <= box.center().x() <= w and 0 <= box.center().y() <= h  # on screen
    label = placement.label_for("L4/mla.c_kv")
    assert label is not None, "no label for the latent cache c_kv"
    assert label.rect.adjusted(-6, -6, 6, 6).intersects(box)  # on its own block
