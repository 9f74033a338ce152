"""numba's set-up for the compiled code (compute.fused_nb's pass, compute.compiled.fast_select's selection loops): whether
numba may be used (K3_NO_NUMBA) and where its disk cache goes, set before numba is first imported."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir_setup", "disabled_by_env"]


def cache_dir_setup() -> None:
    """Point NUMBA_CACHE_DIR at the user cache dir: never next to the code (a writable site-packages kept 2.6 MB
    after an uninstall; a checkout's compute/__pycache__ is not the place either). A NUMBA_CACHE_DIR already set
    stays."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    d = base / "k3-explorer" / "numba"
    if __name__.startswith("k3_explorer."):  # the installed package: numba pickles its kernels' record types by
        # module name, so a checkout run as `compute` and installed (or editable) as `k3_explorer.compute` from
        # the same files must not share one cache (the installed one failed with "No module named 'compute'")
        d = d / "k3_explorer"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(d)


def disabled_by_env() -> bool:
    """K3_NO_NUMBA is set to a true value: the compiled code is not used (the numpy / torch operators answer)."""
    return os.environ.get("K3_NO_NUMBA", "").strip().lower() not in ("", "0", "false", "no")
