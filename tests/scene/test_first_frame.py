"""The first frame of a SceneView: the 3D picture reaches the screen without waiting for the label
layout, and the complete frame (labels included) follows at once; shown_version and paint_count count only
complete frames, so whoever waits for them still gets the labels."""
import time

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

W, H = 900, 600
TITLE = (slice(8, 40), slice(8, 360))  # the HUD title, drawn with the labels


def _pixels(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format_RGBA8888)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return arr.reshape(img.height(), img.bytesPerLine())[:, : img.width() * 4].reshape(
        img.height(), img.width(), 4)[..., :3].astype(int)


def _on_screen(view) -> np.ndarray:
    """What the X server shows in the 3D view now (not a re-render)."""
    top_left = view.gl.mapToGlobal(QPoint(0, 0))
    shot = QApplication.primaryScreen().grabWindow(0, top_left.x(), top_left.y(), view.gl.width(), view.gl.height())
    return _pixels(shot.toImage())


def test_first_frame_shows_the_picture_and_its_labels_follow_at_once(qtbot, k3_config):
    from scene.view import SceneView

    view = SceneView(None, k3_config)
    qtbot.addWidget(view)
    view.resize(W, H)
    swaps = []  # (seconds, paint_count, shown_version) at each frame put on screen
    shown = []  # what the widget shows just after each of them
    drawn_frames = []  # (complete, labels_ms) of each frame the render thread hands over, read in that thread
    # as it emits (renderer.timings is its LAST frame's: by the preview's swap the complete one may be drawn)

    def swapped():  # emitted by the widget's paintEvent, right after it drew the frame
        swaps.append((time.monotonic(), view.gl.paint_count, view.gl.shown_version))
        # the image it has just drawn, 1:1 (dpr 1), read now: a grab one event-loop turn later could already show
        # the next frame (on a loaded machine the complete frame was queued before it, and the "preview" grab had
        # the labels); a grab from here would repaint inside this paintEvent (Qt: "Recursive repaint detected")
        shown.append(_pixels(view.gl._frame))

    view.gl.renderer.frame_ready.connect(
        lambda _img, _v, _cam, complete: drawn_frames.append((complete, view.gl.renderer.timings["labels_ms"])),
        Qt.ConnectionType.DirectConnection)
    view.gl.frameSwapped.connect(swapped)
    view.show()
    # (drawn_frames too: the render thread runs the widget's queued connection first, then this direct one, so the
    # complete frame may be on screen before its entry is here)
    qtbot.waitUntil(lambda: view.gl.paint_count > 0 and len(shown) == len(swaps) == 2 and len(drawn_frames) >= 2,
                    timeout=10000)
    shown[-1] = _on_screen(view)  # the complete frame as the X server shows it
    assert len(swaps) == 2 == len(shown)
    (preview, complete), (before, after) = swaps, shown
    assert preview[1:3] == (0, -1), "the first frame is a preview: not counted"
    assert complete[1] == 1 and complete[2] == view.gl.version
    assert [c for c, _ms in drawn_frames[:2]] == [False, True]
    assert drawn_frames[0][1] < 1.0 and drawn_frames[1][1] > 0, "the preview lays out no labels, the complete frame does"
    assert complete[0] - preview[0] < 1.5, "the labels did not follow the first frame at once"
    bg = np.array([c * 255 for c in view.gl.opts["bgcolor"][:3]])
    glyphs = np.abs(after[TITLE] - bg).max(axis=-1) > 60
    assert glyphs.mean() > 0.03, "the complete frame has the title"
    assert (np.abs(before[TITLE] - bg).max(axis=-1) > 60).mean() < glyphs.mean() / 4
    drawn = np.abs(before - bg).max(axis=-1) > 60
    assert drawn.mean() > 0.05, "the preview shows the 3D picture"
    assert (np.abs(before - after).max(axis=-1)[drawn] < 60).mean() > 0.6, "the same picture, labels over it"


def test_config_given_to_the_view_is_laid_out_once(qtbot, k3_config, monkeypatch):
    from scene import view as view_module

    calls = []
    build = view_module.build_layout
    monkeypatch.setattr(view_module, "build_layout", lambda *a, **k: calls.append(a) or build(*a, **k))
    view = view_module.SceneView(None, k3_config)
    qtbot.addWidget(view)
    assert len(calls) == 1 and view.cfg is k3_config and view.layout.dims.n_layers == k3_config.num_hidden_layers
