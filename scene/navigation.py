"""Camera navigation maths, Qt-free: what a drag, the wheel, a key or a choice of layer does to the camera.

Every function takes a `scene.camera.Camera` and returns a new one (the input is never changed); the view
(scene/input.py maps Qt events to these calls) applies the result, sanitised. Pixels are logical widget pixels.

    orbit(cam, dx, dy)            drag with the left button: turn around the centre
    pan(cam, dx, dy, width)       Shift / middle drag: move the centre with the cursor
    wheel_zoom(cam, delta)        the wheel's angle delta (120 per notch); clamped (camera.zoom)
    key_move(cam, action)         "left" | "right" | "up" | "down" | "in" | "out"
    frame_layer(layout, cam, a)   the exploded layer framed, keeping the user's angles where they show it
    preset_camera(name, layout, a)  the named presets; "top" looks down on the current layer
    frame_block(lo, hi, cam, a)   one block centred and framed (a double-click, a selection off screen)
    box_in_view(lo, hi, cam, w, h, band)  whether a box lies whole in the view's free band
"""
from __future__ import annotations

import math

import numpy as np

from scene import camera as camlib
from scene.camera import Camera

ORBIT_DEG_PER_PX = 0.35
MAX_ELEVATION = 89.0  # orbiting stops short of the poles (the view's up vector would flip)
KEY_ORBIT_DEG = 5.0
KEY_ZOOM = 0.85  # one +/- key press
WHEEL_BASE = 0.999  # distance factor per unit of wheel angle delta
WHEEL_MAX = 2400  # larger deltas (a flung touchpad) count as this much
# the band of the view a framing fills: between the title block (top ~11 %) and the legend (bottom ~9 %)
FILL_X, FILL_Y, CENTRE_Y = 0.92, 0.78, 0.505
# the angles a layer is framed at when the user's angles show it badly (from behind, edge-on, from below)
LAYER_AZIMUTH, LAYER_ELEVATION = -100.0, 14.0
# the "top" preset: high above the current layer, its front (the weight plates) towards the bottom edge
TOP_AZIMUTH, TOP_ELEVATION = -90.0, 64.0
# framing the layer with its slab of the stack too is kept only while the layer still gets this share
SLAB_KEEP_SHARE = 0.55
# the stack's top is framed too (kept out from under the header) while the layer keeps this share of its size
TOP_KEEP_SHARE = 0.8
STACK_TOP = ("final.attnres", "final.norm", "lm_head", "sampling")  # the blocks over the stack's last slab


def _copy(cam: Camera) -> Camera:
    return Camera(center=tuple(cam.center), distance=cam.distance, azimuth=cam.azimuth,
                  elevation=cam.elevation, fov=cam.fov)


def _clamp_elevation(e: float) -> float:
    return max(-MAX_ELEVATION, min(MAX_ELEVATION, e))


def orbit(cam: Camera, dx: float, dy: float) -> Camera:
    """Turn around the centre by a drag of (dx, dy) pixels: right = the scene turns right, down = look from
    higher up."""
    c = _copy(cam)
    c.azimuth -= dx * ORBIT_DEG_PER_PX
    c.elevation = _clamp_elevation(c.elevation + dy * ORBIT_DEG_PER_PX)
    return c


def pan(cam: Camera, dx: float, dy: float, width: float) -> Camera:
    """Move the centre so that the scene follows a drag of (dx, dy) pixels in a view `width` pixels wide."""
    c = _copy(cam)
    per_px = 2 * c.distance * math.tan(math.radians(c.fov) / 2) / max(width, 1.0)
    v = camlib.view_matrix(c)
    right, up = v[0, :3], v[1, :3]
    c.center = tuple(np.array(c.center) - right * dx * per_px + up * dy * per_px)
    return c


def wheel_zoom(cam: Camera, delta: float) -> Camera:
    """Zoom by a wheel angle delta (positive = in), within camera.zoom's limits."""
    c = _copy(cam)
    c.distance = camlib.zoom(c.distance, WHEEL_BASE ** max(-WHEEL_MAX, min(delta, WHEEL_MAX)))
    return c


KEY_ACTIONS = ("left", "right", "up", "down", "in", "out")


def key_move(cam: Camera, action: str) -> Camera:
    """One key press: orbit 5 degrees or zoom one step."""
    if action not in KEY_ACTIONS:
        raise ValueError(f"unknown camera key action {action!r}; expected one of {KEY_ACTIONS}")
    c = _copy(cam)
    c.azimuth += {"left": KEY_ORBIT_DEG, "right": -KEY_ORBIT_DEG}.get(action, 0.0)
    c.elevation = _clamp_elevation(c.elevation + {"up": KEY_ORBIT_DEG, "down": -KEY_ORBIT_DEG}.get(action, 0.0))
    c.distance = camlib.zoom(c.distance, {"in": KEY_ZOOM, "out": 1 / KEY_ZOOM}.get(action, 1.0))
    return c


