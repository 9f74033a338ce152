"""Camera state, presets fitted to the layout, eased interpolation and the matrices for picking (numpy).

The camera follows pyqtgraph's GLViewWidget 'euler' convention: it orbits `center` at `distance`, at
`azimuth` (degrees around z) and `elevation` (degrees above the x-y plane); `fov` is horizontal.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

PRESETS = ("front", "side", "top", "stack", "reset")

# Limits every camera the view applies is held to, so no input (a held key, the wheel, a long pan, a bad
# settings file) can drive a value to inf or NaN: distance range, zoom range of the wheel / +/- keys, and
# how far from the origin the orbit centre may wander (the scene is ~100 units across).
MIN_DISTANCE, MAX_DISTANCE = 0.5, 2000.0
ZOOM_MIN, ZOOM_MAX = 1.0, 400.0
MAX_REACH = 5000.0


@dataclass
class Camera:
    center: tuple[float, float, float] = (14.0, 0.0, 14.0)
    distance: float = 60.0
    azimuth: float = -100.0
    elevation: float = 16.0
    fov: float = 38.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["center"] = [float(v) for v in self.center]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Camera":
        c = cls()
        for k in ("distance", "azimuth", "elevation", "fov"):
            if k in d:
                setattr(c, k, float(d[k]))
        if "center" in d:
            c.center = tuple(float(v) for v in d["center"])
        return c.sanitized()

    def sanitized(self) -> "Camera":
        """This camera with every value finite and in range (non-finite values fall back to the defaults)."""
        base = Camera()
        center = tuple(_clip(_finite(v, b), -MAX_REACH, MAX_REACH) for v, b in zip(self.center, base.center))
        azimuth = _finite(self.azimuth, base.azimuth)
        if not -360.0 <= azimuth <= 360.0:  # keep orbiting bounded: the same direction, a small number
            azimuth = math.fmod(azimuth, 360.0)
        return Camera(center=center,
                      distance=_clip(_finite(self.distance, base.distance), MIN_DISTANCE, MAX_DISTANCE),
                      azimuth=azimuth,
                      elevation=_clip(_finite(self.elevation, base.elevation), -90.0, 90.0),
                      fov=_clip(_finite(self.fov, base.fov), 1.0, 170.0))

    def position(self) -> np.ndarray:
        e, a = math.radians(self.elevation), math.radians(self.azimuth)
        return np.array(self.center) + self.distance * np.array(
            [math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])


def zoom(distance: float, factor: float) -> float:
    """The distance after a zoom step by `factor` (<1 in, >1 out), kept in [ZOOM_MIN, ZOOM_MAX]; a camera
    already outside that range (a preset in a narrow window, a saved close-up) may come back but not go further."""
    if not math.isfinite(distance):
        return ZOOM_MAX
    near, far = max(min(ZOOM_MIN, distance), MIN_DISTANCE), min(max(ZOOM_MAX, distance), MAX_DISTANCE)
    d = distance * factor
    return _clip(d if math.isfinite(d) else far, near, far)


def _finite(value: float, default: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else float(default)


def _clip(value: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, value))


def ease(t: float) -> float:
    """Smooth start and stop (cubic ease-in-out)."""
    t = min(max(t, 0.0), 1.0)
    return 4 * t ** 3 if t < 0.5 else 1 - (-2 * t + 2) ** 3 / 2


def lerp(a: Camera, b: Camera, t: float) -> Camera:
    t = ease(t)
    da = (b.azimuth - a.azimuth + 180.0) % 360.0 - 180.0  # shortest way round
    return Camera(
        center=tuple(np.array(a.center) + (np.array(b.center) - np.array(a.center)) * t),
        distance=a.distance * (b.distance / a.distance) ** t,  # zoom geometrically: feels even
        azimuth=a.azimuth + da * t, elevation=a.elevation + (b.elevation - a.elevation) * t,
        fov=a.fov + (b.fov - a.fov) * t)


def fit_distance(lo: np.ndarray, hi: np.ndarray, fov: float, aspect: float, margin: float = 1.08) -> float:
    """Distance at which a box's bounding sphere fits the view (fov horizontal, aspect = w/h)."""
    r = float(np.linalg.norm(np.asarray(hi) - np.asarray(lo))) / 2
    half_h = math.atan(math.tan(math.radians(fov) / 2) / max(aspect, 1e-3))
    half = min(math.radians(fov) / 2, half_h)
    return r / math.sin(half) * margin


