"""Child process of the app's engine worker (app/worker.py): puts compute.fused_nb's compiled kernels into
numba's disk cache, or finds them there, so that the app can load them without compiling in its own threads.

    python -m app.kernel_warmup     # exit 0: every kernel came from the cache; 10: some were compiled now
                                    # (and cached: run it again to check); 3: numba unavailable; 1: it failed

Runs at low priority (nice 10), one OpenMP thread, no Qt: an install's first start compiles for ~25 s of CPU
while the window stays responsive on the numpy kernels; later starts only load the cache (about a second).
The engines built here are the app's (the K3 config, float32, on the CPU, trained and random weights), so every
kernel signature the app runs is compiled. Exit 0 only when numba loaded every kernel from its disk cache: the
app loads them in its engine thread only then, so a cache that cannot be written (or kernels whose source
changed since) never makes the app compile in its own threads.
"""
from __future__ import annotations

import os
import sys


def main() -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if hasattr(os, "nice"):
        try:
            os.nice(10)
        except OSError:
            pass
    from compute import fused_nb

    if not fused_nb.available():
        print("numba is not installed (or K3_NO_NUMBA is set)", file=sys.stderr)
        return 3
    from compute.engine import ToyK3

    try:
        for weights in ("trained", "random"):
            model = ToyK3(device="cpu", weights=weights, compiled=True)  # the constructor compiles or loads
            if not model.compiled:
                print("compute.fused_nb did not compile", file=sys.stderr)
                return 1
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
        print(f"{type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    return 10 if compiled_now() else 0


def compiled_now() -> int:
    """How many kernel signatures this process compiled (numba's cache did not have them)."""
    from compute import _fused_nb_kernels as kernels

    return sum(sum(f.stats.cache_misses.values()) for f in vars(kernels).values()
               if hasattr(f, "stats") and hasattr(f.stats, "cache_misses"))


if __name__ == "__main__":
    sys.exit(main())
