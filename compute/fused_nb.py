"""Compiled (numba) versions of compute.fused's hot kernels: the same formulas as explicit loops, one call per
block instead of a few dozen numpy ops (at toy width each numpy op is ~0.5–1 µs of pure overhead). The kernels
live in compute._fused_nb_kernels (module-level functions, so numba's disk cache works), imported only here.

`available()` says whether they run: numba importable and K3_NO_NUMBA unset (K3_NO_NUMBA=1 forces the
pure-numpy kernels of compute.fused, which stay the fallback for an install without numba). Compiled code is
cached on disk (`cache=True`): next to the module when that folder is writable, else in the user cache
(~/.cache/k3-explorer/numba, or under $XDG_CACHE_HOME) through NUMBA_CACHE_DIR, set before numba is imported.
Only the first start of an install compiles (~25 s CPU on a 2-core machine; later starts load the cache in
~0.6 s, numba's import included); ToyK3's constructor does it with one prefill and one decode pass, i.e. in
the engine's thread.

Block kernels (float32 and float64; dot products accumulate in float64), each writing its outputs into arrays
the caller allocated — one [T, n] buffer whose column views are the trace tensors (returning arrays from a
compiled function costs ~0.7 µs each):
- `moe_into`: latent MoE with shared experts (router sigmoid, top-k by the biased score, the k experts'
  SiTU-GLU through the packed table of compute.fused, RMSNorm of the mix, W_up, shared experts);
- `kda_into`: KDA with the lower-bound gate: fused projection, short conv, SiLU, L2 norms, gates, the token
  recurrence (any T; decode is T = 1), per-head RMSNorm and output gate (alpha / beta overrides: numpy);
- `mla_into`: gated NoPE MLA with the latent cache;
- `attn_into`: one Block-AttnRes mix over the stored candidates and the new partial (BufferedAttnRes._attn);
- `rms`: RMSNorm with pre-scaled weights (compute.fused._rms).
tests/compute/test_fused.py runs every fused block on both paths against the operators in float64.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

_NB = None  # the numba module, or False when unavailable


def _cache_dir_setup() -> None:
    """Point NUMBA_CACHE_DIR at a user cache dir when this package's folder is not writable (site-packages)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = Path(__file__).resolve().parent
    if os.access(here, os.W_OK) and os.access(here / "__pycache__" if (here / "__pycache__").exists() else here,
                                              os.W_OK):
        return
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    d = base / "k3-explorer" / "numba"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(d)


def available() -> bool:
    """numba kernels usable: numba importable and K3_NO_NUMBA not set to a true value."""
    global _NB
    if os.environ.get("K3_NO_NUMBA", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    if _NB is None:
        _cache_dir_setup()
        try:
            import numba
        except ImportError:
            _NB = False
        else:
            _NB = numba
            _compile(numba)
    return bool(_NB)


def _compile(numba) -> None:
    """Bind the jitted kernels of compute._fused_nb_kernels as this module's globals."""
    from compute import _fused_nb_kernels as k

    globals().update(mm=k.mm, rms=k.rms, attn=k.attn, moe=k.moe, kda=k.kda, attn_into=k.attn_into,
                     kda_into=k.kda_into, moe_into=k.moe_into, mla_into=k.mla_into)
