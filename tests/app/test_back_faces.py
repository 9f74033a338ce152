"""Seen from behind: the exploded layer's cells stay drawn when the camera orbits behind it.

The backdrop behind the panel used to be a closed box: seen from behind it sat between the camera and every
cell, so only labels and wires floated. It is now two one-sided sheets (scene/geometry.backdrop_verts); the
culled one is always the sheet in front of the cells. Pixel check on real renders (labels off): inside the
projected rectangle of the panel's walls, the share of pixels unlike the backdrop is about the same from the
front and from behind (azimuth + 180 degrees), and far above the near-nothing a hidden panel shows.
"""
import numpy as np
import pytest

from gui_helpers import image_array

W, H = 900, 600


@pytest.fixture
def view(qtbot):
    from compute.config import load_default
    from compute.engine import ToyK3
    from scene.view import SceneView

    v = SceneView()
    qtbot.addWidget(v)
    v.resize(W, H)
    v.show()
    qtbot.waitExposed(v)
    v.set_config(load_default())
    v.set_trace(ToyK3().run("ab", max_new_tokens=1))
    v.set_layer(36, animate=False)
    v.set_camera_preset("reset", animate=False)
    v.labels_enabled = False
    qtbot.waitUntil(lambda: v.gl.paint_count > 0, timeout=10000)
    return v


def _walls_rect(v) -> tuple[int, int, int, int]:
    """Pixel rectangle (x0, y0, x1, y1) of the projected corners of the panel's tensor walls."""
    from scene import camera as camlib

    walls = [b for b in v.layout.layer_blocks() if b.grid is not None and b.orient == "wall"]
    corners = np.concatenate([camlib.box_corners(b.lo, b.hi) for b in walls])
    px, ok = camlib.project(corners, v.cam, W, H)
    assert ok.all()
    (x0, y0), (x1, y1) = px.min(axis=0), px.max(axis=0)
    return max(int(x0), 0), max(int(y0), 0), min(int(x1), W), min(int(y1), H)


def _cell_share(v) -> tuple[float, np.ndarray]:
    img = image_array(v.render_image(W, H))[..., :3].astype(int)
    x0, y0, x1, y1 = _walls_rect(v)
    region = img[y0:y1, x0:x1]
    assert region.size > 0.05 * W * H * 3  # the panel is a good part of the picture
    backdrop = np.median(region.reshape(-1, 3), axis=0)
    unlike = np.abs(region - backdrop).max(axis=-1) > 30
    return float(unlike.mean()), img


def _turn(v, degrees: float) -> None:
    st = v.camera_state()
    st["azimuth"] += degrees
    v.set_camera_state(st)


def test_cells_drawn_from_behind(view, tmp_path):
    front, _ = _cell_share(view)
    _turn(view, 180.0)
    behind, img = _cell_share(view)
    from PIL import Image
    Image.fromarray(img.astype(np.uint8)).save(tmp_path / "behind.png")
    # measured: front 0.136, behind 0.121 (with the closed backdrop box: behind 0.000)
    assert front > 0.06, front
    assert behind > 0.06, behind
    assert behind > 0.5 * front, (front, behind)


def test_front_view_unchanged_by_second_sheet(view):
    """From the front the second sheet is culled: nothing new stands in front of the cells (the walls'
    pixels match a render without the backdrop's near sheet, i.e. the old front look)."""
    from scene import geometry

    bd = view.layout.by_id[f"L{view.layout.layer + 1}/backdrop"]
    near = geometry.backdrop_near_y(view.layout, bd)
    walls_lo = min(b.lo[1] for b in view.layout.layer_blocks())
    assert near < walls_lo  # the near sheet lies in front of every block of the panel
    v = geometry.backdrop_verts(bd, near).reshape(6, 4, 3)
    assert np.allclose(v[3, :, 1], bd.hi[1]) and np.allclose(v[2, :, 1], near)
    # the four sides have no area
    for f in (0, 1, 4, 5):
        assert np.allclose(v[f], v[f, 0])
    share, _ = _cell_share(view)
    assert share > 0.06
