"""`k3-explorer --config <bundled model> FILE.k3view` — the view's knobs, layer and selection are
checked against the --config model (not the default K3 the window starts with, nor the model the view names):
a value out of range for it is one clear message (box + status line, naming the field) and the window keeps
running that model; a view that fits is shown on it. Through app.__main__.main itself, with the event loop
(QApplication.exec) replaced by a function that checks the running window and closes it."""
import json
import sys
import threading

import pytest
from PySide6.QtWidgets import QApplication

from app.files.viewfile import View

K3_ONLY = [  # values K3 (93 layers, 896 experts) has and DeepSeek-V3 (61 layers, 256 experts) lacks
    ("knobs.expert_bias", {"knobs": {"expert_bias": {"500": 0.5}}}, ("500", "256 routed experts")),
    ("layer", {"layer": 80}, ("80", "61 layers")),
    ("selection.block", {"selection": {"block": "L75/mla.q"}}, ("75",)),
]


def _view(tmp_path, changes) -> str:
    doc = View(prompt="The robot", tokens=2).to_dict()
    for key, value in changes.items():
        doc[key] = dict(doc.get(key) or {}, **value) if isinstance(value, dict) else value
    path = tmp_path / "v.k3view"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def _run_main(qtbot, monkeypatch, tmp_path, view_path, check):
    """app.__main__.main(--config deepseek-v3 view) with `check(window)` as its event loop."""
    from app import __main__ as entry
    from app.window.main_window import MainWindow

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main installs the app's hooks: put them back after
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    seen = {}

    def event_loop(_app=None):
        win = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
        qtbot.addWidget(win)
        try:
            check(win)
            seen["ok"] = True
        finally:
            win.close()
        return 0

    monkeypatch.setattr(QApplication, "exec", event_loop)
    code = entry.main(["--config", "deepseek-v3", "--lang", "en", "--settings", str(tmp_path / "s.ini"), view_path])
    assert code == 0 and seen.get("ok")


def _on_deepseek(qtbot, win):
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.config_name == "deepseek-v3"
                    and win.config.name == "deepseek-v3" and not win.engine.busy, timeout=180000)


@pytest.mark.parametrize("field, changes, words", K3_ONLY, ids=[f for f, _c, _w in K3_ONLY])
def test_a_view_out_of_range_for_the_config_model_is_one_message(qtbot, monkeypatch, tmp_path, field, changes, words):
    path = _view(tmp_path, changes)

    def check(win):
        box = win.views.message_box
        assert box is not None and box.isVisible()
        text = box.text()
        assert f"'{field}'" in text and "deepseek-v3" in text and "v.k3view" in text, text
        assert all(w in text for w in words), text
        assert "\n" not in win.statusBar().currentMessage() and field in win.statusBar().currentMessage()
        assert win.views.pending is None and win.views.recent == []  # not applied, not remembered
        box.close()
        _on_deepseek(qtbot, win)  # the window runs the --config model, with its own knobs
        assert win.state.trace.knobs.expert_bias == {} and win.state.layer < 61
        win.state.request_knobs(temperature=0.5)  # and goes on working
        qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 0.5, timeout=120000)

    _run_main(qtbot, monkeypatch, tmp_path, path, check)


def test_a_view_that_fits_the_config_model_is_shown_on_it(qtbot, monkeypatch, tmp_path):
    path = _view(tmp_path, {"knobs": {"expert_bias": {"200": 0.5}}, "layer": 50})  # the view names kimi-k3

    def check(win):
        assert win.views.message_box is None or not win.views.message_box.isVisible()
        qtbot.waitUntil(lambda: win.views.pending is None and win.state.trace is not None
                        and win.state.trace.config_name == "deepseek-v3"
                        and win.state.trace.knobs.expert_bias == {200: 0.5}, timeout=180000)
        assert win.config.name == "deepseek-v3" and win.state.layer == 49
        assert win.views.recent and win.views.recent[0].endswith("v.k3view")

    _run_main(qtbot, monkeypatch, tmp_path, path, check)
