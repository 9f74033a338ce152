"""The "Silicon & memory" dock (features M1–M6): where the numbers of one inference physically live.

Tabs: DRAM cell (1T1C, leaks, refresh), SRAM cell (6T loop), BF16 bits, memory hierarchy of a named GPU with
"what is stored where", the memory calculator (seed + K3 mode), and the CPU/GPU ↔ factory-automation table.
Each tab is its own module (app/docks/silicon_*.py); the models behind them are Qt-free (compute.cells,
compute.bits, compute.memory)."""
from __future__ import annotations

from PySide6.QtWidgets import QDockWidget, QScrollArea, QTabWidget

from app.docks.silicon_analogy import AnalogyTab
from app.docks.silicon_bf16 import Bf16Tab
from app.docks.silicon_calc import CalcTab
from app.docks.silicon_dram import DramTab
from app.docks.silicon_hierarchy import HierarchyTab
from app.docks.silicon_sram import SramTab
from app.i18n import tr

TAB_KEYS = ("dram", "sram", "bf16", "hier", "calc", "analogy")


class SiliconDock(QDockWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.setObjectName("SiliconDock")
        self.tabs = QTabWidget()
        self.tabs.setObjectName("silicon_tabs")
        self.dram, self.sram, self.bf16 = DramTab(), SramTab(), Bf16Tab()
        self.hier, self.calc, self.analogy = HierarchyTab(), CalcTab(), AnalogyTab()
        self.pages = dict(zip(TAB_KEYS, (self.dram, self.sram, self.bf16, self.hier, self.calc, self.analogy)))
        for key, page in self.pages.items():
            scroll = QScrollArea()
            scroll.setObjectName(f"silicon_scroll_{key}")
            scroll.setWidgetResizable(True)
            scroll.setWidget(page)
            self.tabs.addTab(scroll, "")
        self.setWidget(self.tabs)
        state.language_changed.connect(self._language_changed)  # a bound slot: disconnected when the dock dies
        self.retranslate()

    NARROW_PX = 900

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        narrow = self.width() < self.NARROW_PX
        for page in self.pages.values():
            if hasattr(page, "set_narrow"):
                page.set_narrow(narrow)

    def _language_changed(self, _lang: str) -> None:
        self.retranslate()

    def show_tab(self, key: str) -> None:
        self.tabs.setCurrentIndex(TAB_KEYS.index(key))

    def retranslate(self) -> None:
        self.setWindowTitle(tr("silicon.dock.title"))
        for i, key in enumerate(TAB_KEYS):
            self.tabs.setTabText(i, tr(f"silicon.tab.{key}"))
            self.tabs.setTabToolTip(i, tr(f"silicon.tab.{key}_tip"))
        for page in self.pages.values():
            page.retranslate()
