"""The Explain dock ("Why this word"): for a chosen position of the current trace, the logit lens
as a plot (probability and 1/rank of the predicted word after every layer), each token's causal effect (knock it
out, re-run) with a knock-out experiment and its before/after top-5, and the blocks' direct contributions.

  dock.py    ExplainDock; the computation runs on a pool thread (never the UI thread) through the one
             explanation service, app/engine/explain_service.py (Qt-free: the request, the result, the engine cache)
  model.py   the service's names as the dock's parts import them

This package module imports no Qt, so `app.docks.explain.model` works without PySide6.
"""
from __future__ import annotations


def __getattr__(name: str):
    if name == "ExplainDock":
        from app.docks.explain.dock import ExplainDock

        return ExplainDock
    raise AttributeError(name)
