"""The guarded writer for the commands (no Qt): what `python -m compute.training.train --out` and the weights files use.

A target is replaced only when it is a regular file, or does not exist yet. A character device (/dev/null), a
block device, a FIFO, a socket, a folder and a symbolic link (the link itself: the writer neither follows nor
replaces it) are refused with one line naming the path and what it is: by check_target before any work (the
training command checks `--out` before it trains), again before the temporary file is made, and once more just
before the rename. The bytes go to a temporary file made next to the target with O_CREAT | O_EXCL | O_NOFOLLOW
(a name planted there is never opened), are flushed to disk, and the temporary is renamed over the target in one
step; a failure at any point leaves the old file as it was and no temporary behind. The file gets the usual
mode: the old file's permission bits when it is replaced, else 0666 less the umask (never mkstemp's 0600, which
would turn a shipped 0644 weights file into one other users cannot read).

    from compute.guards.safe_write import write_with, check_target, WriteError
    check_target(path)                              # early: WriteError when the path cannot be a target
    write_with(path, lambda f: f.write(data))       # f: a binary file object on the temporary

WriteError (an OSError) carries `path`, `kind` ("fifo", "char_device", "block_device", "socket", "symlink",
"is_dir", "special", "empty", "no_folder", "not_writable" or "other" for the OS's own errors) and `reason`; its
str() is one line: "could not write PATH: REASON".
"""
from __future__ import annotations

import errno
import os
import secrets
import stat

from compute.guards.guarded_io import describe_mode, show_path

__all__ = ["WriteError", "check_target", "probe", "write_with", "write_bytes", "new_file_mode", "umask", "sync_folder"]

REFUSED_KINDS = ("fifo", "char_device", "block_device", "socket", "symlink", "is_dir", "special")
_KIND_OF = {"a FIFO": "fifo", "a character device": "char_device", "a block device": "block_device",
            "a socket": "socket", "a symbolic link": "symlink", "a directory": "is_dir", "a special file": "special"}


class WriteError(OSError):
    """A file that was not written (nothing at its path changed). str(): one line."""

    def __init__(self, path, kind: str, reason: str, code: int = errno.EINVAL):
        super().__init__(code, reason, os.fspath(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path))
        self.path, self.kind, self.reason = self.filename, kind, reason

    def __str__(self) -> str:
        return f"could not write {show_path(self.path)}: {self.reason}"


def _kind(st_mode: int) -> str | None:
    """None for a regular file, else the writer's word for what it is."""
    return None if stat.S_ISREG(st_mode) else _KIND_OF.get(describe_mode(st_mode), "special")


def _refuse_existing(path: str) -> os.stat_result | None:
    """lstat(path) when it is a regular file, None when nothing is there; WriteError for anything else."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # nothing there (the folder's problem is said elsewhere)
        return None
    except OSError as e:
        raise WriteError(path, "other", e.strerror or str(e), e.errno or errno.EINVAL) from None
    kind = _kind(st.st_mode)
    if kind is not None:
        what = describe_mode(st.st_mode)
        raise WriteError(path, kind, f"it is {what}, not a regular file" if kind != "symlink" else
                         "it is a symbolic link (the writer replaces regular files only; name the file itself)")
    return st


def check_target(path, make_folder: bool = False) -> str:
    """The path as a string when a write may replace it: not empty, not ending in a separator, not an existing
    special file, link or folder, and in a folder this user can write (with make_folder: the nearest existing
    folder above it, where the missing ones would be made). Raises WriteError otherwise. Never opens the path."""
    if isinstance(path, bool) or not isinstance(path, (str, bytes, os.PathLike)):
        raise WriteError(repr(path), "other", f"not a file path: {type(path).__name__}")
    text = os.fsdecode(os.fspath(path))
    if not text.strip():
        raise WriteError(text, "empty", "the file name is empty")
    if "\0" in text:
        raise WriteError(text, "other", "the file name holds a NUL character")
    if text.endswith(os.sep) or (os.altsep and text.endswith(os.altsep)):
        raise WriteError(text, "is_dir", "the name ends in a path separator: it names a folder, not a file")
    _refuse_existing(text)
    folder = os.path.dirname(os.path.abspath(text))
    while make_folder and not os.path.lexists(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        why = "does not exist" if not os.path.lexists(folder) else "is not a folder"
        raise WriteError(text, "no_folder", f"its folder {show_path(folder)} {why}", errno.ENOENT)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise WriteError(text, "not_writable", f"its folder {show_path(folder)} is not writable by this user",
                         errno.EACCES)
    return text


def probe(path, make_folder: bool = False) -> str:
    """check_target, then make the missing folders (make_folder) and create and remove a temporary file next to
    the target, the way write_with will: what a long job checks before it starts, so that it cannot fail at the
    end on a folder it may not write (os.access says yes to root everywhere, also on /proc). Returns the path."""
    target = check_target(path, make_folder)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        if make_folder:
            os.makedirs(folder, exist_ok=True)
        fd, tmp = _make_temp(folder, os.path.basename(target))
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise WriteError(target, "not_writable" if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else "other",
                         f"no file can be made in its folder: {e.strerror or e}", e.errno or errno.EIO) from None
    return target


def umask() -> int:
    """The process umask, read without changing it (os.umask would, for a moment, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def new_file_mode(old: os.stat_result | None) -> int:
    """The mode a written file gets: the replaced file's permission bits, else 0666 less the umask."""
    return stat.S_IMODE(old.st_mode) & 0o777 if old is not None else 0o666 & ~umask()


_TMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
              | getattr(os, "O_BINARY", 0))


def _make_temp(folder: str, name: str) -> tuple[int, str]:
    """(fd, path) of a new file ".NAME.XXXXXXXX.tmp" in `folder`: O_EXCL | O_NOFOLLOW, so a file or link already
    at that name (planted, or left by a killed run) is never opened; another random name is tried then."""
    for attempt in range(8):
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, _TMP_FLAGS, 0o600), tmp
        except FileExistsError:
            if attempt == 7:
                raise
    raise AssertionError("unreachable")


def write_with(path, fill, make_folder: bool = False) -> str:
    """Write a file by `fill(f)` (f: a binary file object on a fresh temporary next to the target), then rename it
    over `path` (see the module docstring). Returns the path written. Raises WriteError (an OSError) when the
    target is refused or the OS fails (disk full, read-only ...); whatever `fill` raises passes through. Either way
    the old file stays as it was and the temporary is removed."""
    target = check_target(path, make_folder)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        if make_folder:
            os.makedirs(folder, exist_ok=True)
        mode = new_file_mode(_refuse_existing(target))
        fd, tmp = _make_temp(folder, os.path.basename(target))
    except WriteError:
        raise
    except OSError as e:
        raise WriteError(target, "other", e.strerror or str(e), e.errno or errno.EIO) from None
    try:
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb", closefd=False) as f:
                fill(f)
                f.flush()
            os.fsync(fd)
        finally:
            os.close(fd)
        _refuse_existing(target)  # again: the target may have been swapped while the data was written
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(target, "other", exc.strerror or str(exc), exc.errno or errno.EIO) from None
        raise
    sync_folder(folder)
    return target


def write_bytes(path, data: bytes, make_folder: bool = False) -> str:
    """write_with for bytes in memory."""
    return write_with(path, lambda f: f.write(data), make_folder)


def sync_folder(folder: str) -> None:
    """Make the rename itself durable (best effort: not every file system lets a folder be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
