"""Camera moves must not leak : a layer change animates the camera; 200 of them (as an
auto-play soak makes) used to leave 200 QVariantAnimation children of the view and 400 Camera objects alive."""
import gc

import pytest
from PySide6.QtCore import QVariantAnimation
from scene_helpers import shown_view

W, H = 900, 600


@pytest.fixture
def view(qtbot, k3_config):
    return shown_view(qtbot, k3_config, W, H)


def _cameras() -> int:
    from scene.camera import Camera

    gc.unfreeze()  # objects a window froze for the collector (scene/gc_main_thread.settle) are counted too
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Camera))


def test_many_animated_layer_changes_keep_animations_and_cameras_bounded(view, qtbot):
    view.set_layer(0)  # warm up: the first move, the camera caches
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)  # the move ended
    cams_before = _cameras()
    for i in range(200):
        view.set_layer(1 + i % 90)  # animated: the view is visible
        # most moves are cut short by the next one (PgDn held, 5 ms apart), every 20th runs to its end
        if i % 20 == 0:
            qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)
        else:
            qtbot.wait(5)  # the key repeat's pace, not a wait for something
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)
    anims = view.findChildren(QVariantAnimation)
    assert len(anims) <= 1, f"{len(anims)} camera animations alive after 200 layer changes"
    cams_after = _cameras()
    assert cams_after - cams_before <= 4, f"Camera objects grew {cams_before} -> {cams_after}"
    # and the moves still arrive: the camera ends framing the last layer, as an unanimated move would
    end = view.camera_state()
    view.set_layer(view.layer0, animate=False)
    now = view.camera_state()
    assert now["center"] == pytest.approx(end["center"]) and now["distance"] == pytest.approx(end["distance"])
