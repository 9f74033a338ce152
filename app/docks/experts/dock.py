"""ExpertGridDock: the tabs of the experts dock (see the package docstring)."""
from __future__ import annotations

from app.docks.experts.grid import GridTab
from app.docks.experts.latent import LatentTab
from app.docks.experts.model import model_args
from app.docks.experts.layers import LayersTab
from app.docks.experts.qb import QBTab
from app.docks.experts.usage import UsageTab
from app.docks.tabbed import TabbedDock
from app.i18n import tr
from app.slot_guard import guarded


class ExpertGridDock(TabbedDock):
    def __init__(self, state, parent=None):
        self.grid_tab = GridTab(state)
        self.layers_tab = LayersTab(state)
        self.qb_tab = QBTab(state)
        self.latent_tab = LatentTab(state)
        self.usage_tab = UsageTab(state)
        pages = {"grid": self.grid_tab, "layers": self.layers_tab, "qb": self.qb_tab, "latent": self.latent_tab,
                 "usage": self.usage_tab}
        super().__init__(state, "experts", pages, parent)
        state.config_changed.connect(guarded(lambda _c: self.retranslate_title()))

    def retranslate(self) -> None:
        super().retranslate()
        self.retranslate_title()

    def retranslate_title(self) -> None:
        """'Experts · 896 routed': the shown model's count."""
        a = model_args(self.state.config)
        self.setWindowTitle(tr("experts.dock.title" if a["has_moe"] else "checks.experts.title_no_moe", **a))

    @property
    def grid(self):
        """The ExpertGridWidget of the grid tab."""
        return self.grid_tab.grid
