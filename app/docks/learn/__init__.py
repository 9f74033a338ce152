"""The Learn dock (X4, X5): Serving, Harness / XTML, the quality-vs-throughput table, and the quiz.

  dock.py       LearnDock, the tabbed dock, and where the quiz's links lead
  serving.py    multi-GPU traffic, serving notes and live arithmetic
  harness.py    reasoning effort, tool use, verification → the agent's path, and the XTML example
  quality.py    the quality-vs-throughput table
  quiz.py       the quiz panel
  model.py      the Qt-free quiz: questions and the session's score

This package module imports no Qt, so `app.docks.learn.model` works without PySide6; the dock class is loaded
when first asked for.
"""
from __future__ import annotations

TABS = ("serving", "harness", "quality", "quiz")
QUALITY_ROWS = 8


def __getattr__(name: str):
    if name == "LearnDock":
        from app.docks.learn.dock import LearnDock
        return LearnDock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
