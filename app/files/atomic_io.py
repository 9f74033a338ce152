"""Atomic file writes (no Qt): the bytes go to a temporary file in the target's folder, are flushed to disk,
then renamed over the target in one step. A failure at any point (disk full, read-only file system, a
folder where the file should be) leaves the old file untouched and no temporary file behind, and is raised
as a WriteError that names the real cause.

A symbolic link is followed (the file it points to is replaced, the link stays); an existing file keeps its
permission bits, a new one gets the usual ones (0666 less the umask).

Only regular files are replaced (check_target): a target that exists, directly or at the end of a link, as a
FIFO, a device (/dev/full, /dev/null…), a socket or a folder is refused with one line naming it, before any
temporary file is made and again just before the rename (run as root, a rename over /dev/full would replace
the device node with the file). The temporary file is made O_EXCL (tempfile.mkstemp: a link planted at a
name makes it pick another), flock()ed and kept open until after the rename, and the name is checked to hold
that very file just before the rename and the target just after it (as app/export/video_out.py's parts): a link
swapped in for it is never renamed into the output unnoticed, the write fails instead. Our temporary files left
by a killed process are swept by sweep_stale().
"""
from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import stat
import tempfile
import time

from compute.guards.guarded_io import mode_name
from compute.guards.safe_write import sync_folder as _sync_folder  # (app.export.video_out uses it too)
from compute.guards.safe_write import umask as _umask

log = logging.getLogger(__name__)

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
# what a target that is not a regular file is (WriteError.kind; the app says it in words)
SPECIAL_KINDS = ("fifo", "char_device", "block_device", "socket", "special")


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
        self.resolved = path  # where the path leads (links followed): the thing that is not a regular file

    @classmethod
    def not_regular(cls, path: str, resolved: str, kind: str) -> "WriteError":
        """The target (path, or the file its links lead to: resolved) exists and is not a regular file."""
        code = errno.EISDIR if kind == "is_dir" else errno.EINVAL
        err = cls(path, OSError(code, os.strerror(code) if kind == "is_dir" else _KIND_WORDS[kind]))
        err.kind, err.resolved = kind, resolved
        if kind != "is_dir":
            err.reason = f"it is {_KIND_WORDS[kind]}, not a regular file" if resolved == path else \
                f"it leads to {resolved}, {_KIND_WORDS[kind]}, not a regular file"
        return err

    def __str__(self) -> str:
        return f"could not write {self.path}: {self.reason}"


_KIND_WORDS = {"fifo": "a named pipe (FIFO)", "char_device": "a character device",
               "block_device": "a block device", "socket": "a socket", "special": "a special file",
               "is_dir": "a folder"}


# compute.guards.guarded_io's names for what a file is (the readers' word) -> the writer's kinds (its messages' keys)
_WRITER_KIND = {"directory": "is_dir", "fifo": "fifo", "character_device": "char_device",
                "block_device": "block_device", "socket": "socket"}


def file_kind(mode: int) -> str | None:
    """None for a regular file, else what it is: "is_dir", "fifo", "char_device", "block_device", "socket"
    or "special" (compute.guards.guarded_io.mode_name in the writer's words)."""
    name = mode_name(mode)
    return None if name == "regular" else _WRITER_KIND.get(name, "special")


def check_target(path: str) -> str:
    """The path a write to `path` replaces (absolute, links resolved). Raises WriteError when that exists and
    is not a regular file (kind "fifo", "char_device", "block_device", "socket", "special" or "is_dir"):
    a write never replaces, truncates or blocks on a FIFO, a device, a socket or a folder, also not at the end
    of a link. stat() never opens the file, so a FIFO cannot block here. A target that does not exist yet (or
    cannot be looked at: the write then names the real cause) passes."""
    shown = os.path.abspath(os.path.expanduser(os.fspath(path)))
    target = os.path.realpath(shown)
    try:
        mode = os.stat(shown).st_mode
    except OSError:
        return target
    kind = file_kind(mode)
    if kind is not None:
        raise WriteError.not_regular(shown, target, kind)
    return target


