"""Frame pacing of the render thread (scene/frames.py): back-to-back frames (a camera animation, a
drag) rest a fraction of the last frame's time before the next one starts, so on software GL the UI thread and
the X server get the cores between frames; a frame asked for after a pause starts at once."""
import time

import pytest

from scene import frames

W, H = 700, 500


def _record_draws(renderer) -> list[tuple[float, float]]:
    """(start, end) perf_counter times of every frame the renderer draws from now on."""
    draws = []
    draw = renderer._draw

    def timed():
        t0 = time.perf_counter()
        draw()
        draws.append((t0, time.perf_counter()))
    renderer._draw = timed  # the render thread looks the method up on each frame
    return draws


@pytest.mark.alone  # times the render thread's frames against the clock
def test_back_to_back_frames_rest_between_and_a_late_request_starts_at_once(qtbot, k3_config):
    from scene.view import SceneView

    view = SceneView(None, k3_config)
    qtbot.addWidget(view)
    view.resize(W, H)
    view.show()
    qtbot.waitUntil(lambda: view.gl.paint_count > 0, timeout=10000)
    renderer = view.gl.renderer
    assert renderer.threaded, "frames are drawn in the render thread here (Xvfb + Mesa)"
    draws = _record_draws(renderer)

    for _ in range(40):  # a camera animation: a new frame asked for every few milliseconds for ~0.4 s
        view.cam.azimuth += 2.0
        view.gl.update()
        qtbot.wait(10)
    # the last state asked for is on screen: its frame was drawn (and recorded) and no other is to come
    qtbot.waitUntil(lambda: not renderer._scheduled and view.gl.shown_version >= view.gl.version, timeout=5000)
    assert len(draws) >= 4, draws
    for (s0, e0), (s1, _e1) in zip(draws, draws[1:]):
        rest = min(0.02, 0.4 * (e0 - s0))  # at least 40 % of a frame's time, or 20 ms after a long one
        assert s1 - e0 >= rest, f"a frame of {1e3 * (e0 - s0):.1f} ms was followed after " \
                                      f"{1e3 * (s1 - e0):.1f} ms (its rest: {1e3 * rest:.1f} ms)"

    qtbot.wait(int(2000 * frames.REST_MAX_S) + 50)  # a pause longer than any rest
    n = len(draws)
    asked = time.perf_counter()
    view.cam.azimuth += 2.0
    view.gl.update()
    qtbot.waitUntil(lambda: len(draws) > n, timeout=5000)
    assert draws[n][0] - asked < frames.REST_MAX_S, "a frame asked for after a pause waited for a rest"
