"""Exports for slides: the title and legend stay legible on a white and on a black slide when the
background is transparent (they sit on an opaque backdrop), and a light slide theme draws dark text on light
panels over a light background. Measured: luminance of the title's text pixels against their backdrop, after
compositing the transparent PNG onto white and onto black."""
import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPushButton

from app.export.image import render_view
from gui_helpers import image_array
from scene.labels import place_labels

W, H = 1920, 1080


def _luminance(rgb: np.ndarray) -> np.ndarray:
    return rgb[..., 0] * 0.2126 + rgb[..., 1] * 0.7152 + rgb[..., 2] * 0.0722


def _composite(rgba: np.ndarray, backdrop: float) -> np.ndarray:
    """A straight-alpha RGBA image laid over a plain grey level (255 = white slide, 0 = black slide)."""
    a = rgba[..., 3:4].astype(float) / 255
    return rgba[..., :3].astype(float) * a + backdrop * (1 - a)


def _title_rect(scene, theme):
    inp = scene.overlay_input()
    inp.theme, inp.label_scale = theme, 1.0
    scale = max(0.75, min(W / 1280, H / 800))  # how exports size the labels (scene.view_export.paint_labels)
    header = place_labels(inp, W, H, scale).header
    r = header.adjusted(4, 4, -4, -4).toAlignedRect()
    return r.top(), r.top() + int(r.height() * 0.35), r.left(), r.right()  # the title's line of the header


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_transparent_export_title_contrasts_on_white_and_black_slides(main_window, theme):
    scene = main_window.scene
    img = render_view(scene, W, H, transparent=True, theme=theme).convertToFormat(QImage.Format_RGBA8888)
    px = image_array(img)
    assert px[..., 3].min() == 0  # the background really is transparent
    y0, y1, x0, x1 = _title_rect(scene, theme)
    panels = []
    for slide in (255.0, 0.0):
        region = _luminance(_composite(px[y0:y1, x0:x1], slide))
        backdrop = float(np.median(region))
        text = np.abs(region - backdrop) > 40
        assert 0.01 < text.mean() < 0.6, (theme, slide, text.mean())
        contrast = float(np.percentile(np.abs(region[text] - backdrop), 90))
        assert contrast > 120, f"{theme} title on a {'white' if slide else 'black'} slide: contrast {contrast:.0f}"
        panels.append(backdrop)
    assert abs(panels[0] - panels[1]) < 3  # the backdrop is opaque: the slide does not show through it
    if theme == "light":
        assert panels[0] > 200  # a light panel with dark text
    else:
        assert panels[0] < 50  # a dark panel with light text


def test_light_theme_from_the_dialog_gives_a_light_picture(main_window, qtbot, tmp_path):
    win = main_window
    QTest.keyClick(win.scene.gl, Qt.Key_S, Qt.ControlModifier)  # File -> Export image…
    from app.export.image import ExportDialog

    qtbot.waitUntil(lambda: any(d.isVisible() for d in win.findChildren(ExportDialog)), timeout=5000)
    dialog = [d for d in win.findChildren(ExportDialog) if d.isVisible()][0]
    assert dialog.theme.isEnabled() and dialog.theme.count() == 2
    dialog.theme.setCurrentIndex(dialog.theme.findData("light"))
    dialog.set_size_mode("1080p")
    out = tmp_path / "light.png"
    dialog.path_edit.setText(str(out))
    qtbot.mouseClick(dialog.findChild(QPushButton, "export_ok"), Qt.LeftButton)
    qtbot.waitUntil(lambda: "light.png" in win.statusBar().currentMessage(), timeout=30000)
    px = image_array(QImage(str(out)))[..., :3].astype(float)
    lum = _luminance(px)
    corners = [lum[5:40, -40:-5], lum[H // 2 - 20:H // 2 + 20, -40:-5]]  # right edge: background
    assert all(float(np.median(c)) > 200 for c in corners)
    y0, y1, x0, x1 = _title_rect(win.scene, "light")
    title = lum[y0:y1, x0:x1]
    assert float(np.median(title)) > 200 and float(np.percentile(title, 2)) < 90  # dark text on light
    dialog.close()
    dialog.deleteLater()
