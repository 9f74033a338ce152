"""The notebook API (app/api.py): render(...) -> numpy image without showing a window; the same picture as
`k3-explorer export`; a clear error without a display."""
import os
import subprocess
import sys

import numpy as np
import pytest

from app import api
from app.files import viewfile
from app.files.viewfile import View


class _ShownWindows:
    """Records every top-level window that Qt maps on screen while it is installed."""

    def __init__(self, app):
        from PySide6.QtCore import QEvent, QObject

        outer = self

        class Filter(QObject):
            def eventFilter(self, obj, event):
                from PySide6.QtGui import QWindow

                if event.type() == QEvent.Expose and isinstance(obj, QWindow) and obj.isExposed():
                    outer.shown.append(obj.objectName() or type(obj).__name__)
                return False

        self.shown: list[str] = []
        self.filter = Filter()
        self.app = app
        app.installEventFilter(self.filter)

    def remove(self):
        self.app.removeEventFilter(self.filter)


def test_render_returns_an_rgba_array_and_shows_no_window(qapp, tmp_path):
    from PySide6.QtGui import QGuiApplication

    watch = _ShownWindows(qapp)
    try:
        image = api.render(prompt="The robot picked up the cup", layer=37, step=6, size=(480, 270), camera="front")
    finally:
        watch.remove()
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.shape == (270, 480, 4)
    assert image[..., :3].std() > 5 and (image[..., 3] == 255).all()
    assert watch.shown == []
    assert not [w for w in QGuiApplication.topLevelWindows() if w.isExposed()]


def test_the_window_watch_sees_a_window_that_is_shown(qapp, qtbot):
    """The check above would see a window: a plain shown widget is recorded."""
    from PySide6.QtWidgets import QLabel

    watch = _ShownWindows(qapp)
    try:
        label = QLabel("shown")
        qtbot.addWidget(label)
        label.show()
        qtbot.waitExposed(label)
        qtbot.waitUntil(lambda: bool(watch.shown), timeout=5000)
    finally:
        watch.remove()
    assert watch.shown


def test_render_of_a_view_file_matches_the_cli(qapp, tmp_path):
    from PySide6.QtGui import QImage

    from app import cli
    from tests.app.gui_helpers import changed_fraction, image_array

    path = tmp_path / "v.k3view"
    viewfile.save(View(prompt="로봇이 컵을 집었다", layer=12, step=8, size=(400, 300), block="L12/mla.c_kv",
                       language="ko", camera={"distance": 90.0, "azimuth": -40.0, "elevation": 18.0, "fov": 38.0,
                                              "center": [10.0, 0.0, 20.0]}), path)
    from_api = api.render(view=str(path))
    out = tmp_path / "cli.png"
    from app import i18n

    try:
        assert cli.main(["--view", str(path), "--out", str(out)]) == 0
    finally:
        i18n.set_language("en")  # the CLI takes the view's language (ko) for the whole process
    from_cli = image_array(QImage(str(out)))
    assert from_api.shape == from_cli.shape == (300, 400, 4)
    assert changed_fraction(from_api, from_cli) < 0.005
    smaller = api.render(view=path, size="200x150")  # an explicit argument overrides the view
    assert smaller.shape == (150, 200, 4)


@pytest.mark.parametrize("kwargs, words", [
    ({"layer": 500}, "layer"), ({"step": 0}, "step"), ({"size": (0, 10)}, "size"), ({"camera": "inside"}, "camera"),
    ({"weights": "pickled"}, "weights"), ({"prompt": ""}, "prompt"), ({"size": "big"}, "big"),
])
def test_bad_arguments_are_one_line_value_errors(kwargs, words):
    with pytest.raises(ValueError) as err:
        api.render(**kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_without_a_display_render_says_so(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "xcb"
    code = ("from app.api import render, DisplayError\n"
            "try:\n    render(size=(64, 64))\nexcept DisplayError as e:\n    print('DISPLAY-ERROR', e)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert "DISPLAY-ERROR" in done.stdout, done.stdout + done.stderr
    line = done.stdout.strip().splitlines()[-1]
    assert "display" in line.lower() and "Traceback" not in done.stderr


def test_run_gives_a_trace_with_a_compact_summary():
    trace = api.run("The robot", tokens=2)
    assert trace.text == "The robot" and len(trace.tokens) - trace.prompt_len == 2
    assert len(trace.summary().splitlines()) < 40 and len(repr(trace)) < 300
