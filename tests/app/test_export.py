"""Screenshot export (X1): the dialog driven with real clicks/keys, sizes, labels, clipboard, overwrite,
and the headless command line in a subprocess."""
import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

from app import i18n
from app.export.image import ExportError, parse_size
from gui_helpers import image_array

ROOT = Path(__file__).resolve().parents[2]


def _open_dialog(win, qtbot):
    if not win.isActiveWindow():
        with qtbot.waitActive(win):
            win.activateWindow()
    QTest.keyClick(win.scene.gl, Qt.Key_S, Qt.ControlModifier)  # File -> Export image… (Ctrl+S)

    def shown():
        return [d for d in win.findChildren(QtDialog(), "export_dialog") if d.isVisible()]
    qtbot.waitUntil(lambda: len(shown()) == 1, timeout=5000)
    return shown()[0]


def QtDialog():
    from app.export.image import ExportDialog

    return ExportDialog


def _click_export(dialog, qtbot):
    qtbot.mouseClick(dialog.findChild(type(dialog.findChild(QtButton(), "export_ok")), "export_ok"), Qt.LeftButton)


def QtButton():
    from PySide6.QtWidgets import QPushButton

    return QPushButton


def _finish(dialog):
    dialog.close()
    dialog.deleteLater()


def test_parse_size():
    assert parse_size("3840x2160") == (3840, 2160)
    assert parse_size(" 800 × 600 ") == (800, 600)
    for bad in ("", "4k", "0x10", "9000x100", "10x", "-5x5"):
        with pytest.raises(ExportError):
            parse_size(bad)


def test_4k_export_writes_a_png_of_that_size_with_labels_and_leaves_the_view_alone(main_window, qtbot, tmp_path):
    win = main_window
    camera = win.scene.camera_state()
    size = win.scene.size()
    dialog = _open_dialog(win, qtbot)
    dialog.set_size_mode("4k")
    out = tmp_path / "k3-4k.png"
    dialog.path_edit.setText(str(out))
    _click_export(dialog, qtbot)
    qtbot.waitUntil(out.exists, timeout=30000)
    img = QImage(str(out))
    assert (img.width(), img.height()) == (3840, 2160)
    px = image_array(img)
    assert px[..., :3].std() > 10  # not blank
    assert len(np.unique(px[::7, ::7, :3].reshape(-1, 3), axis=0)) > 200
    # the user's view is unchanged by the export (checked before the language switch below, which re-fits the
    # camera to the Korean header's size on purpose)
    assert win.scene.camera_state() == camera and win.scene.size() == size
    # labels: the same view exported in Korean differs only where the text is drawn
    i18n.set_language("ko")
    try:
        ko = image_array(win.scene.render_image(3840, 2160))
    finally:
        i18n.set_language("en")
    diff = np.abs(px.astype(int) - ko.astype(int))[..., :3].max(axis=-1) > 40
    assert 0.001 < diff.mean() < 0.2
    # and without the labels (dialog option) those pixels go away
    from app.export.image import render_view

    bare = image_array(render_view(win.scene, 3840, 2160, labels=False))
    no_text = np.abs(px.astype(int) - bare.astype(int))[..., :3].max(axis=-1) > 40
    assert no_text.mean() > diff.mean() * 0.5 and no_text.mean() > 0.005
    assert win.scene.labels_enabled and win.scene.size() == size
    # the file is written in the render thread; the window says so once it hears back
    qtbot.waitUntil(lambda: "k3-4k.png" in win.statusBar().currentMessage(), timeout=10000)
    _finish(dialog)


