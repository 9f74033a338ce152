"""File -> Export animation… reports through its signals (app/window/animate_dialog.signals_of(window):
started, progress, finished / failed / cancelled). Real clicks in the window's own dialog: a GIF export into
tmp_path ends with `finished` and a real GIF; a folder that cannot be written is one line (a box in the dialog
and `failed`), no traceback, and the same dialog then exports after the name is changed."""
import os

import pytest
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QMessageBox

from app.window import animate_dialog
from app import player

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


@pytest.fixture
def small_sizes(monkeypatch):
    # the dialog offers 1280x720 and up; a 160x90 entry keeps the export a few seconds on a shared machine
    monkeypatch.setattr(animate_dialog, "SIZES", ((160, 90),) + animate_dialog.SIZES)


def _open_dialog(qtbot, win):
    win.registry.actions["export_animation"].trigger()  # File -> Export animation… (Ctrl+Shift+E)
    dialog = next(d for d in win.findChildren(animate_dialog.AnimationDialog) if d.isVisible())
    qtbot.waitExposed(dialog)
    return dialog


def _set_path(qtbot, dialog, path: str) -> None:
    field = dialog.path
    qtbot.mouseClick(field, Qt.LeftButton)
    field.selectAll()
    qtbot.keyClick(field, Qt.Key_Delete)
    qtbot.keyClicks(field, path)
    assert field.text() == path


def _choose_small(qtbot, dialog) -> None:
    dialog.size.setFocus()
    qtbot.keyClick(dialog.size, Qt.Key_Home)  # the first entry: 160 × 90
    assert dialog.size.currentData() == (160, 90)
    dialog.fps.setFocus()
    dialog.fps.selectAll()
    qtbot.keyClicks(dialog.fps, "1")
    assert dialog.fps.value() == 1


def _ok(qtbot, dialog) -> None:
    qtbot.mouseClick(dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok), Qt.LeftButton)


def _record(win):
    sig = animate_dialog.signals_of(win)
    seen = {"started": [], "progress": [], "finished": [], "failed": [], "cancelled": []}
    sig.started.connect(lambda p: seen["started"].append(p))
    sig.progress.connect(lambda d, t: seen["progress"].append((d, t)))
    sig.finished.connect(lambda p, n: seen["finished"].append((p, n)))
    sig.failed.connect(lambda m: seen["failed"].append(m))
    sig.cancelled.connect(lambda: seen["cancelled"].append(True))
    return sig, seen


def _is_gif(path: str, steps: int) -> None:
    with open(path, "rb") as fh:
        assert fh.read(6) in (b"GIF87a", b"GIF89a")
    with Image.open(path) as im:
        assert im.format == "GIF" and im.size == (160, 90) and getattr(im, "n_frames", 1) >= steps


def test_an_animated_gif_from_the_dialog_finishes_through_its_signal(main_window, qtbot, tmp_path, small_sizes):
    win = main_window
    sig, seen = _record(win)
    dialog = _open_dialog(qtbot, win)
    out = str(tmp_path / "steps.gif")
    _set_path(qtbot, dialog, out)
    _choose_small(qtbot, dialog)
    with qtbot.waitSignal(sig.finished, timeout=300000):
        _ok(qtbot, dialog)
    assert seen["started"] == [out] and not seen["failed"] and not seen["cancelled"]
    (written, frames), = seen["finished"]
    assert written == os.path.realpath(out) and os.path.isfile(out)
    steps = len(player.build_steps(win.state.trace))
    _is_gif(out, steps)
    total = seen["progress"][-1][1]
    assert seen["progress"][0] == (0, total) and seen["progress"][-1] == (total, total) and frames == total
    assert [d for d, _t in seen["progress"]] == sorted(d for d, _t in seen["progress"])
    assert "steps.gif" in win.statusBar().currentMessage()
    assert not dialog.isVisible()


@pytest.mark.parametrize("where", ["missing_folder", "read_only_folder"])
def test_an_unwritable_folder_is_one_line_and_the_dialog_stays_usable(main_window, qtbot, tmp_path, small_sizes,
                                                                     caplog, where):
    if where == "read_only_folder":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder")
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        bad = str(folder / "x.gif")
    else:
        bad = str(tmp_path / "no" / "such" / "x.gif")
    win = main_window
    sig, seen = _record(win)
    dialog = _open_dialog(qtbot, win)
    _set_path(qtbot, dialog, bad)
    _choose_small(qtbot, dialog)
    _ok(qtbot, dialog)
    box = dialog.confirm
    assert box is not None and box.objectName() == "anim_refused" and box.isVisible()
    text = box.text()
    assert "\n" not in text and "Traceback" not in text and os.path.dirname(bad) in text
    assert seen["failed"] == [text] and not seen["started"] and not seen["finished"]
    assert "Traceback" not in caplog.text
    qtbot.mouseClick(box.button(QMessageBox.Ok), Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.confirm is None)
    assert dialog.isVisible() and not os.path.exists(bad)
    good = str(tmp_path / "after.gif")  # the same dialog, another name: it exports
    _set_path(qtbot, dialog, good)
    with qtbot.waitSignal(sig.finished, timeout=300000):
        _ok(qtbot, dialog)
    assert seen["finished"][0][0] == os.path.realpath(good)
    _is_gif(good, len(player.build_steps(win.state.trace)))
    if where == "read_only_folder":
        (tmp_path / "ro").chmod(0o755)
