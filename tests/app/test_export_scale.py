"""The exported overlay scales with the picture (issue 46.5): a 320 x 180 animation frame shows the model, not a
legend drawn at a laptop screen's size (before: the header and legend covered ~75 % of it), and a 4K PNG's
legend is drawn large enough to read. Measured on the real rendered pixels: the overlay's share of the frame is
where the picture with labels differs from the same picture without them."""
import numpy as np
import pytest

from app.export import animate
from app import player
from app.export.caption import caption_band_height
from app.export.image import render_view
from scene.labels import place_labels
from scene.legend import MAX_LEGEND_SHARE, export_label_scale
from tests.app.gui_helpers import image_array


@pytest.fixture
def view_at(main_window):
    views = []

    def make(w, h):
        win = main_window
        v = animate.offscreen_view(win.config, win.state.trace, win.state.layer, None, w, h)
        v.export_size = (w, h)
        views.append(v)
        return v

    yield make
    from app.window.animate_dialog import _close_view

    for v in views:
        _close_view(v)


def covered(view, w, h) -> float:
    """The share of the model's pixels (those of the picture without the overlay that differ from its
    background) that the overlay (header, legend, labels on their panels) covers or changes."""
    with_labels = image_array(render_view(view, w, h))[..., :3].astype(int)
    plain = image_array(render_view(view, w, h, labels=False))[..., :3].astype(int)
    model = np.abs(plain - plain[0, 0]).sum(-1) > 40
    changed = np.abs(with_labels - plain).sum(-1) > 30
    assert model.mean() > 0.1  # the model fills a good part of the picture
    return float((model & changed).sum() / model.sum())


def test_a_small_gif_frame_is_mostly_model(main_window, view_at):
    w, h = 320, 180
    steps = player.build_steps(main_window.state.trace)
    spec = animate.AnimationSpec(width=w, height=h, fps=5, lang="en")
    band = caption_band_height(w, h, [animate.caption_text(steps, i, spec, main_window.config)
                                      for i in range(len(steps))])
    assert 0 < band <= 0.3 * h + 1  # the caption band below the picture
    view = view_at(w, h - band)
    share = covered(view, w, h - band)
    assert share < 0.5, share  # the fonts and legend of a 1280 x 800 picture covered 0.8 of it
    pl = place_labels(view.overlay_input(), w, h - band, export_label_scale(w, h - band))
    assert pl.legend.height() <= MAX_LEGEND_SHARE * (h - band) + 1


def test_a_4k_png_has_a_legible_legend(main_window, view_at):
    w, h = 3840, 2160
    view = view_at(w, h)
    s = export_label_scale(w, h)
    assert s > 2.5  # the legend's 10.5-px font -> over 26 px on a 4K picture
    from scene.legend import _legend_layout

    lg = _legend_layout(view.overlay_input(), w, h, s)
    assert lg["font"].pixelSize() >= 26 and lg["notes"]  # notes and roles kept: there is room
    assert lg["box"].height() <= MAX_LEGEND_SHARE * h
    img = image_array(render_view(view, w, h))[..., :3].astype(int)
    box = lg["box"]
    inside = img[int(box.top()) + 4:int(box.bottom()) - 4, int(box.left()) + 4:int(box.right()) - 4]
    bright = (inside.sum(-1) > 450).mean()  # the legend's light text on its dark panel
    assert 0.01 < bright < 0.5, bright
