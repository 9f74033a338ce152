"""The "Silicon & memory" dock (features M1–M6): where the numbers of one inference physically live.

  dock.py        SiliconDock, the tabbed dock
  dram.py        DRAM cell (1T1C, leaks, refresh)
  sram.py        SRAM cell (6T loop)
  bf16.py        BF16 bits
  hierarchy.py   the memory hierarchy of a named GPU with "what is stored where"
  calc.py        the memory calculator (seed + K3 mode)
  analogy.py     the CPU/GPU ↔ factory-automation table
  canvas.py      the drawing base of the circuit tabs

The models behind the tabs are Qt-free and live in compute (compute.teaching.cells, compute.teaching.bits, compute.teaching.memory).
This package module imports no Qt; the dock class is loaded when first asked for.
"""
from __future__ import annotations

TAB_KEYS = ("dram", "sram", "bf16", "hier", "calc", "analogy")


def __getattr__(name: str):
    if name == "SiliconDock":
        from app.docks.silicon.dock import SiliconDock
        return SiliconDock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
