"""Give freed heap memory back to the system after old traces are freed.

A trace is ~10^4 small numpy arrays; freeing one leaves glibc's malloc with free chunks it keeps for reuse, and a
long session that replaces traces every few seconds then shows a slowly rising RSS although no Python object is
kept (bench/soak.py: flat gc object counts, RSS +12-18 MiB/hour; one malloc_trim(0) after 180 layer changes gave
back 13 MB). `trim()` asks malloc to return its free memory; ctypes releases the GIL for the call. The engine worker
thread calls it once the app is quiet after traces were freed (app/engine/housekeeping.py: the traces a drag frees, 8 at a
time, are not trimmed then, since malloc_trim holds malloc's locks ~20 ms and the UI thread's allocations would
wait), so the UI thread never waits for it. Elsewhere than glibc it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util

_malloc_trim = None
_looked_up = False


def _function():
    global _malloc_trim, _looked_up
    if not _looked_up:
        _looked_up = True
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _malloc_trim = libc.malloc_trim
            _malloc_trim.argtypes = [ctypes.c_size_t]
            _malloc_trim.restype = ctypes.c_int
        except (OSError, AttributeError):  # not glibc: nothing to trim
            _malloc_trim = None
    return _malloc_trim


def trim() -> bool:
    """malloc_trim(0): True when glibc gave memory back to the system, False when it had none or is absent."""
    fn = _function()
    return bool(fn(0)) if fn is not None else False
