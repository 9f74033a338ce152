"""Animated export: the file decodes with the expected frame count and size, captions are burnt in,
a cancel leaves no file, the CLI writes an animation with a progress line and keeps its exit codes."""
import os
import subprocess
import sys

import imageio.v2 as iio
import numpy as np
import pytest
from PySide6.QtCore import Qt

from app.export import animate
from app import player


def decoded(path, fps=None):
    """The frames a player shows; with fps, sampled at that rate by ffmpeg's fps filter (a held image spans
    its frame times)."""
    if fps:
        import imageio_ffmpeg

        gen = imageio_ffmpeg.read_frames(path, output_params=["-vf", f"fps={fps}"])
        meta = next(gen)
        w, h = meta["size"]
        return [np.frombuffer(f, np.uint8).reshape(h, w, 3) for f in gen]
    reader = iio.get_reader(path)
    frames = [f for f in reader]
    reader.close()
    return frames


def coded_pictures(path) -> int:
    """How many pictures the video stream codes (ffmpeg's count of decoded frames, no resampling)."""
    import imageio_ffmpeg

    r = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", path, "-fps_mode", "passthrough",
                        "-f", "null", "-"], capture_output=True, text=True, timeout=120)
    return int(r.stderr.rsplit("frame=", 1)[1].split()[0])


@pytest.fixture
def anim_view(main_window):
    win = main_window
    view = animate.offscreen_view(win.config, win.state.trace, win.state.layer, None, 320, 180)
    yield view
    from app.window.animate_dialog import _close_view

    _close_view(view)


def test_the_steps_animation_decodes_with_the_planned_frames_and_size(main_window, anim_view, tmp_path):
    steps = player.build_steps(main_window.state.trace)[:5]
    spec = animate.AnimationSpec(width=320, height=180, fps=8, hold_s=0.5, move_s=0.5, move_renders=2)
    out = str(tmp_path / "steps.mp4")
    calls = []  # progress comes once before the first image and once after each
    path, frames = animate.export(anim_view, steps, spec, out, main_window.state.layer,
                                  progress=lambda done, total: calls.append(done) is None)
    assert path == os.path.realpath(out)
    got = decoded(out, fps=spec.fps)
    assert len(got) == frames >= 5 * 4  # 4 held frames per step, plus the camera moves
    assert got[0].shape == (180, 320, 3)
    # a held image is encoded once and shown for its whole hold: the first step's 4 frames are one picture,
    # and the file holds far fewer coded pictures than frames
    assert all(np.array_equal(got[0], got[i]) for i in range(1, 4))
    images = len(calls) - 1
    assert coded_pictures(out) == images + 1 < frames  # each image once, the last once more at the end
    assert os.listdir(tmp_path) == ["steps.mp4"]  # no temporary file left


def test_captions_are_burnt_in(main_window, anim_view, tmp_path):
    steps = player.build_steps(main_window.state.trace)[:1]
    plain = animate.AnimationSpec(width=320, height=180, fps=2, hold_s=0.5, lang="ko", captions=False)
    captioned = animate.AnimationSpec(width=320, height=180, fps=2, hold_s=0.5, lang="ko")
    a = decoded(animate.export(anim_view, steps, plain, str(tmp_path / "a.webm"), 36)[0])[0]
    b = decoded(animate.export(anim_view, steps, captioned, str(tmp_path / "b.webm"), 36)[0])[0]
    band = slice(150, 180)  # the caption band along the bottom
    assert np.abs(a[band].astype(int) - b[band].astype(int)).mean() > 8
    assert np.abs(a[:20].astype(int) - b[:20].astype(int)).mean() < 12  # the same header above it


def test_the_caption_band_leaves_the_colour_legend_visible(main_window, anim_view, tmp_path):
    """The band goes below the picture: the scene's colour legend along the picture's bottom stays as it is
    drawn without a caption (before, the band was painted over it)."""
    from scene.labels import place_labels
    from scene.legend import export_label_scale

    from app.export.image import render_view

    steps = player.build_steps(main_window.state.trace)[:1]
    w, h = 640, 360
    spec = animate.AnimationSpec(width=w, height=h, fps=2, hold_s=0.5, lang="en")
    frame = decoded(animate.export(anim_view, steps, spec, str(tmp_path / "c.webm"), 36)[0])[0].astype(int)
    band = animate.band_height(steps, spec, 0, anim_view.cfg)
    assert 0 < band <= h * 0.3 + 1
    picture = render_view(anim_view, w, h - band)  # the view as the export left it (step 0, its camera)
    legend = place_labels(anim_view.overlay_input(), w, h - band, export_label_scale(w, h - band)).legend
    assert legend.height() > 10 and legend.bottom() <= h - band + 1
    alone = animate.rgb_array(picture).astype(int)
    top, bottom = int(legend.top()) + 2, int(legend.bottom()) - 2
    left, right = int(legend.left()) + 2, int(legend.right()) - 2
    region = (slice(top, bottom), slice(left, right))
    assert np.abs(frame[region] - alone[region]).mean() < 6  # the legend, not the band
    assert alone[region].std() > 12  # and the legend has text in it (not a flat panel)
    # the band below still carries the caption: bright text pixels on the dark band
    band_px = frame[h - band + 2:h - 2]
    assert band_px.mean() < 70 and (band_px.max(axis=2) > 180).sum() > 50


