"""Non-finite results of an engine pass are reported, never propagated silently. No Qt, no torch.

Extreme or damaged weights (a huge but finite BF16 value, 3.4e38, overflows a matmul to inf, then inf - inf is
NaN) make the numbers of a pass NaN or infinite. Sampling from NaN logits would pick an arbitrary token and every
view would draw garbage; instead, after each pass the engine calls `check_pass`, which raises `NonFiniteError`
(a ValueError: the CLI, the API and the window show its one line) naming the pass, how many of the logits or of
the final hidden state are not finite, and the first layer whose output is not (looked up only on failure).

The check is two `isfinite` reductions over [T, V] and [T, D] per pass: a few microseconds.
"""
from __future__ import annotations

import numpy as np


class NonFiniteError(ValueError):
    """A pass whose logits or hidden state hold NaN or inf. `what` ("logits" | "hidden state"), `count` of
    `total` values, `pass_index` (0 = prefill), `layer` (0-based, the first layer whose output is not finite;
    None when no layer's is, or it is unknown)."""

    def __init__(self, what: str, count: int, total: int, pass_index: int, kind: str, layer: int | None):
        self.what, self.count, self.total = what, int(count), int(total)
        self.pass_index, self.kind, self.layer = int(pass_index), kind, layer
        where = f"; first at the output of layer {layer}" if layer is not None else ""
        super().__init__(f"the engine's numbers are not finite: {self.count} of {self.total} values of the {what} "
                         f"in pass {self.pass_index + 1} ({kind}) are NaN or infinite{where} "
                         f"(extreme or damaged weights or knobs)")


def all_finite(a) -> bool:
    """True when every value of the numpy array `a` is finite (an integer array always is)."""
    a = np.asarray(a)
    return a.dtype.kind not in "fc" or bool(np.isfinite(a).all())


def check_pass(ps, pass_index: int) -> None:
    """NonFiniteError unless the pass's logits (final["lm_head"]) and final hidden state (final["final.norm"]) are
    finite. `ps`: a compute.trace.PassTrace."""
    final = ps.final
    for key, what in (("lm_head", "logits"), ("final.norm", "hidden state")):
        a = final.get(key)
        if a is None or all_finite(a):
            continue
        a = np.asarray(a)
        bad = int(a.size - np.count_nonzero(np.isfinite(a)))
        raise NonFiniteError(what, bad, a.size, pass_index, getattr(ps, "kind", "pass"), first_bad_layer(ps))


def first_bad_layer(ps) -> int | None:
    """The first layer of the pass whose residual output holds a NaN or inf (None: none, or not recorded)."""
    for li, lt in enumerate(getattr(ps, "layers", ()) or ()):
        try:
            r = lt.tensors.get("residual")
        except Exception:  # noqa: BLE001 - a diagnosis only: the error is raised without it
            return None
        if r is not None and not all_finite(r):
            return li
    return None


__all__ = ["NonFiniteError", "check_pass", "all_finite", "first_bad_layer"]
