"""The guarded writer: no write follows a link onto a special file, the video encoder writes
through an open descriptor (a link planted at the temporary name changes nothing), the container follows the
requested name, the encoder's failure (exit status, ENOSPC, a cut-short file) keeps the old file and is one
line, SIGINT/SIGTERM leave no part behind, and our stale parts are swept."""
from __future__ import annotations

import fcntl
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from app.files import atomic_io
from app.export import video_out
from app.export.video_out import VideoError, VideoOut
from fs_helpers import tmpfs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODECS = {"mp4": ("libx264", "yuv420p"), "webm": ("libvpx-vp9", "yuv420p"), "gif": ("gif", "rgb8")}
W = H = 32


def encoder_args(fmt: str) -> list[str]:
    codec, pix = CODECS[fmt]
    return ["-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{W}x{H}", "-pix_fmt", "rgb24", "-r", "4", "-i", "-",
            "-an", "-vcodec", codec, "-pix_fmt", pix, "-v", "error"]


def frames(n: int = 4):
    rng = np.random.default_rng(1)
    return [rng.integers(0, 255, (H, W, 3), dtype=np.uint8).tobytes() for _ in range(n)]


def write_video(path, fmt: str, n: int = 4, exe: str | None = None) -> str:
    with VideoOut(str(path), encoder_args(fmt), exe=exe) as video:
        for f in frames(n):
            video.write(f)
        return video.commit()


