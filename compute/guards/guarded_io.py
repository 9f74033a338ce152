"""The one guarded reader for every file the app reads (settings, view files, model configs, weights). No Qt.

A file is read only when it is a regular file (after following links) no larger than its caller's cap:
FIFOs, character and block devices, directories and sockets are refused with one line naming the path and
what it is, before any byte is read. The check is made twice: `os.stat` before opening (so a FIFO is never
opened by a blocking open), then `os.fstat` on the descriptor actually opened (so a name swapped between
the two calls is caught too). The open itself is non-blocking (O_NONBLOCK, O_NOCTTY): opening a FIFO or a
terminal that appeared in that race returns at once instead of waiting for a writer.

    from compute.guards.guarded_io import read_bytes, read_text, open_regular, UnsafeFileError
    data = read_bytes(path, 1 << 20)      # bytes, or UnsafeFileError / OSError
    with open_regular(path, 8 << 30) as fh:   # a binary file object positioned at 0
        ...

`UnsafeFileError` (a ValueError) carries `path`, `kind` ("special" or "size"), `problem` (the line
without the path) and `what` (mode_name: "fifo", "directory", ... for a special file); its str() is the
whole line. A missing or unreadable file is the usual OSError.
"""
from __future__ import annotations

import io
import os
import stat

__all__ = ["UnsafeFileError", "describe_mode", "mode_name", "check_regular", "open_regular", "read_bytes", "read_text",
           "show_path"]

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))


class UnsafeFileError(ValueError):
    """A file the guarded reader refuses. `kind`: "special" (not a regular file) or "size" (over the cap)."""

    def __init__(self, path, kind: str, problem: str, what: str = ""):
        self.path, self.kind, self.problem = os.fspath(path), kind, problem
        self.what = what  # for kind "special": mode_name() of the file ("fifo", "character_device", ...)
        super().__init__(f"{show_path(path)}: {problem}")


def show_path(path, limit: int = 200) -> str:
    """A path for a one-line message: control characters escaped, very long paths shortened in the middle."""
    try:
        text = os.fsdecode(os.fspath(path))
    except (TypeError, ValueError):
        text = repr(path)
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    if len(text) > limit:
        half = (limit - 3) // 2
        text = text[:half] + "..." + text[-half:]
    return text


def _as_path(path):
    """os.fspath(path) for str, bytes and path-like objects; TypeError for anything else (an int included)."""
    if isinstance(path, bool) or not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"expected a file path, got {type(path).__name__}")
    return os.fspath(path)


_NAMES = {"a regular file": "regular", "a FIFO": "fifo", "a character device": "character_device",
          "a block device": "block_device", "a directory": "directory", "a socket": "socket",
          "a symbolic link": "symlink", "a special file": "special"}


def mode_name(st_mode: int) -> str:
    """describe_mode as an identifier: "regular", "fifo", "character_device", "block_device", "directory",
    "socket", "symlink" or "special" (for a translated message)."""
    return _NAMES[describe_mode(st_mode)]


def describe_mode(st_mode: int) -> str:
    """What a file of this mode is, as a noun phrase: "a regular file", "a FIFO", "a directory", ..."""
    if stat.S_ISREG(st_mode):
        return "a regular file"
    if stat.S_ISFIFO(st_mode):
        return "a FIFO"
    if stat.S_ISCHR(st_mode):
        return "a character device"
    if stat.S_ISBLK(st_mode):
        return "a block device"
    if stat.S_ISDIR(st_mode):
        return "a directory"
    if stat.S_ISSOCK(st_mode):
        return "a socket"
    if stat.S_ISLNK(st_mode):
        return "a symbolic link"
    return "a special file"


def _refuse_special(path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(path, "special", f"is {describe_mode(st.st_mode)}, not a regular file",
                              mode_name(st.st_mode))


def _refuse_size(path, size: int, max_bytes: int | None) -> None:
    if max_bytes is not None and size > max_bytes:
        raise UnsafeFileError(path, "size", f"is {size} bytes, larger than the {max_bytes}-byte limit")


def check_regular(path) -> os.stat_result:
    """os.stat(path) (links followed) when it is a regular file; UnsafeFileError when it is anything else,
    OSError when it cannot be stat'ed (missing, no permission), TypeError when `path` is not a path (an int
    would name a file descriptor to os.stat)."""
    st = os.stat(_as_path(path))
    _refuse_special(path, st)
    return st


def open_regular(path, max_bytes: int | None) -> io.BufferedReader:
    """A binary file object on `path`, which must be a regular file of at most `max_bytes` bytes (None: no
    cap). Stat'ed before opening and fstat'ed after; the descriptor goes back to blocking mode once it is known
    to be a regular file. The caller closes it (use `with`)."""
    path = _as_path(path)
    st = check_regular(path)
    _refuse_size(path, st.st_size, max_bytes)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)  # the file actually opened: the name may have been swapped since the stat above
        _refuse_special(path, st)
        _refuse_size(path, st.st_size, max_bytes)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path, max_bytes: int) -> bytes:
    """The whole content of a regular file of at most `max_bytes` bytes (a file that grows past the cap while
    being read is refused too)."""
    with open_regular(path, max_bytes) as fh:
        data = fh.read(max_bytes + 1)
    _refuse_size(path, len(data), max_bytes)
    return data


def read_text(path, max_bytes: int, encoding: str = "utf-8") -> str:
    """read_bytes decoded strictly (UnicodeDecodeError, a ValueError, when the bytes are not `encoding`)."""
    return read_bytes(path, max_bytes).decode(encoding)
