"""Issue 41.3: File -> Export comparison… and `k3-explorer export --compare MODEL` write the Compare dock's two
models on one prompt as ONE PNG. In a real window: the user picks two models, types a prompt on the Same-prompt
page, presses the action's shortcut and names a file; the page runs both models, then the image is written —
checked by opening the PNG: its size, both lens-curve colours, and a patching map (viridis cells) in each half.
A path in a missing folder is one message and nothing runs. The command line writes the same kind of image
headless (Xvfb), exit 0; a model that is not one is exit 2 with one line; --animate with --compare is refused."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QImage, QKeyEvent
from PySide6.QtWidgets import QApplication

from gui_helpers import image_array

ROOT = Path(__file__).resolve().parents[2]
SHOTS = os.path.join(tempfile.gettempdir(), "k3_compare_export")  # the images, for a person to look at
PROMPT = "아이가 상자를 집었다. 그리고"
PAIR = ("kimi-linear-48b", "deepseek-v3")  # the two small models: quick runs
PHASE_A, PHASE_B = (47, 127, 216), (217, 130, 43)  # the two models' colours (app/widgets/paint.py)
VIRIDIS_DARK, VIRIDIS_YELLOW = (68, 1, 84), (253, 231, 37)  # the patching map's 0 and 1 ends


def count_near(arr: np.ndarray, rgb, tol: int = 30) -> int:
    return int((np.abs(arr[..., :3].astype(int) - np.array(rgb)).max(axis=-1) <= tol).sum())


def check_image(path: str, w: int, h: int) -> None:
    img = QImage(path)
    assert not img.isNull() and (img.width(), img.height()) == (w, h)
    arr = image_array(img)
    assert count_near(arr, PHASE_A) > 200 and count_near(arr, PHASE_B) > 200  # both lens curves (and headers)
    left, right = arr[:, : w // 2], arr[:, w // 2:]
    for half in (left, right):  # a patching map in each model's column: its dark cells and its bright ones
        assert count_near(half, VIRIDIS_DARK, 20) > 5000
        assert count_near(half, VIRIDIS_YELLOW, 20) > 100
    # the page is filled: no empty band of background rows at the bottom (the maps take the height left over),
    # and both maps end on the same row
    uniform = (arr[..., :3] == arr[:, :1, :3]).all(axis=(1, 2))
    blank_bottom = int(np.argmin(uniform[::-1])) if not uniform.all() else h
    assert blank_bottom <= 0.06 * h, f"{blank_bottom} empty rows at the bottom of {h}"
    dark_rows = [np.nonzero((np.abs(half[..., :3].astype(int) - VIRIDIS_DARK).max(-1) <= 20).any(1))[0].max()
                 for half in (left, right)]
    assert abs(dark_rows[0] - dark_rows[1]) <= 3


def type_into(edit, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    QApplication.sendEvent(edit, QKeyEvent(QEvent.KeyPress, Qt.Key_Delete, Qt.NoModifier))
    for ch in text:  # key events carrying each character (QTest's keyClicks takes ASCII only)
        for kind in (QEvent.KeyPress, QEvent.KeyRelease):
            QApplication.sendEvent(edit, QKeyEvent(kind, 0, Qt.NoModifier, ch))
    assert edit.text() == text


def press_export(qtbot, win) -> None:
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow)
    qtbot.keyClick(win, Qt.Key_E, Qt.ControlModifier | Qt.AltModifier)


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_menu_action_writes_both_models_as_one_png(qtbot, make_window, tmp_path, monkeypatch, size):
    import app.export.compare_export as ce

    win = make_window()
    win.resize(*size)
    dock = win.docks["CompareDock"]
    dock.pick_a.setCurrentIndex(dock.pick_a.findData(PAIR[0]))
    dock.pick_b.setCurrentIndex(dock.pick_b.findData(PAIR[1]))
    type_into(dock.runs.prompt_edit, PROMPT)
    out = tmp_path / "cmp"  # no suffix: .png is added
    asked = []
    monkeypatch.setattr(ce.QFileDialog, "getSaveFileName",
                        lambda *a, **k: (asked.append(a[2]) or str(out), "PNG images (*.png)"))
    from PySide6.QtGui import QAction, QKeySequence

    action = win.findChild(QAction, "action_export_comparison")  # in the File menu, with its key and tooltip
    assert action.text() == "Export comparison…" and "one PNG" in action.toolTip()
    assert action.shortcut() == QKeySequence("Ctrl+Alt+E")
    press_export(qtbot, win)
    assert asked and asked[0].endswith(f"k3-compare-{PAIR[0]}-{PAIR[1]}.png")
    png = str(out) + ".png"
    qtbot.waitUntil(lambda: os.path.exists(png), timeout=600_000)
    assert dock.isVisible() and dock.tabs.currentIndex() == 1  # the user sees the page the image shows
    assert dock.runs.results_for == (PAIR, PROMPT)
    check_image(png, *ce.SIZE)
    os.makedirs(SHOTS, exist_ok=True)
    shutil.copy(png, os.path.join(SHOTS, f"window_{size[0]}x{size[1]}.png"))
    assert "Saved" in win.statusBar().currentMessage()
    # the page already shows them: a second export writes at once, without running again
    results = dock.runs.results
    os.remove(png)
    press_export(qtbot, win)
    assert os.path.exists(png) and dock.runs.results is results and not dock.runs.busy()


def test_a_path_in_a_missing_folder_is_one_message_and_nothing_runs(qtbot, make_window, tmp_path, monkeypatch):
    import app.export.compare_export as ce

    win = make_window()
    dock = win.docks["CompareDock"]
    bad = tmp_path / "missing" / "cmp.png"
    monkeypatch.setattr(ce.QFileDialog, "getSaveFileName", lambda *a, **k: (str(bad), ""))
    seen = []

    def close_box():
        box = QApplication.activeModalWidget()
        if box is None:
            QTimer.singleShot(50, close_box)
            return
        seen.append(box.text())
        box.accept()

    QTimer.singleShot(50, close_box)
    press_export(qtbot, win)
    qtbot.waitUntil(lambda: bool(seen), timeout=10_000)
    assert len(seen) == 1 and "\n" not in seen[0].strip() and str(bad.parent) in seen[0]
    assert not dock.runs.busy() and dock.runs.results is None and not bad.parent.exists()


# --- the command line ---------------------------------------------------------------------------------------

def run_app(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "app", "export", *args], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, timeout=timeout)


def error_lines(r) -> list[str]:
    return [line for line in r.stderr.decode("utf-8", "replace").splitlines() if line.strip() and " INFO " not in line]


def test_cli_compare_writes_one_png(tmp_path):
    out = tmp_path / "cmp.png"
    r = run_app("--config", PAIR[0], "--compare", PAIR[1], "--prompt", PROMPT, "--size", "1280x720",
                "--out", str(out))
    assert r.returncode == 0, r.stderr.decode()
    assert "Kimi Linear 48B and DeepSeek-V3" in r.stdout.decode()
    check_image(str(out), 1280, 720)
    os.makedirs(SHOTS, exist_ok=True)
    shutil.copy(out, os.path.join(SHOTS, "cli_1280x720.png"))


@pytest.mark.parametrize("args, words", [
    (["--compare", "no-such-model"], ["--compare no-such-model", "cannot read"]),
    (["--compare", ""], ["--compare", "needs a model"]),
])
def test_cli_compare_bad_model_is_exit_2_one_line(tmp_path, args, words):
    out = tmp_path / "cmp.png"
    r = run_app(*args, "--out", str(out), timeout=120)
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1, r.stderr.decode()
    assert all(w in lines[0] for w in words) and "Traceback" not in r.stderr.decode()
    assert not out.exists()


def test_cli_compare_refuses_animate(tmp_path):
    r = run_app("--compare", "deepseek-v3", "--animate", "--out", str(tmp_path / "a.gif"), timeout=120)
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1 and "--animate" in lines[0], r.stderr.decode()
