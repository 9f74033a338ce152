"""compute.guards.guarded_io: regular files only, non-blocking, size-capped, one line naming the path and what it is."""
import os
import signal
import socket
import stat

import pytest

from compute.guards import guarded_io as gio

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")


@pytest.fixture(autouse=True)
def no_hang():
    """A FIFO that is opened for reading would block forever: fail the test after 5 s instead."""
    def _alarm(signum, frame):
        raise TimeoutError("the guarded reader blocked")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _refused(path, what, kind="special", fn=None):
    with pytest.raises(gio.UnsafeFileError) as err:
        (fn or (lambda p: gio.read_bytes(p, 1000)))(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and what in msg, msg
    assert err.value.kind == kind and err.value.path == os.fspath(path)
    return msg


def test_normal_file(tmp_path):
    p = tmp_path / "ok.json"
    p.write_bytes(b'{"a": 1}')
    assert gio.read_bytes(p, 8) == b'{"a": 1}'
    assert gio.read_text(str(p), 100) == '{"a": 1}'
    assert gio.check_regular(p).st_size == 8
    with gio.open_regular(p, None) as fh:
        assert fh.read() == b'{"a": 1}'
        assert os.get_blocking(fh.fileno())  # back to blocking once known to be regular
    with pytest.raises(UnicodeDecodeError):
        p.write_bytes(b"\xff\xfe")
        gio.read_text(p, 100)


def test_fifo_refused_without_blocking(tmp_path):
    p = tmp_path / "pipe.json"
    os.mkfifo(p)
    msg = _refused(p, "a FIFO")
    with pytest.raises(gio.UnsafeFileError) as err:
        gio.read_bytes(p, 10)
    assert err.value.what == "fifo"
    assert msg.endswith("is a FIFO, not a regular file")
    _refused(p, "a FIFO", fn=gio.check_regular)
    _refused(p, "a FIFO", fn=lambda q: gio.open_regular(q, None))


def test_symlink_to_fifo_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    link = tmp_path / "view.json"
    link.symlink_to(tmp_path / "pipe")
    _refused(link, "a FIFO")


def test_dev_zero_refused():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    _refused("/dev/zero", "a character device")
    _refused("/dev/zero", "a character device", fn=lambda q: gio.read_text(q, 10 ** 9))


def test_directory_refused(tmp_path):
    _refused(tmp_path, "a directory")


def test_socket_refused(tmp_path):
    path = tmp_path / "s.sock"
    if len(os.fsencode(path)) > 100:  # AF_UNIX path limit
        pytest.skip("temporary path too long for a socket")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(os.fspath(path))
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        _refused(path, "a socket")
    finally:
        srv.close()


def test_oversize_refused(tmp_path):
    p = tmp_path / "big.json"
    p.write_bytes(b" " * 1001)
    msg = _refused(p, "1001 bytes, larger than the 1000-byte limit", kind="size")
    assert "regular" not in msg
    assert gio.read_bytes(p, 1001) == b" " * 1001
    with pytest.raises(gio.UnsafeFileError):
        gio.open_regular(p, 1000)


def test_not_a_path_is_typeerror():
    for bad in (0, 3, None, True):  # os.stat(0) would stat stdin
        with pytest.raises(TypeError):
            gio.read_bytes(bad, 10)


def test_missing_file_is_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        gio.read_bytes(tmp_path / "nope", 10)


def test_race_swapped_after_stat(tmp_path, monkeypatch):
    """The name is a regular file when stat'ed, then a FIFO when opened: the fstat of the descriptor refuses it
    and the open itself does not block (O_NONBLOCK)."""
    p = tmp_path / "swap"
    p.write_bytes(b"{}")
    real_open = os.open

    def swapping_open(path, flags, *a, **k):
        os.unlink(path)
        os.mkfifo(path)
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(gio.os, "open", swapping_open)
    _refused(p, "a FIFO")


def test_describe_mode_and_show_path():
    assert gio.describe_mode(stat.S_IFBLK) == "a block device"
    assert gio.describe_mode(stat.S_IFLNK) == "a symbolic link"
    assert gio.describe_mode(stat.S_IFREG) == "a regular file"
    assert [gio.mode_name(m) for m in (stat.S_IFIFO, stat.S_IFCHR, stat.S_IFDIR, stat.S_IFSOCK)] == [
        "fifo", "character_device", "directory", "socket"]
    assert gio.show_path("a\nb") == "a\\nb"
    assert len(gio.show_path("x" * 1000)) <= 200
    assert issubclass(gio.UnsafeFileError, ValueError)
