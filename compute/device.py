"""Where the toy engine runs, resolved without importing torch unless a GPU is asked for (compute.engine
re-exports Device, resolve_device and TORCH_HINT)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TORCH_HINT = "install it: pip install torch (from a checkout: pip install '.[cuda]')"


@dataclass(frozen=True)
class Device:
    """Where the engine runs, without importing torch: type "cpu" or "cuda" (index None = the current GPU).
    str() spells it as torch does ("cpu", "cuda", "cuda:1")."""

    type: str
    index: int | None = None

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


def import_torch(why: str):
    """torch, or ImportError with a one-line hint when it is not installed (the CPU path never needs it)."""
    try:
        import torch
    except ImportError:
        raise ImportError(f"{why} needs PyTorch, which is not installed; {TORCH_HINT}") from None
    return torch


def resolve_device(device=None) -> Device:
    """"auto" (or None) → cuda when torch is installed and sees a GPU, else cpu; "cpu", "cuda", "cuda:N", a Device
    or a torch.device otherwise. "cpu" never imports torch; "cuda" needs it (ImportError with the hint)."""
    if device is None or (isinstance(device, str) and device == "auto"):
        try:
            import torch
        except ImportError:
            return Device("cpu")
        return Device("cuda") if torch.cuda.is_available() else Device("cpu")
    if not isinstance(device, str):  # a Device or a torch.device
        device = str(device)
    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda") or (index and not index.isdigit()):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if kind == "cuda":
        import_torch(f"device {device!r}")
    return Device(kind, int(index) if index else None)


def float_dtype(dtype) -> np.dtype:
    """numpy float dtype of a torch dtype (torch.float64), a numpy dtype or its name ("float32")."""
    if type(dtype).__module__.split(".")[0] == "torch":
        dtype = str(dtype).removeprefix("torch.")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind != "f":
        raise ValueError(f"dtype must be a float type (float32, float64), got {dtype!r}")
    return dt


__all__ = ["Device", "TORCH_HINT", "import_torch", "resolve_device", "float_dtype"]
