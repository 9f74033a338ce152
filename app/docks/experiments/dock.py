"""ExperimentsDock: the tabs of the experiments dock (see the package docstring)."""
from __future__ import annotations

from app.docks.experiments import TABS
from app.docks.experiments.attention import AttentionPanel
from app.docks.experiments.attnres import AttnResPanel
from app.docks.experiments.kda import KdaPanel
from app.docks.experiments.model import kda_layer
from app.docks.experiments.moe import MoePanel
from app.docks.experiments.sampling import SamplingPanel
from app.docks.experiments.tokenizer import TokenizerPanel
from app.docks.tabbed import TabbedDock
from app.slot_guard import guarded


class ExperimentsDock(TabbedDock):
    title_key = "{key}.dock_title"

    def __init__(self, state, parent=None):
        panels = (TokenizerPanel(state), KdaPanel(), AttnResPanel(), MoePanel(), SamplingPanel(), AttentionPanel())
        super().__init__(state, "learn.exp", dict(zip(TABS, panels)), parent, document_mode=True)
        self.pages["kda"].see_in_3d.connect(self.show_kda_state_in_3d)
        state.config_changed.connect(self._model_changed)
        self._model_changed(state.config)

    @guarded
    def _model_changed(self, config) -> None:
        """Pages other than the tokenizer's name K3's real sizes: with another model loaded they say so."""
        for name, page in self.pages.items():
            if name != "tokenizer":
                page.show_model(config)

    def kda_layer(self) -> int:
        """The current layer when it is a KDA layer, otherwise the first KDA layer (0-based)."""
        return kda_layer(self.state.trace, self.state.layer)

    @guarded
    def show_kda_state_in_3d(self) -> None:
        layer = self.kda_layer()
        self.state.select_layer(layer)
        self.state.select_block(f"L{layer + 1}/kda.state")
