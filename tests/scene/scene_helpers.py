"""Helpers of the scene tests (a module with its own name: tests/ has several conftest.py)."""


def shown_view(qtbot, config, width: int, height: int):
    """A SceneView on screen at width x height with config laid out, once its first frame is painted."""
    from scene.view import SceneView

    v = SceneView()
    qtbot.addWidget(v)
    v.resize(width, height)
    v.show()
    qtbot.waitExposed(v)
    v.set_config(config)
    qtbot.waitUntil(lambda: v.gl.paint_count > 0, timeout=10000)
    return v
