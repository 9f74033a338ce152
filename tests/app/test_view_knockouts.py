"""Knock-outs travel in view files: File -> Open view of a file with a `knockouts` set applies it
to the Explain dock (re-run off the UI thread), and File -> Save view writes the dock's set back."""
import json
import time

from gui_helpers import pump


def _wait(cond, timeout_s=120.0):
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, "timed out"
        pump(30)


def test_a_view_with_knockouts_opens_them_and_saves_them_back(main_window, tmp_path):
    from app.files import viewfile

    win = main_window
    assert win.views.save_to(str(tmp_path / "plain.k3view"))
    raw = json.loads((tmp_path / "plain.k3view").read_text(encoding="utf-8"))
    assert "knockouts" not in raw  # written only when set
    moe = [i + 1 for i, f in enumerate(win.config.ffn_types) if f == "moe"]
    raw["knockouts"] = {"mode": "zero", "tokens": [0], "blocks": [[moe[0], "ffn"]], "experts": []}
    (tmp_path / "ko.k3view").write_text(json.dumps(raw), encoding="utf-8")
    dock = win.docks["ExplainDock"]
    try:
        assert win.views.open_path(str(tmp_path / "ko.k3view"))
        _wait(lambda: dock.knockouts() is not None)
        assert dock.knockouts() == {"mode": "zero", "tokens": [0], "blocks": [[moe[0], "ffn"]], "experts": []}
        dock.show(); dock.raise_()
        _wait(lambda: dock.result is not None and dock.result.knockout is not None and not dock.busy)
        assert set(dock.result.knockout["items"]) == {("token", 0), ("block", moe[0], "ffn")}
        assert win.views.save_to(str(tmp_path / "again.k3view"))
        again = viewfile.load(str(tmp_path / "again.k3view"))
        assert again.knockouts == {"mode": "zero", "tokens": [0], "blocks": [[moe[0], "ffn"]], "experts": []}
        # a view without knock-outs clears the dock's set
        assert win.views.open_path(str(tmp_path / "plain.k3view"))
        _wait(lambda: dock.knockouts() is None)
    finally:
        dock.set_knockouts(None)


def test_a_knockout_undoes_and_redoes_with_the_keys(main_window, qtbot):
    """Feature I4: a knock-out is one undo step; Ctrl+Z restores the set before it (and the dock's
    explanation without it), Ctrl+Shift+Z brings it back."""
    from PySide6.QtCore import Qt

    win = main_window
    dock = win.docks["ExplainDock"]
    dock.show(); dock.raise_()
    dock.set_knockouts(None)
    stack = win.history.stack
    n = stack.count()
    moe = [i + 1 for i, f in enumerate(win.config.ffn_types) if f == "moe"]
    try:
        dock.set_knockouts({"mode": "mean", "tokens": [1], "blocks": [[moe[0], "mixer"]], "experts": []})
        assert stack.count() == n + 1 and "2" in stack.text(stack.count() - 1)
        _wait(lambda: dock.result is not None and dock.result.knockout is not None and not dock.busy)
        win.activateWindow(); win.setFocus()
        qtbot.keyClick(win, Qt.Key_Z, Qt.ControlModifier)
        _wait(lambda: dock.knockouts() is None)
        _wait(lambda: dock.result is not None and dock.result.knockout is None and not dock.busy)
        qtbot.keyClick(win, Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)
        _wait(lambda: dock.knockouts() is not None)
        assert dock.knockouts() == {"mode": "mean", "tokens": [1], "blocks": [[moe[0], "mixer"]], "experts": []}
        assert stack.count() == n + 1  # stepping through the history adds nothing to it
    finally:
        dock.set_knockouts(None)
