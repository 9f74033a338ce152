"""The background threads' share of the CPU: the render thread (and the GL driver's rasteriser threads it feeds:
Mesa's llvmpipe runs one per core) and the engine thread get a higher nice value than the UI thread, so that when
every core is busy (a 2-core machine drawing at 4x auto-play) the UI thread — input, timers, the widgets — gets
the CPU first and frames or runs wait a little instead. They still get all the CPU the UI does not need.

Linux only (a nice value per thread: setpriority on a thread id, the threads listed in /proc/self/task); elsewhere,
or when the system refuses, nothing changes. Raising a nice value needs no privilege; it is never lowered here."""
from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterable

__all__ = ["BACKGROUND_NICE", "lower", "lower_this_thread", "threads_named"]

log = logging.getLogger(__name__)

BACKGROUND_NICE = 5  # CFS weight 335 against the UI thread's 1024: ~3/4 of a contended core goes to the UI
_TASKS = "/proc/self/task"


def _supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "setpriority")


def threads_named(prefix: str) -> set[int]:
    """The native ids of this process's threads whose name starts with prefix (empty where /proc is not)."""
    if not _supported():
        return set()
    out = set()
    try:
        tasks = os.listdir(_TASKS)
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"{_TASKS}/{tid}/comm", encoding="utf-8", errors="replace") as f:
                if f.read().startswith(prefix):
                    out.add(int(tid))
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
    return out


def lower(tids: Iterable[int], nice: int = BACKGROUND_NICE) -> int:
    """Raise each thread's nice value to at least `nice` (one already nicer keeps its own). Returns how many
    changed; a thread that is gone or a system that refuses is skipped (logged at debug level)."""
    if not _supported():
        return 0
    changed = 0
    for tid in tids:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                changed += 1
        except OSError as exc:
            log.debug("thread %s keeps its priority: %s", tid, exc)
    return changed


def lower_this_thread(nice: int = BACKGROUND_NICE) -> int:
    """lower() for the calling thread (call it from the thread itself, e.g. in its first slot)."""
    return lower([threading.get_native_id()], nice)
