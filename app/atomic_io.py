"""Atomic file writes (no Qt): the bytes go to a temporary file in the target's folder, are flushed to disk,
then renamed over the target in one step. A failure at any point (disk full, read-only file system, a
folder where the file should be) leaves the old file untouched and no temporary file behind, and is raised
as a WriteError that names the real cause.

A symbolic link is followed (the file it points to is replaced, the link stays); an existing file keeps its
permission bits, a new one gets the usual ones (0666 less the umask).
"""
from __future__ import annotations

import errno
import os
import tempfile

# errno -> a short, stable name for the cause (the app maps it to a translated message)
KINDS = {
    errno.ENOSPC: "disk_full",
    errno.EDQUOT: "disk_full",
    errno.EFBIG: "disk_full",
    errno.EROFS: "read_only",
    errno.EISDIR: "is_dir",
    errno.EACCES: "permission",
    errno.EPERM: "permission",
    errno.ENOENT: "no_folder",
    errno.ENOTDIR: "no_folder",
    errno.ENAMETOOLONG: "name_too_long",
}


class WriteError(OSError):
    """A file could not be written. `kind` names the cause ("disk_full", "read_only", "is_dir", "permission",
    "no_folder", "name_too_long" or "other"); `path` is the target; str() is a one-line English message."""

    def __init__(self, path: str, err: OSError):
        code = err.errno if isinstance(err.errno, int) else 0
        super().__init__(code, err.strerror or str(err), path)
        self.path = path
        self.kind = KINDS.get(code, "other")
        if self.kind == "no_folder" and os.path.isdir(os.path.dirname(path)):
            self.kind = "other"  # e.g. /proc: the folder is there but takes no new files; say what the OS said
        self.reason = err.strerror or str(err)

    def __str__(self) -> str:
        return f"could not write {self.path}: {self.reason}"


def write_bytes(path: str, data: bytes) -> str:
    """Write data to path atomically; returns the path written (links resolved). Raises WriteError."""
    target = os.path.realpath(os.path.abspath(os.path.expanduser(path)))
    try:
        if os.path.isdir(target):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), target)
        mode = _mode_for(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                   dir=os.path.dirname(target))
    except OSError as exc:
        raise WriteError(target, exc) from exc
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as exc:
        _remove_quietly(tmp)
        raise WriteError(target, exc) from exc
    except BaseException:
        _remove_quietly(tmp)
        raise
    _sync_folder(os.path.dirname(target))
    return target


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _mode_for(target: str) -> int:
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it (os.umask would, for a moment, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _sync_folder(folder: str) -> None:
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


def message(exc: WriteError) -> str:
    """The translated one-line message for a failed write: the path and the real cause."""
    from app.i18n import tr  # Qt-free; imported here so this module stays usable without the catalogues

    reason = tr(f"files.reason.{exc.kind}", reason=exc.reason)
    return tr("files.write_failed", path=exc.path, reason=reason)