def box_type(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(12)


def is_mp4(path) -> bool:
    return box_type(path)[4:8] == b"ftyp"


def is_webm(path) -> bool:
    return box_type(path)[:4] == b"\x1a\x45\xdf\xa3"


def is_gif(path) -> bool:
    return box_type(path)[:6] == b"GIF89a"


@pytest.fixture
def guard_devices(monkeypatch, tmp_path):
    """Any rename outside tmp_path fails the test before it happens (a regression must not replace /dev/null)."""
    real_replace = os.replace

    def replace(src, dst, *a, **kw):
        assert os.path.realpath(dst).startswith(str(tmp_path)), f"a write tried to replace {dst}"
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", replace)


def device_id(path) -> tuple[int, int]:
    st = os.stat(path)
    assert stat.S_ISCHR(st.st_mode)
    return st.st_ino, st.st_rdev


# ------------------------------------------------------------------------------------------- special files


def test_check_target_names_what_the_target_is(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "to_fifo.png").symlink_to(fifo)
    (tmp_path / "to_null.png").symlink_to("/dev/null")
    (tmp_path / "to_dir.png").symlink_to(tmp_path)
    cases = {str(fifo): ("fifo", str(fifo)), str(tmp_path / "to_fifo.png"): ("fifo", str(fifo)),
             str(tmp_path / "to_null.png"): ("char_device", "/dev/null"), "/dev/null": ("char_device", "/dev/null"),
             str(tmp_path / "to_dir.png"): ("is_dir", str(tmp_path))}
    for path, (kind, resolved) in cases.items():
        with pytest.raises(atomic_io.WriteError) as info:
            atomic_io.check_target(path)
        assert (info.value.kind, info.value.resolved, info.value.path) == (kind, resolved, path)
        text = atomic_io.message(info.value)
        assert "\n" not in text and path in text
        if resolved != path:
            assert resolved in text  # where the link leads
    assert "named pipe (FIFO)" in atomic_io.message(_refused(str(tmp_path / "to_fifo.png")))
    assert "character device" in atomic_io.message(_refused(str(tmp_path / "to_null.png")))
    # a regular file, a link to one, a name that does not exist yet: the file a write replaces
    real = tmp_path / "real.png"
    real.write_bytes(b"x")
    (tmp_path / "link.png").symlink_to(real)
    assert atomic_io.check_target(str(tmp_path / "link.png")) == str(real)
    assert atomic_io.check_target(str(tmp_path / "new.png")) == str(tmp_path / "new.png")


def _refused(path: str) -> atomic_io.WriteError:
    try:
        atomic_io.check_target(path)
    except atomic_io.WriteError as exc:
        return exc
    raise AssertionError(f"{path} was not refused")


def test_no_writer_replaces_a_fifo_or_a_device(tmp_path, guard_devices):
    """write_bytes (PNG, view files, settings) and the video writer refuse a FIFO and a link to /dev/null;
    both stay what they were, no temporary file is made (a FIFO would also block an open for writing)."""
    from app.files import viewfile

    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    null_link = tmp_path / "null.k3view"
    null_link.symlink_to("/dev/null")
    before = device_id("/dev/null")
    for target in (fifo, null_link):
        with pytest.raises(atomic_io.WriteError):
            atomic_io.write_bytes(str(target), b"data")
    with pytest.raises(atomic_io.WriteError):
        viewfile.save(viewfile.View(), str(null_link))
    for name in ("v.mp4", "v.gif"):
        link = tmp_path / name
        link.symlink_to(fifo)
        with pytest.raises(VideoError) as info:
            VideoOut(str(link), encoder_args("mp4"))
        assert "FIFO" in str(info.value) and "\n" not in str(info.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and null_link.is_symlink()
    assert device_id("/dev/null") == before
    assert sorted(os.listdir(tmp_path)) == ["null.k3view", "pipe.png", "v.gif", "v.mp4"]


def test_the_png_checks_refuse_a_link_to_a_special_file(tmp_path):
    from app.export.image import ExportError, check_writable

    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    (tmp_path / "x.png").symlink_to(fifo)
    with pytest.raises(ExportError) as info:
        check_writable(str(tmp_path / "x.png"))
    assert "FIFO" in str(info.value) and str(fifo) in str(info.value)
    with pytest.raises(ExportError):
        check_writable("/dev/null")


def run_export(*args, timeout=240, **kw):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "app", "export", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, **kw)


def test_cli_refuses_a_link_to_a_fifo_in_one_line_exit_2(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for name, extra in (("x.png", []), ("x.mp4", ["--animate"])):
        (tmp_path / name).symlink_to(fifo)
        r = run_export("--out", str(tmp_path / name), "--size", "160x90", *extra, timeout=120)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("\n") == 1 and "FIFO" in r.stderr and "Traceback" not in r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["fifo", "x.mp4", "x.png"]


# ------------------------------------------------------------------------------------------- the temp name


def test_a_link_planted_at_the_predicted_temp_name_is_not_followed(tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    target = tmp_path / "x.mp4"
    names = iter(["aaaaaaaa", "bbbbbbbb", "cccccccc"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    planted = tmp_path / ".x.mp4.aaaaaaaa.part.mp4"
    planted.symlink_to(victim)
    assert write_video(target, "mp4") == str(target)
    assert victim.read_bytes() == b"keep me" and planted.is_symlink()
    assert is_mp4(target)
    assert sorted(os.listdir(tmp_path)) == sorted([".x.mp4.aaaaaaaa.part.mp4", "victim.txt", "x.mp4"])


def test_a_temp_file_swapped_for_a_link_after_creation_changes_nothing(tmp_path):
    """The encoder writes through its descriptor: an attacker who swaps the temporary name for a link to
    another file (what the encoder's re-open by name followed 3 of 3 times) overwrites nothing; the swap is
    noticed and the old file stays."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    target = tmp_path / "x.mp4"
    target.write_bytes(b"old video")
    video = VideoOut(str(target), encoder_args("mp4"))
    os.unlink(video.tmp)
    os.symlink(victim, video.tmp)
    for f in frames():
        video.write(f)
    with pytest.raises(VideoError):
        video.commit()
    assert victim.read_bytes() == b"keep me" and target.read_bytes() == b"old video"


# ------------------------------------------------------------------------------------------- the format


@pytest.mark.parametrize("fmt, check", [("mp4", is_mp4), ("webm", is_webm), ("gif", is_gif)])
def test_the_format_follows_the_requested_name_through_a_link(tmp_path, fmt, check):
    other = {"mp4": "webm", "webm": "gif", "gif": "mp4"}[fmt]
    real = tmp_path / f"real.{other}"
    link = tmp_path / f"asked.{fmt}"
    link.symlink_to(real)
    assert write_video(link, fmt) == str(real)
    assert check(real) and link.is_symlink()
    noext = tmp_path / "noext"
    link2 = tmp_path / f"second.{fmt}"
    link2.symlink_to(noext)
    write_video(link2, fmt)
    assert check(noext)
    assert not [n for n in os.listdir(tmp_path) if ".part." in n]


def test_an_unknown_extension_is_one_line_and_leaves_nothing(tmp_path):
    for name in ("x.avi", "x", "x.mp4.bak"):
        with pytest.raises(VideoError) as info:
            VideoOut(str(tmp_path / name), encoder_args("mp4"))
        assert "\n" not in str(info.value) and name in str(info.value)
    assert os.listdir(tmp_path) == []


def test_the_cli_writes_mp4_for_an_mp4_name_linked_to_a_name_without_extension(tmp_path):
    real = tmp_path / "video"
    (tmp_path / "x.mp4").symlink_to(real)
    r = run_export("--animate", "--out", str(tmp_path / "x.mp4"), "--size", "160x90", "--fps", "2", "--tokens", "1",
                   "--orbit")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and is_mp4(real)
    assert sorted(os.listdir(tmp_path)) == ["video", "x.mp4"]


# ------------------------------------------------------------------------------------------- encoder failures

FAKE = r'''#!{python}
import os, sys
out = sys.argv[-1].split("file:", 1)[-1]
mode = os.environ["FAKE_ENCODER_MODE"]
if mode == "quit":
    sys.exit(3)
data = sys.stdin.buffer.read()
with open(out, "wb") as fh:
    if mode == "no_moov":  # what a full disk left: ftyp and a cut-short mdat, exit status 0
        fh.write(b"\x00\x00\x00\x10ftypisom\x00\x00\x02\x00" + b"\x00\x10\x00\x00mdat" + data[:1000])
    else:
        fh.write(data[:5000])
if mode == "noisy":
    for i in range(35):
        print(f"[libx264 @ 0x55d0] line {{i}} of the encoder's chatter", file=sys.stderr)
    print("[out#0/mp4 @ 0x55d0] Conversion failed!", file=sys.stderr)
    sys.exit(1)
if mode == "enospc":
    print("[out#0/mp4 @ 0x55d0] Error writing trailer: No space left on device", file=sys.stderr)
    sys.exit(228)
'''


@pytest.fixture
def fake_encoder(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("fake")
    exe = folder / "ffmpeg"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(0o755)

    def use(mode: str) -> str:
        monkeypatch.setenv("FAKE_ENCODER_MODE", mode)
        return str(exe)

    return use


@pytest.mark.parametrize("mode, words", [
    ("noisy", "Conversion failed!"),
    ("enospc", "the disk is full"),
    ("no_moov", "without finishing"),
    ("quit", "exit status 3"),
])
def test_an_encoder_failure_keeps_the_old_file_and_is_one_line(tmp_path, fake_encoder, mode, words, caplog):
    import logging

    old = tmp_path / "x.mp4"
    old.write_bytes(b"yesterday's video")
    with caplog.at_level(logging.INFO, logger="app.export.video_out"):
        with pytest.raises(VideoError) as info:
            write_video(old, "mp4", n=40, exe=fake_encoder(mode))  # 40 x 3 kB: more than a pipe holds
    text = str(info.value)
    assert "\n" not in text and words in text and str(old) in text, text
    assert old.read_bytes() == b"yesterday's video"
    assert os.listdir(tmp_path) == ["x.mp4"]
    if mode == "noisy":
        assert len(text) < 300 and "line 34" in info.value.detail
        assert "line 34 of the encoder's chatter" in caplog.text  # the encoder's words in the log


def test_an_encoder_that_cannot_start_is_one_line(tmp_path):
    with pytest.raises(VideoError) as info:
        write_video(tmp_path / "x.gif", "gif", exe=str(tmp_path / "no-such-ffmpeg"))
    assert "\n" not in str(info.value) and "could not be started" in str(info.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fmt", ["mp4", "webm", "gif"])
def test_a_cut_short_container_is_noticed(tmp_path, fmt):
    path = write_video(tmp_path / f"v.{fmt}", fmt, n=6)
    fd = os.open(path, os.O_RDWR)
    try:
        assert video_out.container_problem(fd, fmt) is None
        size = os.fstat(fd).st_size
        os.ftruncate(fd, size - 7)
        assert video_out.container_problem(fd, fmt)
        os.ftruncate(fd, 0)
        assert video_out.container_problem(fd, fmt) == "the file is empty"
    finally:
        os.close(fd)


def test_a_real_full_disk_keeps_the_old_video(tmp_path):
    with tmpfs(tmp_path / "disk", "size=256k") as disk:
        old = disk / "x.gif"
        old.write_bytes(b"old video " * 10000)  # 100 kB of the 256
        with pytest.raises(VideoError) as info:
            write_video(old, "gif", n=200)  # ~200 kB of noise frames: does not fit beside it
        assert "the disk is full" in str(info.value) and "\n" not in str(info.value)
        assert old.read_bytes() == b"old video " * 10000
        assert os.listdir(disk) == ["x.gif"]


def test_the_cli_on_a_full_disk_exits_1_in_one_line_and_keeps_the_old_video(tmp_path):
    with tmpfs(tmp_path / "disk", "size=1m") as disk:
        old = disk / "x.mp4"
        old.write_bytes(os.urandom(1_000_000))  # ~48 kB left: the video needs ~120
        before = old.read_bytes()
        r = run_export("--animate", "--out", str(old), "--size", "320x180", "--fps", "4", "--tokens", "1")
        assert r.returncode == 1
        errors = [line for line in r.stderr.splitlines() if not line.startswith("frame ")]
        assert len(errors) == 1 and "the disk is full" in errors[0], r.stderr
        assert old.read_bytes() == before and os.listdir(disk) == ["x.mp4"]


# ------------------------------------------------------------------------------------------- signals


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_the_animation_leaves_no_part(tmp_path, sig, code):
    out = tmp_path / "x.mp4"
    out.write_bytes(b"old video")
    proc = subprocess.Popen([sys.executable, "-m", "app", "export", "--animate", "--out", str(out),
                             "--size", "320x180", "--fps", "8", "--tokens", "1"], cwd=ROOT,
                            env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        while True:  # wait for frames to flow (the encoder is running, its part exists)
            line = proc.stderr.readline()
            seen.append(line)
            if not line or (line.startswith("frame ") and not line.startswith("frame 0/")):
                break
        assert [n for n in os.listdir(tmp_path) if ".part." in n], seen
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, stderr
    errors = [line for line in stderr.splitlines() if not line.startswith("frame ")]
    assert len(errors) == 1 and signal.Signals(sig).name in errors[0] and "Traceback" not in stderr
    assert stdout == "" and out.read_bytes() == b"old video" and os.listdir(tmp_path) == ["x.mp4"]


# ------------------------------------------------------------------------------------------- stale parts


def test_stale_parts_of_our_naming_are_swept_at_the_next_export(tmp_path):
    old = time.time() - 3600
    stale = tmp_path / ".x.mp4.k2j4h5g6.part.mp4"
    fresh = tmp_path / ".x.mp4.a1b2c3d4.part.mp4"
    other = tmp_path / ".x.mp4.abc.part.mp4"  # not our pattern
    locked = tmp_path / ".y.gif.zzzzzzzz.part.gif"  # a live writer holds it
    stale_tmp = tmp_path / ".shot.png.q1w2e3r4.tmp"
    notes = tmp_path / ".notes.txt.q1w2e3r4.tmp"  # not a kind of file the app writes
    victim = tmp_path / "victim.mp4"
    link = tmp_path / ".v.mp4.l1n2k3x4.part.mp4"  # a link is never followed nor removed
    for p in (stale, fresh, other, locked, stale_tmp, notes, victim):
        p.write_bytes(b"part")
    link.symlink_to(victim)
    for p in (stale, other, locked, stale_tmp, notes, victim):
        os.utime(p, (old, old))
    os.utime(link, (old, old), follow_symlinks=False)
    holder = os.open(locked, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        write_video(tmp_path / "new.gif", "gif")
    finally:
        os.close(holder)
    left = set(os.listdir(tmp_path))
    assert stale.name not in left and stale_tmp.name not in left
    assert {fresh.name, other.name, locked.name, notes.name, link.name, victim.name, "new.gif"} <= left
    assert victim.read_bytes() == b"part"


def test_settings_are_not_saved_over_a_fifo_that_appeared_after_reading(tmp_path):
    """The settings file is written through atomic_io.write_bytes: a FIFO (or a link to a device) put at its
    path after it was read is refused at save, in one line, and stays what it is."""
    from app.files.settings import Settings

    path = tmp_path / "k3.ini"
    settings = Settings(str(path))  # nothing there yet: defaults
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    path.symlink_to(fifo)
    message = settings.sync()
    assert message and "\n" not in message and "FIFO" in message and str(fifo) in message
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and path.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["fifo", "k3.ini"]


@pytest.mark.parametrize("delay", [0.3, 1.0, 2.0])
def test_a_sigterm_at_any_point_of_a_png_export_is_one_line(tmp_path, delay):
    """During imports, numba's compiler (its ctypes callbacks swallow exceptions: a traceback, then the export
    went on and exited 0), the engine or the render: exit 143 with one line and no file, or, when the export
    had already finished, its own 'Wrote' line."""
    out = tmp_path / "p.png"
    proc = subprocess.Popen([sys.executable, "-m", "app", "export", "--out", str(out), "--size", "1280x720"],
                            cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    if proc.returncode == 143:
        assert stderr.count("\n") == 1 and "SIGTERM" in stderr and stdout == ""
        assert os.listdir(tmp_path) == []
    else:  # finished before the signal came
        assert stdout.startswith("Wrote") and os.listdir(tmp_path) == ["p.png"], (proc.returncode, stderr)


def test_a_signal_during_the_first_pyside6_import_waits_for_its_end():
    """shiboken aborts the process (-6) when an exception is raised inside its initialisation: inside
    cli._shielded the handler only records the signal, and the section's end raises it."""
    from app import cli

    cli._stopped.clear()
    previous = signal.signal(signal.SIGTERM, cli._on_signal)
    try:
        with pytest.raises(cli.Stopped):
            with cli._shielded():
                signal.raise_signal(signal.SIGTERM)  # the handler runs here: nothing may be raised yet
                reached_end = True
        assert reached_end and cli._stopped == [signal.SIGTERM] and cli._shield == []
    finally:
        signal.signal(signal.SIGTERM, previous)
        cli._stopped.clear()
