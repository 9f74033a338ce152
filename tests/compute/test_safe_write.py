"""compute.guards.safe_write, the commands' guarded writer (issue 44 N1, N7): regular files only, temp + atomic rename,
no link followed, the old file kept on failure, the usual mode; and compute.weights.save goes through it."""
import errno
import os
import stat

import numpy as np
import pytest

from compute.guards import safe_write as sw
from compute import weights as wio


def _mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_file_gets_0666_less_the_umask_and_an_old_one_keeps_its_bits(tmp_path, umask022):
    new = tmp_path / "new.bin"
    sw.write_bytes(new, b"abc")
    assert new.read_bytes() == b"abc" and _mode(new) == 0o644  # not mkstemp's 0600
    old = tmp_path / "old.bin"
    old.write_bytes(b"x")
    os.chmod(old, 0o640)
    sw.write_bytes(old, b"y")
    assert old.read_bytes() == b"y" and _mode(old) == 0o640
    os.umask(0o077)
    sw.write_bytes(tmp_path / "private.bin", b"z")
    assert _mode(tmp_path / "private.bin") == 0o600


def test_weights_keep_the_shipped_files_0644(tmp_path, umask022):
    """`make weights` over the shipped 0644 file left an owner-only file (other users' apps then fell back)."""
    target = tmp_path / "toy.npz"
    target.write_bytes(b"old")
    os.chmod(target, 0o644)
    os.umask(0o077)  # even with a strict umask the replaced file keeps its bits
    wio.save(target, {"embedding": np.ones((2, 3))}, {"recipe": "t"})
    assert _mode(target) == 0o644 and wio.read(target)[1]["recipe"] == "t"


@pytest.mark.parametrize("what", ["fifo", "link", "dangling_link", "dir", "char"])
def test_special_targets_are_refused_and_stay_as_they_were(tmp_path, what):
    target = tmp_path / "t.npz"
    real = tmp_path / "real.npz"
    real.write_bytes(b"old")
    if what == "fifo":
        os.mkfifo(target)
    elif what == "link":
        target.symlink_to(real)
    elif what == "dangling_link":
        target.symlink_to(tmp_path / "nowhere.npz")
    elif what == "dir":
        target.mkdir()
    else:
        try:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except OSError:
            pytest.skip("making a device node needs privileges here")
    before = os.lstat(target)
    with pytest.raises(sw.WriteError) as e:
        wio.save(target, {"embedding": np.ones((2, 3))}, {})
    assert e.value.kind in sw.REFUSED_KINDS and "\n" not in str(e.value) and str(target) in str(e.value)
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert real.read_bytes() == b"old" and not (tmp_path / "nowhere.npz").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"t.npz", "real.npz"})  # no temporary left


def test_a_target_swapped_for_a_fifo_during_the_write_is_not_replaced(tmp_path):
    target = tmp_path / "w.bin"
    target.write_bytes(b"old")

    def fill(f):
        f.write(b"new data")
        target.unlink()
        os.mkfifo(target)  # swapped while the data was written

    with pytest.raises(sw.WriteError, match="FIFO"):
        sw.write_with(target, fill)
    assert target.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["w.bin"]


def test_a_failed_fill_keeps_the_old_file_and_its_error_passes_through(tmp_path):
    target = tmp_path / "w.bin"
    target.write_bytes(b"old")

    def full(f):
        f.write(b"part")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(sw.WriteError, match="No space left") as e:
        sw.write_with(target, full)
    assert e.value.errno == errno.ENOSPC
    with pytest.raises(KeyboardInterrupt):
        sw.write_with(target, lambda f: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["w.bin"]


def test_the_temporary_is_never_a_planted_name(tmp_path, monkeypatch):
    """The temporary is made with O_EXCL | O_NOFOLLOW: a link planted at its name is neither followed nor used."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    monkeypatch.setattr(sw.secrets, "token_hex", lambda n: "planted0")
    (tmp_path / ".w.bin.planted0.tmp").symlink_to(victim)
    with pytest.raises(sw.WriteError):
        sw.write_bytes(tmp_path / "w.bin", b"data")
    assert victim.read_bytes() == b"keep" and not (tmp_path / "w.bin").exists()


def test_check_target_and_probe_name_the_problem(tmp_path):
    for path, kind in (("", "empty"), ("  ", "empty"), (str(tmp_path) + os.sep, "is_dir"),
                       (str(tmp_path / "no" / "such" / "f"), "no_folder")):
        with pytest.raises(sw.WriteError) as e:
            sw.check_target(path)
        assert e.value.kind == kind, path
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(sw.WriteError, match="is not a folder"):
        sw.check_target(tmp_path / "file" / "x.npz", make_folder=True)
    assert sw.probe(tmp_path / "a" / "b" / "w.npz", make_folder=True).endswith("w.npz")
    assert (tmp_path / "a" / "b").is_dir() and list((tmp_path / "a" / "b").iterdir()) == []
    with pytest.raises(sw.WriteError, match="no file can be made"):
        sw.probe("/proc/k3-explorer-probe.npz")
