"""The private folder Qt's settings copy lives in (app/files/settings.py), and its clean-up after a killed process.

`make()` creates `$TMPDIR/k3-settings-XXXXXXXX` (mode 0700, tempfile's random name) with a `.lock` file that
stays flock()ed while the process lives: SIGKILL or a crash cannot remove the folder, but the kernel drops the
lock. `sweep_stale()` (at every start) removes such folders whose lock it can take (and made over FRESH_S ago:
a process starting up has made its lock file but not locked it yet): only folders of this user, never a link,
our name pattern only, removed with shutil.rmtree's link-safe walk. A folder without a lock file
(written before the lock existed) goes once it is older than LEGACY_AFTER_S. Never raises.
"""
from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import stat
import tempfile
import time

PREFIX = "k3-settings-"
LOCK = ".lock"
LEGACY_AFTER_S = 2 * 24 * 3600.0
FRESH_S = 60.0  # a lock file younger than this is a process starting up (between its creation and its flock)
_NAME = re.compile(re.escape(PREFIX) + r"[a-z0-9_]{8}")
log = logging.getLogger(__name__)


class Workdir:
    """A live settings folder: `.name` is its path; `cleanup()` removes it (also done when it is collected)."""

    def __init__(self, folder: str | None = None):
        self._dir = tempfile.TemporaryDirectory(prefix=PREFIX, dir=folder)
        self.name = self._dir.name
        self._fd = os.open(os.path.join(self.name, LOCK), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                           | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held for this process's life

    def cleanup(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._dir.cleanup()

    def __del__(self):
        try:
            self.cleanup()
        except (OSError, AttributeError):
            pass


def make(folder: str | None = None) -> Workdir:
    """A new locked settings folder, after sweeping the stale ones of killed processes."""
    sweep_stale(folder)
    return Workdir(folder)


def sweep_stale(folder: str | None = None, legacy_after_s: float = LEGACY_AFTER_S) -> list[str]:
    """Remove the settings folders of processes that are gone (see the module docstring); the names removed."""
    folder = folder or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(folder) if _NAME.fullmatch(n)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                continue
            if _stale(path, st, legacy_after_s):
                shutil.rmtree(path)
                removed.append(name)
        except OSError:
            continue
    if removed:
        log.info("removed %d stale settings folder(s) in %s: %s", len(removed), folder, ", ".join(removed))
    return removed


def _stale(path: str, st: os.stat_result, legacy_after_s: float) -> bool:
    try:
        fd = os.open(os.path.join(path, LOCK), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:  # no lock: an older version's folder (or one being made this instant)
        newest = max([st.st_mtime] + [os.lstat(os.path.join(path, n)).st_mtime for n in os.listdir(path)])
        return time.time() - newest > legacy_after_s
    try:
        lock = os.fstat(fd)
        if not stat.S_ISREG(lock.st_mode) or time.time() - lock.st_mtime < FRESH_S:
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while its process lives
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