# ---- framing -------------------------------------------------------------------------------------------
def layer_corners(layout, with_slab: bool = False) -> np.ndarray:
    """Corners of the exploded layer's box (its blocks and the backdrop whose margin holds the token names), and
    of its slab in the stack: 8 or 16 points, so a framing's distance search stays cheap on the UI thread."""
    lo, hi = layout.panel_bounds
    boxes = [(lo, hi)]
    if with_slab:
        slab = layout.by_id.get(f"L{layout.layer + 1}/stack.layer")
        if slab is not None:
            boxes.append((slab.lo, slab.hi))
    return np.concatenate([camlib.box_corners(a, b) for a, b in boxes])


def block_corners(layout) -> np.ndarray:
    """Corners of every block of the exploded layer (a tighter fit than its box from steep angles, where the
    box's front-top edge lies above every block; ~300 points)."""
    return np.concatenate([camlib.box_corners(b.lo, b.hi) for b in layout.layer_blocks()])


def _share(cam: Camera, corners: np.ndarray, aspect: float) -> float:
    """Fraction of the view's area the projected box of `corners` covers."""
    w, h = 1000.0 * aspect, 1000.0
    px, _ = camlib.project(corners, cam, w, h)
    ext = px.max(axis=0) - px.min(axis=0)
    return float(ext[0] * ext[1] / (w * h))


def layer_angles(cam: Camera) -> tuple[float, float]:
    """The user's angles where they show the layer's front (its walls face -y): not from behind, not edge-on,
    not from below or straight down; otherwise the default layer angles."""
    facing = (cam.azimuth + 90.0 + 180.0) % 360.0 - 180.0  # 0 = looking straight at the front
    if abs(facing) > 70.0 or not -10.0 <= cam.elevation <= 75.0:
        return LAYER_AZIMUTH, LAYER_ELEVATION
    return cam.azimuth, cam.elevation


def frame_layer(layout, current: Camera, aspect: float, band: tuple[float, float] | None = None) -> Camera:
    """The exploded layer filling the view's band (between the header and the legend: band, or the fixed
    one), from the user's angles when they show it (layer_angles). Its slab in the stack is framed too while
    the layer keeps most of the view that way."""
    az, el = layer_angles(current)
    base = Camera(azimuth=az, elevation=el, fov=current.fov)
    layer = layer_corners(layout)
    fill_y, centre_y = band_fill(band)
    alone = camlib.fit_points(base, layer, aspect, FILL_X, fill_y, centre_y)
    with_slab = layer_corners(layout, with_slab=True)
    both = camlib.fit_points(base, with_slab, aspect, FILL_X, fill_y, centre_y)
    if _share(both, layer, aspect) < SLAB_KEEP_SHARE * _share(alone, layer, aspect):
        return alone
    top = _stack_top_corners(layout)
    # the band's own edges (the header's bottom and the legend's top, a gap kept), not the fill's inner ones
    band_top, band_bottom = band if band is not None else (centre_y - fill_y / 2, centre_y + fill_y / 2)
    if top is None or not _above_band(both, top, aspect, band_top):
        return both
    # the stack's top (final AttnRes, norm, LM head, sampling) would be drawn under the header. The layer's box
    # rarely fills the band's height (the view's width limits it): the picture is lowered into the room above
    # the legend, at the same size; where that room is too small, the stack's top is framed too (a zoom out)
    # while the layer keeps TOP_KEEP_SHARE of its size
    # what must stay above the legend: the layer, its slab and the stack's foot where it is in the band now
    foot = _stack_foot_corners(layout)
    keep = with_slab if foot is None or _below_band(both, foot, aspect, band_bottom) else \
        np.concatenate([with_slab, foot])
    lowered = _lowered(both, top, keep, aspect, band_top, band_bottom)
    if not _above_band(lowered, top, aspect, band_top):
        return lowered
    clear = camlib.fit_points(base, np.concatenate([keep, top]), aspect, FILL_X, fill_y, centre_y)
    if _share(clear, layer, aspect) >= TOP_KEEP_SHARE * _share(both, layer, aspect):
        return clear
    return lowered


def _stack_foot_corners(layout) -> np.ndarray | None:
    """Corners of the embedding block at the stack's foot, None where the layout has none."""
    b = layout.by_id.get("embedding")
    return None if b is None else camlib.box_corners(b.lo, b.hi)


def _below_band(cam: Camera, corners: np.ndarray, aspect: float, band_bottom: float) -> bool:
    """Whether any of the points, seen from cam, lies below band_bottom (a fraction of the view's height)."""
    w, h = 1000.0 * aspect, 1000.0
    px, _ = camlib.project(corners, cam, w, h)
    return bool((px[:, 1] > band_bottom * h).any())