def test_transparent_export_has_a_transparent_background(main_window, qtbot, tmp_path):
    win = main_window
    dialog = _open_dialog(win, qtbot)
    dialog.set_size_mode("custom")
    dialog.width_spin.setValue(640)
    dialog.height_spin.setValue(400)
    qtbot.mouseClick(dialog.transparent, Qt.LeftButton, pos=QPoint(8, dialog.transparent.height() // 2))
    assert dialog.transparent.isChecked()
    out = tmp_path / "clear.png"
    dialog.path_edit.setText(str(out))
    _click_export(dialog, qtbot)
    qtbot.waitUntil(out.exists, timeout=30000)
    px = image_array(QImage(str(out)))
    assert px.shape[:2] == (400, 640)
    alpha = px[..., 3]
    assert alpha[0, 0] == 0 and (alpha == 0).mean() > 0.2 and (alpha == 255).mean() > 0.02
    _finish(dialog)


def test_overwrite_needs_confirmation(main_window, qtbot, tmp_path):
    win = main_window
    out = tmp_path / "exists.png"
    out.write_bytes(b"not a png")
    answers = []

    def answer(button):
        def click():
            boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
            if boxes:
                answers.append(boxes[0].text())
                boxes[0].button(button).click()
            else:
                QTimer.singleShot(50, click)
        QTimer.singleShot(50, click)

    dialog = _open_dialog(win, qtbot)
    dialog.set_size_mode("custom")
    dialog.width_spin.setValue(320)
    dialog.height_spin.setValue(200)
    dialog.path_edit.setText(str(out))
    answer(QMessageBox.No)
    _click_export(dialog, qtbot)
    assert answers and str(out) in answers[0]
    assert out.read_bytes() == b"not a png" and dialog.isVisible()
    answer(QMessageBox.Yes)
    _click_export(dialog, qtbot)
    qtbot.waitUntil(lambda: out.read_bytes()[:4] == b"\x89PNG", timeout=30000)
    assert QImage(str(out)).size().toTuple() == (320, 200)
    _finish(dialog)


def test_bad_path_and_size_show_inline_messages(main_window, qtbot, tmp_path):
    win = main_window
    dialog = _open_dialog(win, qtbot)
    dialog.path_edit.setText(str(tmp_path / "missing-folder" / "x.png"))
    _click_export(dialog, qtbot)
    assert dialog.isVisible() and dialog.error.isVisible() and "does not exist" in dialog.error.text()
    dialog.path_edit.setText(str(tmp_path / "ok.png"))
    dialog.set_size_mode("scale")
    dialog.scale_spin.setValue(16.0)
    _click_export(dialog, qtbot)
    assert dialog.error.isVisible() and "8192" in dialog.error.text()
    assert not (tmp_path / "ok.png").exists()
    _finish(dialog)


def test_clipboard_and_whole_window(main_window, qtbot, tmp_path):
    win = main_window
    dialog = _open_dialog(win, qtbot)
    qtbot.mouseClick(dialog.clip_radio, Qt.LeftButton, pos=QPoint(8, dialog.clip_radio.height() // 2))
    assert dialog.clip_radio.isChecked()
    dialog.set_size_mode("1080p")
    _click_export(dialog, qtbot)
    qtbot.waitUntil(lambda: not QGuiApplication.clipboard().image().isNull(), timeout=30000)
    assert QGuiApplication.clipboard().image().size().toTuple() == (1920, 1080)
    _finish(dialog)

    dialog = _open_dialog(win, qtbot)
    qtbot.mouseClick(dialog.window_radio, Qt.LeftButton, pos=QPoint(8, dialog.window_radio.height() // 2))
    assert dialog.window_radio.isChecked()
    out = tmp_path / "window.png"
    dialog.path_edit.setText(str(out))
    _click_export(dialog, qtbot)
    qtbot.waitUntil(out.exists, timeout=30000)
    img = QImage(str(out))
    ratio = win.devicePixelRatioF()
    assert img.size().toTuple() == (int(win.width() * ratio), int(win.height() * ratio))
    # the 3D view's picture (current state, not a frame still in flight) must be in the file, where it sits
    from scene import palette
    top_left = win.scene.container.mapTo(win, QPoint(0, 0))
    x0, y0 = int(top_left.x() * ratio), int(top_left.y() * ratio)
    x1, y1 = x0 + int(win.scene.container.width() * ratio), y0 + int(win.scene.container.height() * ratio)
    area = image_array(img)[y0:y1, x0:x1, :3].astype(int)
    bg = np.array(palette.role("background")[:3]) * 255
    is_bg = np.abs(area - bg).max(axis=-1) <= 3
    assert is_bg.mean() > 0.2  # the GL clear colour fills the empty space of the view
    assert (~is_bg).mean() > 0.1  # and the scene (blocks, labels) is drawn over it
    _finish(dialog)


def _cli(*args, env_extra=None, timeout=240):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "app", "export", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_cli_export_in_a_subprocess(tmp_path):
    out = tmp_path / "layer37.png"
    r = _cli("--layer", "37", "--step", "6", "--size", "960x540", "--lang", "ko", "--camera", "front",
             "--prompt", "로봇이 컵을", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert str(out) in r.stdout
    img = QImage(str(out))
    assert img.size().toTuple() == (960, 540)
    assert image_array(img)[..., :3].std() > 10


@pytest.mark.parametrize("args, code, message", [
    (["--size", "10x99999"], 2, "8192"),
    (["--layer", "94"], 2, "1…93"),
    (["--lang", "fr"], 2, "invalid choice"),
    (["--out", "{tmp}/no-such-folder/x.png"], 1, "does not exist"),
    (["--out", "/proc/k3-explorer-test.png"], 1, "Could not write"),
])
def test_cli_fails_cleanly(tmp_path, args, code, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "x.png")]
    r = _cli(*args, "--size" if "--size" not in args else "--step", "320x200" if "--size" not in args else "6")
    assert r.returncode == code, (r.returncode, r.stderr)
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.png").exists()


def test_cli_without_a_display_says_so(tmp_path):
    """No display and no Xvfb to start one (an empty PATH): one line naming Xvfb, exit 3."""
    r = _cli("--out", str(tmp_path / "x.png"), env_extra={"DISPLAY": "", "WAYLAND_DISPLAY": "", "PATH": str(tmp_path)})
    assert r.returncode == 3 and "Xvfb" in r.stderr


def test_cli_without_a_display_draws_on_a_private_xvfb_that_ends_with_it(tmp_path):
    """`k3-explorer export` on a machine with no display (ssh, a server, a cron job): with Xvfb installed it
    starts its own and writes the picture; the Xvfb ends with the command."""
    import shutil

    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed")
    out = tmp_path / "headless.png"
    r = _cli("--layer", "4", "--size", "480x270", "--lang", "ko", "--out", str(out),
             env_extra={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert img.size().toTuple() == (480, 270) and image_array(img)[..., :3].std() > 10
    assert "X11 connection" not in r.stderr and "XIO" not in r.stderr
    import time

    def alive() -> list[str]:
        left = subprocess.run(["pgrep", "-f", "Xvfb -displayfd"], capture_output=True, text=True).stdout.split()
        out = []
        for pid in left:
            try:
                if "State:\tZ" not in Path(f"/proc/{pid}/status").read_text():
                    out.append(pid)
            except OSError:
                pass
        return out

    deadline = time.monotonic() + 10  # it gets SIGTERM as the command exits
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(), alive()


def _answer_boxes(buttons, texts):
    """Click `buttons` in the message boxes as they come up, one each, noting their texts."""
    pending = list(buttons)

    def click():
        boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
        if boxes and boxes[0].text() not in texts:
            texts.append(boxes[0].text())
            boxes[0].button(pending.pop(0)).click()
        if pending:
            QTimer.singleShot(50, click)
    QTimer.singleShot(50, click)


def test_a_failed_export_keeps_the_old_file_and_names_the_cause(main_window, qtbot, tmp_path, monkeypatch):
    from app.files import atomic_io

    win = main_window
    out = tmp_path / "slide.png"
    out.write_bytes(b"yesterday's picture")

    def disk_full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic_io.os, "write", disk_full)
    texts = []
    dialog = _open_dialog(win, qtbot)
    dialog.set_size_mode("custom")
    dialog.width_spin.setValue(320)
    dialog.height_spin.setValue(200)
    dialog.path_edit.setText(str(out))
    _answer_boxes([QMessageBox.Yes, QMessageBox.Ok], texts)  # replace it? yes; then the error box
    _click_export(dialog, qtbot)
    qtbot.waitUntil(lambda: len(texts) == 2, timeout=30000)
    assert "disk is full" in texts[1] and str(out) in texts[1] and "permission" not in texts[1]
    assert out.read_bytes() == b"yesterday's picture"
    assert sorted(os.listdir(tmp_path)) == ["slide.png"]  # no temporary file left behind
    _finish(dialog)


def test_export_onto_a_full_disk_keeps_the_old_file(qapp, tmp_path):
    """A real full file system (a 64 kB tmpfs; needs root to mount)."""
    from app.export.image import save_png

    disk = tmp_path / "small"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        out = disk / "slide.png"
        out.write_bytes(b"old" * 10000)
        noise = QImage(np.random.default_rng(1).integers(0, 255, (400, 400, 4), dtype=np.uint8).tobytes(),
                       400, 400, QImage.Format_RGBA8888).copy()  # ~600 kB as PNG: cannot fit
        with pytest.raises(ExportError, match="disk is full"):
            save_png(noise, str(out))
        assert out.read_bytes() == b"old" * 10000 and os.listdir(disk) == ["slide.png"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_threaded_png_encoder_round_trips_opaque_and_transparent_pixels(qapp):
    """png_bytes_threaded (Pillow, GIL released) decodes to the same pixels as Qt's own PNG encoder, also for
    half-transparent pixels (premultiplied in Qt, straight alpha in the file)."""
    from PySide6.QtGui import QColor

    from app.export.image import png_bytes, png_bytes_threaded

    for transparent in (False, True):
        img = QImage(37, 21, QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(QColor(0, 0, 0, 0) if transparent else QColor(12, 34, 56))
        for x in range(37):
            for y in range(21):
                if (x + y) % 3:
                    img.setPixelColor(x, y, QColor((7 * x) % 256, (11 * y) % 256, 200, 255 if not transparent else 60 + 5 * x))
        mine, qts = QImage(), QImage()
        assert mine.loadFromData(png_bytes_threaded(img)) and qts.loadFromData(png_bytes(img))
        assert mine.hasAlphaChannel() == transparent
        diff = max(abs(getattr(mine.pixelColor(x, y), c)() - getattr(qts.pixelColor(x, y), c)())
                   for x in range(37) for y in range(21) for c in ("red", "green", "blue", "alpha"))
        assert diff <= 1, diff  # premultiplied rounding at most one step


def test_the_dialog_refuses_a_link_to_a_fifo_in_its_error_line(main_window, qtbot, tmp_path):
    """A path that leads to a FIFO (or a device) is refused in the dialog's error line: no overwrite question,
    no export, the FIFO stays a FIFO (a write would have blocked on it or replaced it)."""
    import stat

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "x.png").symlink_to(fifo)
    dialog = _open_dialog(main_window, qtbot)
    dialog.set_size_mode("custom")
    dialog.width_spin.setValue(160)
    dialog.height_spin.setValue(90)
    dialog.path_edit.setText(str(tmp_path / "x.png"))
    _click_export(dialog, qtbot)
    assert dialog.isVisible() and dialog.error.isVisible()
    assert "named pipe (FIFO)" in dialog.error.text() and str(fifo) in dialog.error.text()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(os.listdir(tmp_path)) == ["pipe", "x.png"]
    _finish(dialog)
