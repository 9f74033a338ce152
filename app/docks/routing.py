"""RoutingDock: what "routing" means at four levels and how a request travels (features R1–R4).

Tabs: four meanings (R1) · encapsulation L7→L1 (R2) · inside a server / across GPUs (R3) · logical top-2
router toy next to K3's sigmoid + bias rule (R4). Animations run only while their diagram is visible.
"""
from __future__ import annotations

from PySide6.QtWidgets import QDockWidget, QTabWidget

from app.widgets.controls import scrolled
from app.docks.routing_encap import EncapTab
from app.docks.routing_meanings import MeaningsTab
from app.docks.routing_server import ServerTab
from app.docks.routing_toy import RouterToyTab
from app.i18n import tr

TAB_KEYS = ("routing.tab.meanings", "routing.tab.encap", "routing.tab.server", "routing.tab.toy")


class RoutingDock(QDockWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("RoutingDock")
        self.state = state
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("routing.tabs")
        self.meanings_tab = MeaningsTab(state, self)
        self.encap_tab = EncapTab(state, self)
        self.server_tab = ServerTab(state, self)
        self.toy_tab = RouterToyTab(state, self)
        for w in self.pages():  # the meanings tab scrolls its cards itself
            self.tabs.addTab(w if w is self.meanings_tab else scrolled(w), "")
        self.setWidget(self.tabs)
        state.language_changed.connect(self.retranslate)
        self.retranslate()

    def pages(self):
        return (self.meanings_tab, self.encap_tab, self.server_tab, self.toy_tab)

    def show_tab(self, page) -> None:
        """Bring one of `pages()` to the front."""
        self.tabs.setCurrentIndex(self.pages().index(page))

    def retranslate(self, *_):
        self.setWindowTitle(tr("routing.dock.title"))
        for i, key in enumerate(TAB_KEYS):
            self.tabs.setTabText(i, tr(key))
        for w in self.pages():
            w.retranslate()