def test_a_typed_path_of_an_existing_file_asks_before_replacing(main_window, qtbot, tmp_path):
    """OK in the dialog with a typed path that exists asks "Replace it?"; No keeps the dialog (and the file),
    Yes goes on; a new name does not ask."""
    from PySide6.QtWidgets import QDialogButtonBox, QMessageBox

    from app.window.animate_dialog import AnimationDialog

    existing = tmp_path / "talk.mp4"
    existing.write_bytes(b"old video")
    dialog = AnimationDialog(str(tmp_path / "new.mp4"), main_window)
    qtbot.addWidget(dialog)
    accepted = []
    dialog.accepted.connect(lambda: accepted.append(dialog.choice()[0]))
    dialog.show()
    ok = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok)
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(existing))
    qtbot.mouseClick(ok, Qt.LeftButton)
    box = dialog.confirm
    assert box is not None and box.isVisible() and str(existing) in box.text()
    assert accepted == [] and dialog.isVisible()
    qtbot.mouseClick(box.button(QMessageBox.No), Qt.LeftButton)
    qtbot.waitUntil(lambda: not box.isVisible())
    assert accepted == [] and dialog.isVisible() and existing.read_bytes() == b"old video"
    qtbot.mouseClick(ok, Qt.LeftButton)
    box = dialog.confirm
    assert box is not None and box.isVisible()
    qtbot.mouseClick(box.button(QMessageBox.Yes), Qt.LeftButton)
    qtbot.waitUntil(lambda: accepted == [str(existing)])
    assert not dialog.isVisible()
    # a name that does not exist yet: no question
    fresh = AnimationDialog(str(tmp_path / "fresh.mp4"), main_window)
    qtbot.addWidget(fresh)
    done = []
    fresh.accepted.connect(lambda: done.append(True))
    fresh.show()
    qtbot.mouseClick(fresh.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok), Qt.LeftButton)
    assert done == [True] and fresh.confirm is None


def test_an_orbit_gif_has_one_frame_per_frame_time(main_window, anim_view, tmp_path):
    # 480x270: at 160x90 the header, legend and caption cover the whole picture, and the camera's motion was
    # only seen through the old fixed palette's dither noise (16 levels between any two frames)
    spec = animate.AnimationSpec(width=480, height=270, fps=6, mode="orbit", orbit_s=1.0)
    steps = player.build_steps(main_window.state.trace)
    path, frames = animate.export(anim_view, steps, spec, str(tmp_path / "o.gif"), 36, step=5)
    got = decoded(path)
    assert frames == 6 and len(got) == 6 and got[0].shape[:2] == (270, 480)
    assert np.abs(got[0].astype(int) - got[3].astype(int)).mean() > 2  # the camera went round


def test_a_gif_keeps_the_colours_of_the_picture(main_window, anim_view, tmp_path):
    """Each GIF image has its own palette: its pixels stay within a few levels of the same frame
    in an MP4 (ffmpeg's fixed rgb8 palette was ~22 levels off on average, the dark background included)."""
    spec = animate.AnimationSpec(width=320, height=180, fps=4, mode="orbit", orbit_s=1.0)
    steps = player.build_steps(main_window.state.trace)
    camera = anim_view.camera_state()  # both videos from the same camera (the first leaves the view framed)
    gif, _ = animate.export(anim_view, steps, spec, str(tmp_path / "c.gif"), 36, step=5)
    anim_view.set_camera_state(camera)
    mp4, _ = animate.export(anim_view, steps, spec, str(tmp_path / "c.mp4"), 36, step=5)
    g, m = decoded(gif)[0][..., :3].astype(int), decoded(mp4)[0][..., :3].astype(int)
    assert np.abs(g - m).mean() < 6


def test_cancel_midway_leaves_no_file(main_window, anim_view, tmp_path):
    steps = player.build_steps(main_window.state.trace)[:4]
    spec = animate.AnimationSpec(width=160, height=90, fps=4)
    calls = []

    def progress(done, total):
        calls.append(done)
        return len(calls) < 3

    old = tmp_path / "keep.mp4"
    old.write_bytes(b"old video")
    with pytest.raises(animate.AnimationCancelled):
        animate.export(anim_view, steps, spec, str(old), 36, progress=progress)
    assert sorted(os.listdir(tmp_path)) == ["keep.mp4"] and old.read_bytes() == b"old video"


