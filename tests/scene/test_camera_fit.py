"""camera.fit_points: the framing of a layer change (run twice per change on the UI thread) searches the distance
on precomputed eye coordinates, with the same result as projecting the points at every step of the search."""
import math

import numpy as np
import pytest

from scene import camera as C


def _reference_distance(cam, corners, aspect, fill, fill_y):
    """The search as first written: 40 halvings, each projecting the points through the full matrices."""
    corners = np.asarray(corners, float).reshape(-1, 3)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    w, h = 1000.0 * aspect, 1000.0
    c = C.Camera(center=tuple((lo + hi) / 2), distance=cam.distance, azimuth=cam.azimuth,
                 elevation=cam.elevation, fov=cam.fov)
    a, b = 1.0, 2000.0
    for _ in range(40):
        c.distance = math.sqrt(a * b)
        px, ok = C.project(corners, c, w, h)
        if ok.all() and np.max((px.max(axis=0) - px.min(axis=0)) / [w * fill, h * fill_y]) <= 1.0:
            b = c.distance
        else:
            a = c.distance
    return b


def test_fit_box_matches_the_projecting_search():
    rng = np.random.default_rng(7)
    for _ in range(200):
        cam = C.Camera(azimuth=float(rng.uniform(-180, 180)), elevation=float(rng.uniform(-80, 80)),
                       fov=float(rng.uniform(20, 70)))
        lo = rng.uniform(-50, 50, 3)
        hi = lo + rng.uniform(0.1, 80, 3)
        aspect, fill_y = float(rng.uniform(0.5, 3.0)), float(rng.uniform(0.5, 1.0))
        want = _reference_distance(cam, C.box_corners(lo, hi), aspect, 0.92, fill_y)
        got = C.fit_box(cam, lo, hi, aspect, fill=0.92, fill_y=fill_y).distance
        assert got == pytest.approx(want, rel=1e-9)


def test_fit_points_projects_the_points_once_not_per_search_step(monkeypatch):
    calls = []
    real = C.project
    monkeypatch.setattr(C, "project", lambda *a, **k: calls.append(1) or real(*a, **k))
    C.fit_box(C.Camera(azimuth=-100.0, elevation=14.0), (-10, -5, -3), (30, 8, 4), 1.6, fill=0.92, fill_y=0.78)
    assert len(calls) <= 2, f"fit_box projected the points {len(calls)} times (one per search step is ~8 ms)"
