"""ExpertGridDock: K3's 896 routed experts (features E1–E4).

Tabs:
  grid        the current token's router scores in the current layer, the 16 lit with their weights, the
              2 shared apart, hover details, click = select the expert in the app; bias slider (E2)
  per layer   tokens × 92 MoE layers heatmap and usage counts from the trace (E4)
  balancing   the Quantile Balancing simulator (E3)
  latent      Stable LatentMoE with the real sizes and the all-to-all bytes
"""
from __future__ import annotations

from PySide6.QtWidgets import QDockWidget, QTabWidget

from app.docks.experts.grid import GridTab
from app.docks.experts.latent import LatentTab
from app.docks.experts.layers import LayersTab
from app.docks.experts.qb import QBTab
from app.widgets.controls import scrolled
from app.i18n import tr


class ExpertGridDock(QDockWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("ExpertGridDock")
        self.state = state
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("experts.tabs")
        self.grid_tab = GridTab(state, self)
        self.layers_tab = LayersTab(state, self)
        self.qb_tab = QBTab(state, self)
        self.latent_tab = LatentTab(state, self)
        for w in self.pages():
            self.tabs.addTab(scrolled(w), "")
        self.setWidget(self.tabs)
        state.language_changed.connect(self.retranslate)
        self.retranslate()

    def pages(self):
        return (self.grid_tab, self.layers_tab, self.qb_tab, self.latent_tab)

    def show_tab(self, page) -> None:
        """Bring one of `pages()` to the front."""
        self.tabs.setCurrentIndex(self.pages().index(page))

    @property
    def grid(self):
        """The ExpertGridWidget of the grid tab."""
        return self.grid_tab.grid

    def retranslate(self, *_):
        self.setWindowTitle(tr("experts.dock.title"))
        for i, key in enumerate(("experts.tab.grid", "experts.tab.layers", "experts.tab.qb", "experts.tab.latent")):
            self.tabs.setTabText(i, tr(key))
        for w in (self.grid_tab, self.layers_tab, self.qb_tab, self.latent_tab):
            w.retranslate()
