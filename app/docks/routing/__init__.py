"""The routing dock (features R1–R4): what "routing" means at four levels and how a request travels.

  dock.py       RoutingDock, the tabbed dock
  meanings.py   four meanings of "routing" (R1)
  encap.py      encapsulation L7 → L1 (R2)
  server.py     inside a server / across GPUs (R3)
  toy.py        the logical top-2 router toy next to K3's sigmoid + bias rule (R4)
  anim.py       the animated-diagram base (animations run only while their diagram is visible)
  model.py      the Qt-free teaching routers and their constructed numbers

This package module imports no Qt, so `app.docks.routing.model` works without PySide6; the dock class is
loaded when first asked for.
"""
from __future__ import annotations


def __getattr__(name: str):
    if name == "RoutingDock":
        from app.docks.routing.dock import RoutingDock
        return RoutingDock
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