def _lowered(cam: Camera, top: np.ndarray, framed: np.ndarray, aspect: float, band_top: float,
             band_bottom: float) -> Camera:
    """cam moved up (angles and distance kept, so the picture moves down) until the points `top` lie below
    band_top, as far as the points `framed` stay above band_bottom (fractions of the view's height)."""
    w, h = 1000.0 * aspect, 1000.0
    out = _copy(cam)
    for _ in range(3):  # a pan moves near and far points by different amounts: a few corrections
        px_top, _ = camlib.project(top, out, w, h)
        px_all, _ = camlib.project(framed, out, w, h)
        seen = (px_top[:, 0] >= 0) & (px_top[:, 0] <= w)
        need = band_top * h + 1.0 - (px_top[seen, 1].min() if seen.any() else band_top * h + 1.0)
        step = min(need, band_bottom * h - px_all[:, 1].max())
        if step <= 0.5:
            break
        up = camlib.view_matrix(out)[1, :3]
        per_px = 2 * out.distance * math.tan(math.radians(out.fov) / 2) / w
        out.center = tuple(np.array(out.center) + up * step * per_px)
    return out


def _stack_top_corners(layout) -> np.ndarray | None:
    """Corners of the blocks on top of the stack (STACK_TOP), None where the layout has none."""
    boxes = [(b.lo, b.hi) for b in (layout.by_id.get(k) for k in STACK_TOP) if b is not None]
    return np.concatenate([camlib.box_corners(a, b) for a, b in boxes]) if boxes else None


def _above_band(cam: Camera, corners: np.ndarray, aspect: float, band_top: float) -> bool:
    """Whether any of the points, seen from cam, lies inside the view's width and above band_top (a fraction
    of its height from the top), where the header is drawn over them."""
    w, h = 1000.0 * aspect, 1000.0
    px, _ = camlib.project(corners, cam, w, h)
    return bool(((px[:, 0] >= 0) & (px[:, 0] <= w) & (px[:, 1] < band_top * h)).any())


def top_view(layout, aspect: float, fov: float = 38.0, band: tuple[float, float] | None = None) -> Camera:
    """The current layer seen from high above, its blocks filling the view's band."""
    base = Camera(azimuth=TOP_AZIMUTH, elevation=TOP_ELEVATION, fov=fov)
    fill_y, centre_y = band_fill(band)
    return camlib.fit_points(base, block_corners(layout), aspect, FILL_X, fill_y, centre_y)


def preset_camera(name: str, layout, aspect: float, band: tuple[float, float] | None = None) -> Camera:
    """The camera of a named preset (camera.PRESETS) for this layout: "top" frames the current layer from
    above; the others frame the whole scene or the stack (camera.preset); band: the free part of the view's
    height between the header and the legend (SceneView.free_band), None for the fixed one."""
    if name not in camlib.PRESETS:
        raise ValueError(f"unknown camera preset {name!r}; expected one of {camlib.PRESETS}")
    if name == "top":
        return top_view(layout, aspect, band=band)
    return camlib.preset(name, layout.bounds, aspect, layout.stack_bounds, band=band)


# ---- one block ------------------------------------------------------------------------------------------
FRAME_FILL = 0.5  # a framed block fills half the band: centred, with its neighbours around it
FRAME_MIN_EXTENT = 4.0  # a thin block (a vector, a plate) is framed as if it were at least this big


band_fill = camlib.band_fill  # (fill_y, centre_y) of the free band (top, bottom); None: FILL_Y, CENTRE_Y


def block_angles(cam: Camera) -> tuple[float, float]:
    """The user's angles unless they show the panel's walls edge-on or from below / straight down (from
    behind is fine: both faces are drawn); otherwise the default layer angles."""
    facing = abs((cam.azimuth + 90.0 + 180.0) % 360.0 - 180.0)  # 0 front, 180 behind
    if 70.0 < facing < 110.0 or not -10.0 <= cam.elevation <= 75.0:
        return LAYER_AZIMUTH, LAYER_ELEVATION
    return cam.azimuth, cam.elevation


def frame_block(lo, hi, current: Camera, aspect: float, band: tuple[float, float] | None = None) -> Camera:
    """The block (lo, hi) centred in the band, filling FRAME_FILL of it (at least FRAME_MIN_EXTENT units
    wide in every direction), seen from the user's angles where they show it (block_angles)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    mid, half = (lo + hi) / 2, np.maximum((hi - lo) / 2, FRAME_MIN_EXTENT / 2)
    az, el = block_angles(current)
    fill_y, centre_y = band_fill(band)
    base = Camera(azimuth=az, elevation=el, fov=current.fov)
    return camlib.fit_points(base, camlib.box_corners(mid - half, mid + half), aspect,
                             FILL_X * FRAME_FILL, fill_y * FRAME_FILL, centre_y)


def box_in_view(lo, hi, cam: Camera, width: float, height: float,
                band: tuple[float, float] | None = None, margin: float = 2.0) -> bool:
    """Whether the box's 8 corners all project in front of the camera, inside the view's width and inside
    the band (top, bottom) of its height (fractions; None: the whole height), `margin` pixels in."""
    px, ok = camlib.project(camlib.box_corners(lo, hi), cam, width, height)
    if not ok.all():
        return False
    top, bottom = band if band is not None else (0.0, 1.0)
    (x0, y0), (x1, y1) = px.min(axis=0), px.max(axis=0)
    return bool(x0 >= margin and x1 <= width - margin and y0 >= top * height + margin
                and y1 <= bottom * height - margin)
