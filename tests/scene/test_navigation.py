"""Camera navigation maths without Qt (scene/navigation.py): orbit, pan, zoom, clamps and the framings."""
import math

import numpy as np
import pytest

from scene import camera as camlib
from scene import navigation as nav
from scene.camera import Camera
from scene.layout import build_layout

ASPECT = 1100 / 700


def _inside(cam, corners, aspect=ASPECT, margin=0.0):
    w, h = 1000.0 * aspect, 1000.0
    px, ok = camlib.project(corners, cam, w, h)
    lo, hi = px.min(axis=0), px.max(axis=0)
    return bool(ok.all() and lo[0] >= -margin and lo[1] >= -margin and hi[0] <= w + margin and hi[1] <= h + margin)


def _share(cam, corners, aspect=ASPECT):
    w, h = 1000.0 * aspect, 1000.0
    px, _ = camlib.project(corners, cam, w, h)
    ext = px.max(axis=0) - px.min(axis=0)
    return ext[0] * ext[1] / (w * h)


def test_orbit_turns_by_the_drag_and_stops_short_of_the_poles():
    cam = Camera(azimuth=-100.0, elevation=14.0)
    moved = nav.orbit(cam, 20, -10)
    assert moved.azimuth == pytest.approx(-100.0 - 20 * nav.ORBIT_DEG_PER_PX)
    assert moved.elevation == pytest.approx(14.0 - 10 * nav.ORBIT_DEG_PER_PX)
    assert moved.center == cam.center and moved.distance == cam.distance
    assert (cam.azimuth, cam.elevation) == (-100.0, 14.0)  # the input is never changed
    assert nav.orbit(cam, 0, 10_000).elevation == nav.MAX_ELEVATION
    assert nav.orbit(cam, 0, -10_000).elevation == -nav.MAX_ELEVATION


def test_pan_moves_the_centre_in_the_view_plane_by_the_dragged_pixels():
    cam = Camera(center=(0.0, 0.0, 0.0), distance=40.0, azimuth=-90.0, elevation=0.0, fov=40.0)
    width = 1000.0
    moved = nav.pan(cam, 100, 0, width)
    # looking along +y: right is +x; the scene follows the cursor, so the centre moves the other way
    per_px = 2 * 40.0 * math.tan(math.radians(20.0)) / width
    assert moved.center == pytest.approx((-100 * per_px, 0.0, 0.0), abs=1e-9)
    up = nav.pan(cam, 0, 50, width)
    assert up.center[2] == pytest.approx(50 * per_px) and up.center[0] == pytest.approx(0.0, abs=1e-9)
    assert (moved.azimuth, moved.elevation, moved.distance) == (cam.azimuth, cam.elevation, cam.distance)
    # a point of the centre plane under the cursor stays under it: it moves by the drag
    p = np.array([[3.0, 0.0, 2.0]])  # on the plane through the centre, facing the camera
    a, _ = camlib.project(p, cam, width, 700)
    b, _ = camlib.project(p, moved, width, 700)
    assert b[0, 0] - a[0, 0] == pytest.approx(100, rel=0.02)


def test_wheel_and_keys_zoom_within_the_limits():
    cam = Camera(distance=60.0)
    assert nav.wheel_zoom(cam, 240).distance == pytest.approx(60.0 * nav.WHEEL_BASE ** 240)
    assert nav.wheel_zoom(cam, -240).distance > 60.0
    assert nav.wheel_zoom(cam, 10 ** 9).distance == pytest.approx(60.0 * nav.WHEEL_BASE ** nav.WHEEL_MAX)
    c = cam
    for _ in range(500):
        c = nav.key_move(c, "in")
    assert c.distance == camlib.ZOOM_MIN
    for _ in range(500):
        c = nav.wheel_zoom(c, -nav.WHEEL_MAX)
    assert c.distance == camlib.ZOOM_MAX and math.isfinite(c.distance)
    assert nav.key_move(cam, "left").azimuth == cam.azimuth + nav.KEY_ORBIT_DEG
    assert nav.key_move(cam, "down").elevation == cam.elevation - nav.KEY_ORBIT_DEG
    with pytest.raises(ValueError, match="unknown camera key action"):
        nav.key_move(cam, "sideways")


@pytest.mark.parametrize("azimuth, elevation", [(-100.0, 14.0), (-60.0, 40.0), (80.0, 10.0), (-90.0, 89.0),
                                                (-150.0, -60.0), (10.0, 30.0)])
def test_frame_layer_shows_the_whole_layer_from_any_orbit(azimuth, elevation):
    lay = build_layout(None, 40)
    orbited = Camera(center=(50.0, -30.0, 5.0), distance=3.0, azimuth=azimuth, elevation=elevation)
    cam = nav.frame_layer(lay, orbited, ASPECT)
    corners = nav.layer_corners(lay)
    assert _inside(cam, corners)
    assert _share(cam, corners) > 0.3
    if (azimuth, elevation) == (-60.0, 40.0):  # angles that show the layer's front are kept
        assert (cam.azimuth, cam.elevation) == (azimuth, elevation)
    if azimuth in (80.0, 10.0) or elevation in (89.0, -60.0):  # from behind / edge-on / below: default angles
        assert (cam.azimuth, cam.elevation) == (nav.LAYER_AZIMUTH, nav.LAYER_ELEVATION)


def test_top_preset_looks_down_on_the_current_layer():
    for layer0 in (0, 3, 40, 92):
        lay = build_layout(None, layer0)
        cam = nav.preset_camera("top", lay, ASPECT)
        assert cam.elevation == nav.TOP_ELEVATION
        corners = nav.block_corners(lay)
        assert _inside(cam, corners) and _share(cam, corners) > 0.4
    with pytest.raises(ValueError, match="unknown camera preset"):
        nav.preset_camera("under", lay, ASPECT)
    # the other presets still frame the whole scene
    reset = nav.preset_camera("reset", lay, ASPECT)
    assert _inside(reset, camlib.box_corners(*lay.bounds), margin=1.0)
