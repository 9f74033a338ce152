"""The docks the main window creates, in order, with their default area.

Each entry: (dock class, default area, tab group). Docks of the same tab group share one tabbed area; the
first one listed stays in front. Different groups in one area are stacked (e.g. the controls above the
tabbed inspector / experts / silicon / ... panels on the right). Every dock class follows the contract in
app/state.py: `Dock(state, parent)`, an objectName, `retranslate()`.
"""
from __future__ import annotations

from PySide6.QtCore import Qt

from app.docks.controls import ControlsDock
from app.docks.experiments import ExperimentsDock
from app.docks.experts import ExpertGridDock
from app.docks.inspector import InspectorDock
from app.docks.learn import LearnDock
from app.docks.routing import RoutingDock
from app.docks.silicon import SiliconDock
from app.docks.trace_player import TracePlayerDock

LEFT, RIGHT, BOTTOM = Qt.LeftDockWidgetArea, Qt.RightDockWidgetArea, Qt.BottomDockWidgetArea

DOCKS: list[tuple[type, Qt.DockWidgetArea, str]] = [
    (TracePlayerDock, LEFT, "left"),
    (ControlsDock, RIGHT, "right_top"),
    (InspectorDock, RIGHT, "right_tabs"),
    (ExpertGridDock, RIGHT, "right_tabs"),
    (SiliconDock, RIGHT, "right_tabs"),
    (RoutingDock, RIGHT, "right_tabs"),
    (ExperimentsDock, RIGHT, "right_tabs"),
    (LearnDock, RIGHT, "right_tabs"),
]
