"""The experiments dock (C2–C6): five experiments that run real K3 formulas on toy numbers, plus the attention toy.

  dock.py        ExperimentsDock, the tabbed dock
  tokenizer.py   tokenizer → embedding
  kda.py         KDA in 1-D ("see it in 3D" selects a KDA layer's state block through AppState)
  attnres.py     Block AttnRes
  moe.py         Stable LatentMoE
  sampling.py    LM head & sampling
  attention.py   the attention toy
  common.py      the panel frame ("real K3 formula, toy numbers", what is constructed) and the bar chart
  model.py       Qt-free rules (which layer is a KDA layer)

This package module imports no Qt, so `app.docks.experiments.model` works without PySide6; the dock class is
loaded when first asked for.
"""
from __future__ import annotations

TABS = ("tokenizer", "kda", "attnres", "moe", "sampling", "attention")


def __getattr__(name: str):
    if name == "ExperimentsDock":
        from app.docks.experiments.dock import ExperimentsDock
        return ExperimentsDock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