def write_bytes(path: str, data: bytes) -> str:
    """Write data to path atomically; returns the path written (links resolved). Raises WriteError (also when
    the target is not a regular file: check_target)."""
    target = check_target(path)
    try:
        sweep_stale(os.path.dirname(target))
        mode = _mode_for(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                   dir=os.path.dirname(target))
    except OSError as exc:
        raise WriteError(target, exc) from exc
    try:
        try:
            _lock_quietly(fd)  # a sweeper elsewhere leaves it alone
            _write_all(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)
            check_target(target)  # again: the target may have changed while the data was written
            _still_ours(fd, tmp)  # and the temporary name must still be our file, not a link planted there
            os.replace(tmp, target)
            _still_ours(fd, target, renamed=True)
        finally:
            os.close(fd)
    except WriteError:
        _remove_ours(tmp)
        raise
    except OSError as exc:
        _remove_ours(tmp)
        raise WriteError(target, exc) from exc
    except BaseException:
        _remove_ours(tmp)
        raise
    _sync_folder(os.path.dirname(target))
    return target


def _still_ours(fd: int, name: str, renamed: bool = False) -> None:
    """OSError unless `name` (not followed) is the file open as `fd`: the temporary file was swapped for another
    (a link planted at its name) between its creation and the rename. Found after the rename, the planted entry
    that took the target's name is removed when it is a link (only the name, never what it points to)."""
    try:
        st = os.lstat(name)
    except FileNotFoundError:
        st = None
    if st is not None and os.path.samestat(os.fstat(fd), st):
        return
    if renamed and st is not None and stat.S_ISLNK(st.st_mode):
        _remove_quietly(name)
    raise OSError(errno.EEXIST, "the temporary file was replaced by another before the rename")


def _lock_quietly(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a file system without flock: the sweeper's age rule still protects a live write
        pass


def _remove_ours(tmp: str) -> None:
    """Remove the temporary file; a link planted at its name is left as it is (not ours, and not the output)."""
    try:
        st = os.lstat(tmp)
        if stat.S_ISLNK(st.st_mode):
            return  # not ours: a link planted at our name stays as it is (it is not the output)
    except OSError:
        return
    _remove_quietly(tmp)


# Our temporary files: atomic writes ".NAME.XXXXXXXX.tmp" (NAME one of the kinds of file the app writes) and
# video parts ".NAME.XXXXXXXX.part.EXT" (app/export/video_out.py); XXXXXXXX as tempfile.mkstemp makes it.
_RANDOM = r"[a-z0-9_]{8}"
STALE_PATTERNS = (re.compile(rf"^\..+\.(?:png|k3view|ini|conf)\.{_RANDOM}\.tmp$", re.IGNORECASE),
                  re.compile(rf"^\..+\.{_RANDOM}\.part\.(?:mp4|webm|gif)$"))
STALE_AFTER_S = 300.0  # untouched this long (a live export writes its part all the time, and holds a lock)


def is_stale_name(name: str) -> bool:
    return any(p.match(name) for p in STALE_PATTERNS)


def sweep_stale(folder: str, older_than_s: float = STALE_AFTER_S) -> list[str]:
    """Remove our own temporary files in `folder` that a killed process left: names of our pattern only,
    regular files (not links) of this user, not modified for `older_than_s` seconds and not locked by a live
    writer (a video part is flock()ed while it is written). Returns the names removed; never raises."""
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(folder or ".") if is_stale_name(n)]
    except OSError:
        return removed
    now = time.time()
    for name in names:
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or now - st.st_mtime < older_than_s:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while a writer holds it
            if os.path.samestat(os.fstat(fd), os.lstat(path)):
                os.unlink(path)
                removed.append(name)
        except OSError:
            pass
        finally:
            os.close(fd)
    if removed:
        log.info("removed %d stale temporary file(s) in %s: %s", len(removed), folder, ", ".join(removed))
    return removed


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


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def message(exc: WriteError) -> str:
    """The translated one-line message for a failed write: the path and the real cause."""
    from app.i18n import tr  # Qt-free; imported here so this module stays usable without the catalogues

    if exc.kind in SPECIAL_KINDS:  # nothing was tried: the target is refused
        what = tr(f"writer.kind.{exc.kind}")
        reason = tr("writer.reason.special", what=what) if exc.resolved == exc.path else \
            tr("writer.reason.special_link", what=what, target=exc.resolved)
        return tr("writer.refused", path=exc.path, reason=reason)
    if exc.kind == "is_dir" and exc.resolved != exc.path:
        reason = tr("writer.reason.special_link", what=tr("writer.kind.is_dir"), target=exc.resolved)
    else:
        reason = tr(f"files.reason.{exc.kind}", reason=exc.reason)
    return tr("files.write_failed", path=exc.path, reason=reason)
