"""app.files.atomic_io: a write either lands whole or leaves the old file as it was, and names the real cause."""
from __future__ import annotations

import errno
import os
import stat

import pytest

from app.files import atomic_io
from app.files.atomic_io import WriteError, write_bytes
from fs_helpers import tmpfs


def leftovers(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def test_write_creates_and_replaces(tmp_path):
    target = tmp_path / "a.bin"
    write_bytes(str(target), b"first")
    assert target.read_bytes() == b"first"
    write_bytes(str(target), b"second, longer")
    assert target.read_bytes() == b"second, longer"
    assert leftovers(tmp_path) == []


def test_new_file_gets_usual_mode_and_existing_keeps_its_own(tmp_path):
    new = tmp_path / "new.bin"
    write_bytes(str(new), b"x")
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~atomic_io._umask()
    kept = tmp_path / "kept.bin"
    kept.write_bytes(b"old")
    kept.chmod(0o640)
    write_bytes(str(kept), b"new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640


def test_a_link_is_followed_not_replaced(tmp_path):
    real = tmp_path / "real.bin"
    real.write_bytes(b"old")
    link = tmp_path / "link.bin"
    link.symlink_to(real)
    write_bytes(str(link), b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_disk_full_midway_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "keep.png"
    target.write_bytes(b"precious")
    calls = []

    def full_after_first_chunk(fd, data):
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return min(len(data), 4)  # a short write: the rest must follow in a second call

    monkeypatch.setattr(atomic_io.os, "write", full_after_first_chunk)
    with pytest.raises(WriteError) as info:
        write_bytes(str(target), b"0123456789")
    assert info.value.kind == "disk_full" and info.value.errno == errno.ENOSPC
    assert "No space left on device" in str(info.value)
    monkeypatch.undo()
    assert target.read_bytes() == b"precious"
    assert leftovers(tmp_path) == []


def test_a_folder_in_the_way_is_named(tmp_path):
    (tmp_path / "shot.png").mkdir()
    with pytest.raises(WriteError) as info:
        write_bytes(str(tmp_path / "shot.png"), b"x")
    assert info.value.kind == "is_dir"
    assert leftovers(tmp_path) == []


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(WriteError) as info:
        write_bytes(str(tmp_path / "nope" / "shot.png"), b"x")
    assert info.value.kind == "no_folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_an_unwritable_folder_is_named(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(WriteError) as info:
            write_bytes(str(folder / "shot.png"), b"x")
        assert info.value.kind == "permission"
    finally:
        folder.chmod(0o755)


def test_real_disk_full_keeps_the_old_file(tmp_path):
    with tmpfs(tmp_path / "small", "size=64k") as disk:
        target = disk / "shot.png"
        write_bytes(str(target), b"old picture " * 1000)  # 12 kB: fits
        with pytest.raises(WriteError) as info:
            write_bytes(str(target), os.urandom(200_000))  # does not fit next to the old one
        assert info.value.kind == "disk_full"
        assert target.read_bytes() == b"old picture " * 1000
        assert leftovers(disk) == []


def test_real_read_only_file_system_is_named(tmp_path):
    with tmpfs(tmp_path / "ro", "size=64k,ro") as disk:
        with pytest.raises(WriteError) as info:
            write_bytes(str(disk / "shot.png"), b"x")
        assert info.value.kind == "read_only"
        assert "Read-only file system" in str(info.value)


def test_a_special_target_is_refused_before_anything_is_made(tmp_path):
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    link = tmp_path / "link.png"
    link.symlink_to(fifo)
    for target in (fifo, link):
        with pytest.raises(WriteError) as info:
            write_bytes(str(target), b"x")  # never opens the FIFO (that would block) nor renames over it
        assert info.value.kind == "fifo" and info.value.resolved == str(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(os.listdir(tmp_path)) == ["link.png", "pipe.png"]


def test_a_target_that_turns_special_during_the_write_is_not_replaced(tmp_path, monkeypatch):
    """The target is checked again just before the rename: a FIFO put there while the data was written stays."""
    target = tmp_path / "shot.png"
    target.write_bytes(b"old")
    real_write = atomic_io._write_all

    def swap_then_write(fd, data):
        target.unlink()
        os.mkfifo(target)
        real_write(fd, data)

    monkeypatch.setattr(atomic_io, "_write_all", swap_then_write)
    with pytest.raises(WriteError) as info:
        write_bytes(str(target), b"new")
    assert info.value.kind == "fifo"
    assert stat.S_ISFIFO(os.lstat(target).st_mode) and leftovers(tmp_path) == []


def test_stale_temporary_files_of_ours_are_swept_at_the_next_write(tmp_path):
    import time

    old = time.time() - 3600
    ours = tmp_path / ".shot.png.a1b2c3d4.tmp"
    fresh = tmp_path / ".shot.png.e5f6g7h8.tmp"
    foreign = tmp_path / ".data.json.a1b2c3d4.tmp"  # not a kind of file the app writes
    for p in (ours, fresh, foreign):
        p.write_bytes(b"half")
    for p in (ours, foreign):
        os.utime(p, (old, old))
    write_bytes(str(tmp_path / "other.png"), b"x")
    assert sorted(os.listdir(tmp_path)) == sorted([fresh.name, foreign.name, "other.png"])
    assert atomic_io.sweep_stale(str(tmp_path / "missing")) == []  # never raises
