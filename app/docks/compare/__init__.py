"""The Compare dock (feature B1): two bundled models side by side (stack, experts, parameters, cache memory per
token and at a chosen context, the crossover where a hybrid's constant KDA state pays off) and an image export.
The numbers are compute.teaching.compare's; this package module imports no Qt."""
from __future__ import annotations


def __getattr__(name: str):
    if name == "CompareDock":
        from app.docks.compare.dock import CompareDock

        return CompareDock
    raise AttributeError(name)
