"""Issue 44 N8: a link planted at the PNG export's temporary name never becomes the output (app/files/atomic_io.py,
as app/export/video_out.py's parts), and the settings folders a killed process leaves in $TMPDIR are swept at the next
start (app/files/settings_workdir.py), never a live one, another user's or a link."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from app.files import atomic_io, settings_workdir
from app.files.atomic_io import WriteError, write_bytes

POSIX = pytest.mark.skipif(os.name != "posix", reason="links, flock and signals as on Linux")


def _plant_link_while_writing(monkeypatch, aim):
    """While the data is written, the temporary file is swapped for a link to `aim` (what a local attacker
    racing the export would do: unlink the name, symlink there)."""
    real = atomic_io._write_all
    planted = []

    def write_and_swap(fd, data):
        real(fd, data)
        name = os.readlink(f"/proc/self/fd/{fd}")
        os.unlink(name)
        os.symlink(aim, name)
        planted.append(name)

    monkeypatch.setattr(atomic_io, "_write_all", write_and_swap)
    return planted


@POSIX
def test_a_link_planted_at_the_temp_name_is_not_renamed_into_the_output(tmp_path, monkeypatch):
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_bytes(b"someone else's")
    target = tmp_path / "out.png"
    target.write_bytes(b"old picture")
    planted = _plant_link_while_writing(monkeypatch, str(secret))
    with pytest.raises(WriteError) as info:
        write_bytes(str(target), b"\x89PNG new picture")
    assert "replaced by another" in str(info.value)
    assert not target.is_symlink() and target.read_bytes() == b"old picture"  # the old file kept
    assert secret.read_bytes() == b"someone else's"  # what the link points to untouched
    assert planted and os.path.islink(planted[0])  # the planted link left as it was, not renamed


@POSIX
def test_the_png_export_refuses_a_planted_link_and_does_not_say_it_wrote(tmp_path, monkeypatch):
    pytest.importorskip("PySide6")
    from PySide6.QtGui import QImage

    from app.files.export_files import ExportError, save_png

    image = QImage(4, 4, QImage.Format_ARGB32)
    image.fill(0xFF336699)
    target = tmp_path / "shot.png"
    _plant_link_while_writing(monkeypatch, str(tmp_path / "nowhere"))
    with pytest.raises(ExportError):
        save_png(image, str(target), encode=lambda img: b"\x89PNG....")
    assert not target.exists() and not target.is_symlink()


@POSIX
def test_a_swap_between_the_check_and_the_rename_is_found_after_it(tmp_path, monkeypatch):
    """The narrowest race: the name is swapped after the last check, just before os.replace. The rename then
    moves the planted link to the target; the check after it finds that, removes the link it moved there (the
    name only) and fails: the export never says it wrote."""
    aim = tmp_path / "aim.txt"
    aim.write_bytes(b"keep me")
    target = tmp_path / "late.png"
    real_replace = os.replace

    def swap_then_replace(src, dst, *a, **k):
        if str(dst) == str(target):
            os.unlink(src)
            os.symlink(str(aim), src)
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(atomic_io.os, "replace", swap_then_replace)
    with pytest.raises(WriteError):
        write_bytes(str(target), b"picture")
    assert not target.is_symlink() and not target.exists()
    assert aim.read_bytes() == b"keep me"
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_an_ordinary_write_still_lands_with_its_lock_released(tmp_path):
    target = tmp_path / "fine.png"
    write_bytes(str(target), b"one")
    write_bytes(str(target), b"two")
    assert target.read_bytes() == b"two" and sorted(os.listdir(tmp_path)) == ["fine.png"]


# ----------------------------------------------------------------------------- settings folders


_HOLDER = """
import sys
sys.path.insert(0, sys.argv[2])
from app.files import settings_workdir
w = settings_workdir.Workdir(sys.argv[1])
open(w.name + '/settings.ini', 'w').write('[General]\\n')
print(w.name, flush=True)
sys.stdin.readline()
"""


def _holder(folder, root):
    """A process holding a settings folder; its lock file dated back past FRESH_S (a process started a while ago:
    a lock file younger than that is one starting up, never swept)."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder), str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    name = proc.stdout.readline().strip()
    assert name and os.path.isdir(name)
    past = time.time() - settings_workdir.FRESH_S - 5
    os.utime(os.path.join(name, settings_workdir.LOCK), (past, past))
    return proc, name


@POSIX
def test_a_folder_whose_process_is_starting_up_is_not_swept(tmp_path):
    """Between the lock file's creation and its flock the lock is free: a fresh lock file is left alone."""
    young = tmp_path / "k3-settings-starting"
    young.mkdir()
    (young / settings_workdir.LOCK).write_bytes(b"")
    assert settings_workdir.sweep_stale(str(tmp_path)) == [] and young.is_dir()
    past = time.time() - settings_workdir.FRESH_S - 5
    os.utime(young / settings_workdir.LOCK, (past, past))
    assert settings_workdir.sweep_stale(str(tmp_path)) == ["k3-settings-starting"]


@POSIX
def test_a_killed_process_settings_folder_is_swept_and_a_live_one_kept(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    killed, killed_dir = _holder(tmp_path, root)
    live, live_dir = _holder(tmp_path, root)
    try:
        killed.send_signal(signal.SIGKILL)  # no clean-up runs: the folder stays
        killed.wait(10)
        assert os.path.isdir(killed_dir)
        removed = settings_workdir.sweep_stale(str(tmp_path))
        assert removed == [os.path.basename(killed_dir)] and not os.path.exists(killed_dir)
        assert os.path.isdir(live_dir)  # its process holds the lock
    finally:
        live.stdin.close()
        live.wait(10)
    assert not os.path.exists(live_dir)  # a clean exit removes its own


@POSIX
def test_the_sweep_leaves_links_other_names_and_young_lockless_folders(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    os.symlink(outside, tmp_path / "k3-settings-linklink")  # a link with our name: never followed or removed
    (tmp_path / "k3-settings-notours!").mkdir()  # not our pattern
    young = tmp_path / "k3-settings-young123"  # an older version's folder, or one being made now: no lock yet
    young.mkdir()
    (young / "settings.ini").write_text("[General]\n")
    old = tmp_path / "k3-settings-old12345"
    old.mkdir()
    (old / "settings.ini").write_text("[General]\n")
    past = time.time() - settings_workdir.LEGACY_AFTER_S - 60
    os.utime(old / "settings.ini", (past, past))
    os.utime(old, (past, past))
    assert settings_workdir.sweep_stale(str(tmp_path)) == ["k3-settings-old12345"]
    assert (outside / "keep.txt").exists() and os.path.islink(tmp_path / "k3-settings-linklink")
    assert young.is_dir() and (tmp_path / "k3-settings-notours!").is_dir()


@POSIX
def test_settings_start_sweeps_the_stale_folders(tmp_path, monkeypatch):
    pytest.importorskip("PySide6")
    from app.files.settings import Settings

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    killed, killed_dir = _holder(tmp_path, root)
    killed.send_signal(signal.SIGKILL)
    killed.wait(10)
    s = Settings(str(tmp_path / "user.ini"))
    assert not os.path.exists(killed_dir)
    assert os.path.dirname(s._workdir.name) == str(tmp_path) and os.path.isdir(s._workdir.name)
    s._workdir.cleanup()
