"""The docks the main window creates, in order, with their default area.

Each entry names the dock's module and class (imported only when the dock is built), its default area, its
tab group (docks of one group share a tabbed area, the first listed stays in front; different groups in one
area are stacked, e.g. the controls above the tabbed inspector / experts / ... panels) and whether it is
built before the first frame ("eager") or right after it (the panels that start hidden behind a tab, so the
window is on screen sooner). Every dock class follows the contract in app/state.py: `Dock(state, parent)`, an
objectName, `retranslate()`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from PySide6.QtCore import Qt

LEFT, RIGHT, BOTTOM = Qt.LeftDockWidgetArea, Qt.RightDockWidgetArea, Qt.BottomDockWidgetArea


@dataclass(frozen=True)
class DockEntry:
    module: str
    cls: str
    area: Qt.DockWidgetArea
    group: str
    eager: bool = True

    def load(self) -> type:
        return getattr(importlib.import_module(self.module), self.cls)


DOCKS: list[DockEntry] = [
    DockEntry("app.docks.trace_player", "TracePlayerDock", LEFT, "left"),
    DockEntry("app.docks.controls", "ControlsDock", RIGHT, "right_top"),
    DockEntry("app.docks.inspector", "InspectorDock", RIGHT, "right_tabs"),
    DockEntry("app.docks.experts", "ExpertGridDock", RIGHT, "right_tabs", eager=False),
    DockEntry("app.docks.silicon", "SiliconDock", RIGHT, "right_tabs", eager=False),
    DockEntry("app.docks.routing", "RoutingDock", RIGHT, "right_tabs", eager=False),
    DockEntry("app.docks.experiments", "ExperimentsDock", RIGHT, "right_tabs", eager=False),
    DockEntry("app.docks.learn", "LearnDock", RIGHT, "right_tabs", eager=False),
    DockEntry("app.docks.explain", "ExplainDock", RIGHT, "right_tabs", eager=False),
    DockEntry("app.docks.compare", "CompareDock", RIGHT, "right_tabs", eager=False),
]
