"""RoutingDock: the tabs of the routing dock (see the package docstring)."""
from __future__ import annotations

from app.docks.routing.encap import EncapTab
from app.docks.routing.meanings import MeaningsTab
from app.docks.routing.server import ServerTab
from app.docks.routing.toy import RouterToyTab
from app.docks.tabbed import TabbedDock
from app.widgets.controls import scrolled


class RoutingDock(TabbedDock):
    def __init__(self, state, parent=None):
        self.meanings_tab = MeaningsTab(state)
        self.encap_tab = EncapTab(state)
        self.server_tab = ServerTab(state)
        self.toy_tab = RouterToyTab(state)
        pages = {"meanings": self.meanings_tab, "encap": self.encap_tab, "server": self.server_tab,
                 "toy": self.toy_tab}
        super().__init__(state, "routing", pages, parent)

    def wrap(self, tab, page):
        return page if page is self.meanings_tab else scrolled(page)  # the meanings tab scrolls its cards itself