def box_corners(lo, hi) -> np.ndarray:
    """[8, 3] corners of an axis-aligned box."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])


def fit_box(cam: Camera, lo, hi, aspect: float, fill: float = 0.9, fill_y: float | None = None,
            centre_y: float = 0.52) -> Camera:
    """The camera moved along its view direction (angles kept, centred on the box) so that the box's 8
    corners fill `fill` of the view in the tighter direction (projected extent, not a bounding sphere)."""
    return fit_points(cam, box_corners(lo, hi), aspect, fill, fill_y, centre_y)


def fit_points(cam: Camera, corners, aspect: float, fill: float = 0.9, fill_y: float | None = None,
               centre_y: float = 0.52) -> Camera:
    """fit_box for any set of points (e.g. the corners of several boxes): angles kept, the points' projected
    extent fills `fill` x `fill_y` of the view, centred at `centre_y` of its height."""
    corners = np.asarray(corners, float).reshape(-1, 3)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    w, h = 1000.0 * aspect, 1000.0
    c = Camera(center=tuple((lo + hi) / 2), distance=cam.distance, azimuth=cam.azimuth,
               elevation=cam.elevation, fov=cam.fov)
    c.distance = _fit_distance(corners, c, w, h, fill, fill if fill_y is None else fill_y)
    # re-centre on the projected box (perspective shifts it)
    px, _ = project(corners, c, w, h)
    mid = (px.min(axis=0) + px.max(axis=0)) / 2
    v = view_matrix(c)
    per_px = 2 * c.distance * math.tan(math.radians(c.fov) / 2) / w
    target = np.array([w / 2, h * centre_y])  # a little below the middle: the title block sits at the top
    shift = -v[0, :3] * (target[0] - mid[0]) * per_px + v[1, :3] * (target[1] - mid[1]) * per_px
    c.center = tuple(np.array(c.center) + shift)
    return c


def _fit_distance(corners: np.ndarray, cam: Camera, w: float, h: float, fill: float, fill_y: float) -> float:
    """The smallest distance (bisection between 1 and 2000, 40 halvings) at which the points all lie in front
    of the camera and their projected extent fits fill x fill_y of a w x h view. The camera's angles and centre
    stay, so the points' eye coordinates at distance 0 are computed once and each step only divides by the
    depth (a layer change runs this twice: 80 full projections cost ~17 ms of the UI thread)."""
    eye = (view_matrix(Camera(center=cam.center, distance=0.0, azimuth=cam.azimuth, elevation=cam.elevation,
                              fov=cam.fov)) @ np.c_[corners, np.ones(len(corners))].T)[:3]
    ex, ey, ez = eye
    scale = 0.5 * w / math.tan(0.5 * math.radians(cam.fov))  # eye x/depth or y/depth -> pixels (projection_matrix)
    lim_x, lim_y = w * fill, h * fill_y
    a, b = 1.0, 2000.0  # distance search: too close <-> fits
    for _ in range(40):
        d = math.sqrt(a * b)
        depth = d - ez  # clip w of each point: > 0 in front of the camera
        if depth.min() > 1e-9:
            xs, ys = ex / depth, ey / depth
            if (xs.max() - xs.min()) * scale <= lim_x and (ys.max() - ys.min()) * scale <= lim_y:
                b = d
                continue
        a = d
    return b


# the band of the view's height a framing fills when the header's and legend's real sizes are not known:
# between the title block (top ~11 %) and the legend strip (bottom ~9 %)
BAND_FILL_Y, BAND_CENTRE_Y = 0.78, 0.505


def band_fill(band: tuple[float, float] | None) -> tuple[float, float]:
    """(fill_y, centre_y) of a framing in the band (top, bottom) of the view's height (fractions) that the
    header and the legend leave free (scene/view.py free_band); None: the fixed band."""
    if band is None:
        return BAND_FILL_Y, BAND_CENTRE_Y
    top, bottom = band
    return max(bottom - top, 0.05) * 0.97, (top + bottom) / 2


def preset(name: str, bounds, aspect: float, stack_bounds=None, panel_bounds=None,
           band: tuple[float, float] | None = None) -> Camera:
    lo, hi = (np.asarray(v, float) for v in bounds)
    if name not in PRESETS:
        raise ValueError(f"unknown camera preset {name!r}; expected one of {PRESETS}")
    fov = 38.0
    if name == "stack" and stack_bounds is not None:
        lo, hi = (np.asarray(v, float) for v in stack_bounds)
    center = tuple((lo + hi) / 2)
    azim, elev = {"front": (-90.0, 4.0), "side": (-35.0, 12.0), "top": (-90.0, 78.0),
                  "stack": (-62.0, 14.0), "reset": (-100.0, 14.0)}[name]
    lo = lo - np.array([3.0, 0.0, 0.0])  # room for the AttnRes bracket labels left of the stack
    cam = Camera(center=center, distance=50.0, azimuth=azim, elevation=elev, fov=fov)
    # the band between the title block and the legend strip (their real sizes when band is given)
    fill_y, centre_y = band_fill(band)
    return fit_box(cam, lo, hi, aspect, fill=0.92, fill_y=fill_y, centre_y=centre_y)


def focus_on(lo: np.ndarray, hi: np.ndarray, current: Camera, aspect: float, min_dist: float = 6.0) -> Camera:
    """Keep the current angles, centre on a box and frame it."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    d = max(fit_distance(lo, hi, current.fov, aspect, margin=1.25), min_dist)
    return Camera(center=tuple((lo + hi) / 2), distance=d, azimuth=current.azimuth,
                  elevation=current.elevation, fov=current.fov)


