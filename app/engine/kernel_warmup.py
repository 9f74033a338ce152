"""The compiled kernels' warm-up: the one entry point that puts compute.fused_nb's numba kernels into numba's disk
cache (or finds them there) and writes its readiness stamp, and the one command line that starts it.

    k3-explorer --warm-kernels [--if-needed]        # any install, the standalone bundle too
    python -m app.engine.kernel_warmup [--if-needed]       # the same from a checkout (`make test`)

Exit 0: the kernels are in the cache (compiled now or loaded from it; with --if-needed and
fused_nb.cache_ready() already, numba is not even imported); 3: numba unavailable (not installed, or K3_NO_NUMBA
set); 1: it failed; 2: a bad argument. One line on stderr says why when not 0. The app's own child adds
CHILD_FLAG: it then exits 10 when some kernels were compiled now (and cached: the app runs it again to check).

The app's engine worker (app/engine/worker.py, through app/engine/kernel_upgrade.py) runs it as a child process after the first
trace, at low priority (nice 10) and with one OpenMP thread, no Qt: an install's first start compiles for ~25 s
of CPU while the window stays responsive on the operators' numpy loop; later starts only load the cache (about
a second). The engines built here are the app's (the K3 config, float32, on the CPU, trained and random weights), so
every kernel signature the app runs is compiled. The app loads the kernels in its engine thread only after a child
exited 0, so a cache that cannot be written (or kernels whose source changed since) never makes it compile in its
own threads.

Frozen (a PyInstaller bundle, `sys.frozen`): there is no `python -m`, so the child is the bundle's own executable
with WARM_FLAG, which app/__main__.py hands to main() here before anything else (no Qt, no argument parser).
The readiness test is compute.fused_nb's: `enabled()` (numba there, K3_NO_NUMBA unset; imports nothing) says
whether a warm-up can help, `cache_ready()` whether one is needed.
"""
from __future__ import annotations

import os
import sys
import time

WARM_FLAG = "--warm-kernels"  # the hidden first argument of the app's entry point that runs main()
MODULE = "app.engine.kernel_warmup"  # `python -m` target when not frozen
EXIT_COMPILED = 10  # with CHILD_FLAG only: compiled now (a script under `set -e` must read success as 0)
CHILD_FLAG = "--report-compiled"  # the app's child (app/engine/kernel_upgrade.py): exit 10 when it compiled
EXIT_UNAVAILABLE = 3
CODE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the folder holding app/ (a checkout)


def child_command() -> list[str]:
    """The command line of the warm-up child: this interpreter with `-m app.engine.kernel_warmup`, or, in a frozen
    bundle (no interpreter to run a module with), the bundle's executable with WARM_FLAG."""
    if getattr(sys, "frozen", False):
        return [sys.executable, WARM_FLAG, CHILD_FLAG]
    return [sys.executable, "-m", MODULE, CHILD_FLAG]


def wanted() -> bool:
    """A warm-up can give the app compiled kernels: compute.fused_nb.enabled() (numba installed, K3_NO_NUMBA
    unset; imports no numba)."""
    from compute import fused_nb

    return fused_nb.enabled()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    report = CHILD_FLAG in argv
    argv = [a for a in argv if a != CHILD_FLAG]
    if argv not in ([], ["--if-needed"]):
        print(f"usage: k3-explorer {WARM_FLAG} [--if-needed]  (or python -m {MODULE} [--if-needed])",
              file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if hasattr(os, "nice"):
        try:
            os.nice(10)
        except OSError:
            pass
    from compute import fused_nb

    if argv and fused_nb.cache_ready():
        return 0
    fused_nb.clear_stale()  # before this process imports the kernels, so never what it compiles below
    if not fused_nb.available():
        print("kernel warm-up: numba is not installed (or K3_NO_NUMBA is set); the engine uses numpy",
              file=sys.stderr)
        return EXIT_UNAVAILABLE
    from compute.engine import ToyK3

    t0 = time.perf_counter()
    try:
        model = ToyK3(device="cpu", weights="trained", compiled=True)  # the constructor compiles or loads
        if not model.compiled:
            print("kernel warm-up: compute.fused_nb did not compile", file=sys.stderr)
            return 1
        fused_nb.warm_cache()  # the random weights' engine, then the readiness stamp
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
        print(f"kernel warm-up: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    compiled = compiled_now()
    print(f"kernel warm-up: {'compiled' if compiled else 'loaded'} into {fused_nb.cache_dir()} "
          f"({time.perf_counter() - t0:.1f} s)")
    return EXIT_COMPILED if compiled and report else 0


def compiled_now() -> int:
    """How many kernel signatures this process compiled (numba's cache did not have them)."""
    from compute.compiled import _fused_nb_kernels, _fused_nb_math

    return sum(sum(f.stats.cache_misses.values()) for m in (_fused_nb_kernels, _fused_nb_math)
               for f in vars(m).values() if hasattr(f, "stats") and hasattr(f.stats, "cache_misses"))


if __name__ == "__main__":
    sys.exit(main())
