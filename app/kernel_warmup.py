"""Child process of the app's engine worker (app/worker.py): puts compute.fused_nb's compiled kernels into
numba's disk cache, or finds them there, so that the app can load them without compiling in its own threads.

    python -m app.kernel_warmup     # exit 0: the kernels are cached; 3: numba unavailable; 1: it failed

Runs at low priority (nice 10), one OpenMP thread, no Qt: an install's first start compiles for ~25 s of CPU
while the window stays responsive on the numpy kernels; later starts only load the cache (about a second).
The engine built here is the app's (the K3 config, float32, on the CPU), so every kernel signature the app
runs is compiled.
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
        model = ToyK3(device="cpu", weights="random", compiled=True)  # the constructor compiles or loads
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
        print(f"{type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    return 0 if model.compiled else 1


if __name__ == "__main__":
    sys.exit(main())