def focus_in_band(lo, hi, current: Camera, aspect: float, band: tuple[float, float] | None = None,
                  min_dist: float = 6.0) -> Camera:
    """focus_on, then moved back if the box does not fit the band's height and re-centred on the band (a
    step's focus near the top of the stack, e.g. Sampling, was half under the header when centred in the
    whole view)."""
    c = focus_on(lo, hi, current, aspect, min_dist)
    corners = box_corners(lo, hi)
    fill_y, centre_y = band_fill(band)
    w, h = 1000.0 * aspect, 1000.0
    c.distance = max(c.distance, _fit_distance(corners, c, w, h, 0.95, fill_y))
    return recentre(c, corners, aspect, centre_y)


def recentre(cam: Camera, corners, aspect: float, centre_y: float = 0.5) -> Camera:
    """The camera moved sideways (angles and distance kept) so that the points' projected box is centred
    horizontally and at `centre_y` of the view's height."""
    corners = np.asarray(corners, float).reshape(-1, 3)
    w, h = 1000.0 * aspect, 1000.0
    c = Camera(center=tuple(cam.center), distance=cam.distance, azimuth=cam.azimuth, elevation=cam.elevation,
               fov=cam.fov)
    px, _ = project(corners, c, w, h)
    mid = (px.min(axis=0) + px.max(axis=0)) / 2
    v = view_matrix(c)
    per_px = 2 * c.distance * math.tan(math.radians(c.fov) / 2) / w
    shift = -v[0, :3] * (w / 2 - mid[0]) * per_px + v[1, :3] * (h * centre_y - mid[1]) * per_px
    c.center = tuple(np.array(c.center) + shift)
    return c


# ---- matrices (same as pyqtgraph's GLViewWidget) -------------------------------------------------------
def view_matrix(cam: Camera) -> np.ndarray:
    """4x4 world -> eye, column-vector convention."""
    def rot(angle, axis):
        a = math.radians(angle)
        x, y, z = np.asarray(axis, float) / np.linalg.norm(axis)
        c, s = math.cos(a), math.sin(a)
        m = np.eye(4)
        m[:3, :3] = [[c + x * x * (1 - c), x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                     [y * x * (1 - c) + z * s, c + y * y * (1 - c), y * z * (1 - c) - x * s],
                     [z * x * (1 - c) - y * s, z * y * (1 - c) + x * s, c + z * z * (1 - c)]]
        return m
    t1 = np.eye(4)
    t1[2, 3] = -cam.distance
    t2 = np.eye(4)
    t2[:3, 3] = -np.asarray(cam.center, float)
    return t1 @ rot(cam.elevation - 90, (1, 0, 0)) @ rot(cam.azimuth + 90, (0, 0, -1)) @ t2


def projection_matrix(cam: Camera, width: float, height: float) -> np.ndarray:
    near = cam.distance * 0.001
    far = cam.distance * 1000.0
    r = near * math.tan(0.5 * math.radians(cam.fov))
    t = r * height / width
    m = np.zeros((4, 4))
    m[0, 0] = near / r
    m[1, 1] = near / t
    m[2, 2] = -(far + near) / (far - near)
    m[2, 3] = -2 * far * near / (far - near)
    m[3, 2] = -1
    return m


def project(points: np.ndarray, cam: Camera, width: float, height: float) -> tuple[np.ndarray, np.ndarray]:
    """World points [N,3] -> pixel coords [N,2] (origin top-left, logical pixels) and visibility mask."""
    p = np.c_[np.asarray(points, float).reshape(-1, 3), np.ones(len(np.asarray(points).reshape(-1, 3)))]
    clip = (projection_matrix(cam, width, height) @ view_matrix(cam) @ p.T).T
    w = clip[:, 3]
    ok = w > 1e-9
    ndc = clip[:, :2] / np.where(ok, w, 1.0)[:, None]
    px = np.c_[(ndc[:, 0] + 1) * 0.5 * width, (1 - ndc[:, 1]) * 0.5 * height]
    return px, ok


def ray(cam: Camera, x: float, y: float, width: float, height: float) -> tuple[np.ndarray, np.ndarray]:
    """World-space ray (origin, unit direction) through logical pixel (x, y)."""
    inv = np.linalg.inv(projection_matrix(cam, width, height) @ view_matrix(cam))
    ndc_x, ndc_y = 2 * x / width - 1, 1 - 2 * y / height
    a = inv @ np.array([ndc_x, ndc_y, -1, 1.0])
    b = inv @ np.array([ndc_x, ndc_y, 1, 1.0])
    a, b = a[:3] / a[3], b[:3] / b[3]
    d = b - a
    return a, d / np.linalg.norm(d)
