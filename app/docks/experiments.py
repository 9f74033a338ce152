"""Experiments dock (C2–C6): five experiments that run real K3 formulas on toy numbers, plus the attention toy.

Tabs: tokenizer → embedding, KDA 1-D, Block AttnRes, Stable LatentMoE, LM head & sampling, attention toy.
Every panel says "real K3 formula, toy numbers" and what is constructed. The KDA panel's "see it in 3D"
selects a KDA layer's state block in the scene through AppState.
"""
from __future__ import annotations

from PySide6.QtWidgets import QDockWidget, QTabWidget

from app.docks.experiments_attention import AttentionPanel
from app.docks.experiments_attnres import AttnResPanel
from app.docks.experiments_kda import KdaPanel
from app.docks.experiments_moe import MoePanel
from app.docks.experiments_sampling import SamplingPanel
from app.docks.experiments_tokenizer import TokenizerPanel
from app.i18n import tr

TABS = ("tokenizer", "kda", "attnres", "moe", "sampling", "attention")


def is_mla_layer(layer0: int, n_layers: int = 93) -> bool:
    """K3 rule (k3-math §0): MLA at 0-based 3, 7, …, 91 and the last layer; KDA elsewhere."""
    return layer0 % 4 == 3 or layer0 == n_layers - 1


class ExperimentsDock(QDockWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("ExperimentsDock")
        self.state = state
        self.tabs = QTabWidget()
        self.tabs.setObjectName("experiments_tabs")
        self.tabs.setDocumentMode(True)
        self.panels = {
            "tokenizer": TokenizerPanel(state), "kda": KdaPanel(), "attnres": AttnResPanel(),
            "moe": MoePanel(), "sampling": SamplingPanel(), "attention": AttentionPanel(),
        }
        for key in TABS:
            self.tabs.addTab(self.panels[key], "")
        self.setWidget(self.tabs)
        self.panels["kda"].see_in_3d.connect(self.show_kda_state_in_3d)
        self.retranslate()

    def show_experiment(self, key: str) -> None:
        """Bring the dock forward with the given experiment tab open."""
        self.tabs.setCurrentIndex(TABS.index(key))
        self.show()
        self.raise_()

    def kda_layer(self) -> int:
        """The current layer when it is a KDA layer, otherwise the first KDA layer (0-based)."""
        trace = self.state.trace
        if trace is not None and trace.passes:
            layers = trace.passes[0].layers
            if 0 <= self.state.layer < len(layers) and layers[self.state.layer].mixer == "kda":
                return self.state.layer
            return next(lt.index for lt in layers if lt.mixer == "kda")
        return self.state.layer if not is_mla_layer(self.state.layer) else 0

    def show_kda_state_in_3d(self) -> None:
        layer = self.kda_layer()
        self.state.select_layer(layer)
        self.state.select_block(f"L{layer + 1}/kda.state")

    def retranslate(self) -> None:
        self.setWindowTitle(tr("learn.exp.dock_title"))
        for i, key in enumerate(TABS):
            self.tabs.setTabText(i, tr(f"learn.exp.tab.{key}"))
            self.panels[key].retranslate()
