"""The experts dock (features E1–E4): the shown model's routed experts (K3: 896); ranges and texts follow it.

  dock.py     ExpertGridDock, the tabbed dock
  grid.py     the current token's router scores in the current layer, bias slider (E1, E2)
  layers.py   tokens × MoE layers heatmap and usage counts (E4)
  qb.py       the Quantile Balancing simulator (E3)
  latent.py   Stable LatentMoE with the real sizes and the all-to-all bytes
  usage.py    which experts each kind of word uses over held-out documents (usage_model.py: Qt-free)
  heatmap.py  the fixed heatmap plot of the per-layer and usage tabs
  model.py    Qt-free read-outs of the engine's Trace (routing per token / layer, usage, cutoffs)

This package module imports no Qt, so `app.docks.experts.model` works without PySide6; the dock class is
loaded when first asked for (`from app.docks.experts import ExpertGridDock`).
"""
from __future__ import annotations


def __getattr__(name: str):
    if name == "ExpertGridDock":
        from app.docks.experts.dock import ExpertGridDock
        return ExpertGridDock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