def test_the_gui_export_cancels_from_its_progress_dialog(main_window, qtbot, tmp_path):
    from PySide6.QtCore import QTimer

    from app.window.animate_dialog import run_export

    win = main_window
    out = str(tmp_path / "gui.mp4")
    spec = animate.AnimationSpec(width=320, height=180, fps=10)

    def cancel():
        dialog = getattr(win, "anim_progress", None)
        if dialog is not None and dialog.isVisible() and dialog.value() > 0:
            dialog.cancel()  # what the Cancel button does
        else:
            QTimer.singleShot(20, cancel)

    QTimer.singleShot(20, cancel)
    assert run_export(win, out, spec) is None
    assert os.listdir(tmp_path) == []
    assert win.statusBar().currentMessage() == animate.tr(animate.AnimationSpec())("anim.cancelled")


def test_the_gui_dialog_exports_a_file(main_window, qtbot, tmp_path):
    from app.window.animate_dialog import run_export

    win = main_window
    dialog = win.open_animation_dialog()
    assert dialog.isVisible()
    dialog.reject()
    out = str(tmp_path / "gui.gif")
    spec = animate.AnimationSpec(width=160, height=90, fps=2, hold_s=0.5, move_s=0.0)
    assert run_export(win, out, spec) == os.path.realpath(out)
    assert len(decoded(out)) == len(player.build_steps(win.state.trace))
    assert "gui.gif" in win.statusBar().currentMessage()


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "app", "export", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})


def test_cli_animate_writes_a_video_with_a_progress_line(tmp_path):
    out = tmp_path / "t.mp4"
    r = run_cli("--animate", "--out", str(out), "--size", "320x180", "--fps", "4", "--tokens", "1",
                "--config", "assets/configs/deepseek-v3.json")
    assert r.returncode == 0, r.stderr
    assert "frame" in r.stderr and r.stdout.startswith("Wrote")
    frames = decoded(str(out), fps=4)
    assert frames[0].shape == (180, 320, 3)
    assert str(len(frames)) in r.stdout


@pytest.mark.parametrize("args, code", [
    (["--animate", "--out", "x.avi"], 2),
    (["--animate", "--out", "x.mp4", "--size", "321x180"], 2),
    (["--animate", "--out", "x.mp4", "--fps", "0"], 2),
    (["--out", "x.mp4"], 2),
    (["--animate", "--out", "/nonexistent-folder/x.mp4"], 1),
])
def test_cli_animate_bad_arguments_are_one_line(args, code, tmp_path):
    r = run_cli(*args)
    assert r.returncode == code
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_cli_config_with_a_bad_field_is_a_bad_argument(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text('{"num_hidden_layers": 500}')
    r = run_cli("--out", str(tmp_path / "x.png"), "--config", str(bad))
    assert r.returncode == 2 and "num_hidden_layers" in r.stderr and r.stderr.count("\n") == 1


def test_the_format_follows_the_requested_name_even_through_a_link(main_window, anim_view, tmp_path):
    """--out x.mp4 as a link to a name without an extension raised KeyError '' and left its temporary file;
    a link to .webm got WebM for an .mp4 request. The container is the requested name's."""
    steps = player.build_steps(main_window.state.trace)[:1]
    spec = animate.AnimationSpec(width=160, height=90, fps=2, hold_s=0.5, captions=False)
    for real_name in ("video", "real.webm"):
        real = tmp_path / real_name
        link = tmp_path / f"asked-{real_name}.mp4"
        link.symlink_to(real)
        path, _ = animate.export(anim_view, steps, spec, str(link), 36)
        assert path == str(real) and real.read_bytes()[4:8] == b"ftyp"  # an MP4 box, not WebM's EBML
    assert not [n for n in os.listdir(tmp_path) if ".part." in n]


def test_the_dialog_refuses_a_path_that_leads_to_a_fifo(main_window, qtbot, tmp_path):
    import stat

    from PySide6.QtWidgets import QDialogButtonBox, QMessageBox

    from app.window.animate_dialog import AnimationDialog

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "talk.mp4").symlink_to(fifo)
    dialog = AnimationDialog(str(tmp_path / "talk.mp4"), main_window)
    qtbot.addWidget(dialog)
    accepted = []
    dialog.accepted.connect(lambda: accepted.append(True))
    dialog.show()
    qtbot.mouseClick(dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok), Qt.LeftButton)
    box = dialog.confirm
    assert box is not None and box.objectName() == "anim_refused" and box.isVisible()
    assert "named pipe (FIFO)" in box.text() and str(fifo) in box.text()
    qtbot.mouseClick(box.button(QMessageBox.Ok), Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.confirm is None)
    assert accepted == [] and dialog.isVisible() and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    dialog.reject()
