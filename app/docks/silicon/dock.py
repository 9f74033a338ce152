"""SiliconDock: the "Silicon & memory" dock's tabs, each its own module of this package."""
from __future__ import annotations

from PySide6.QtWidgets import QScrollArea

from app.docks.silicon.analogy import AnalogyTab
from app.docks.silicon.bf16 import Bf16Tab
from app.docks.silicon.calc import CalcTab
from app.docks.silicon.dram import DramTab
from app.docks.silicon.hierarchy import HierarchyTab
from app.docks.silicon.sram import SramTab
from app.docks.tabbed import TabbedDock

from app.docks.silicon import TAB_KEYS
from app.slot_guard import guarded


class SiliconDock(TabbedDock):
    tip_key = "{key}.tab.{tab}_tip"
    NARROW_PX = 900  # below this width the tabs stack their side-by-side parts

    def __init__(self, state, parent=None):
        self.dram, self.sram, self.bf16 = DramTab(), SramTab(), Bf16Tab()
        self.hier, self.calc, self.analogy = HierarchyTab(), CalcTab(), AnalogyTab()
        pages = (self.dram, self.sram, self.bf16, self.hier, self.calc, self.analogy)
        super().__init__(state, "silicon", dict(zip(TAB_KEYS, pages)), parent)
        if state.config is not None:
            self.calc.set_config(state.config)
        state.config_changed.connect(self.calc.set_config)  # the calculator's model mode follows the model
        if state.config is not None:
            self.hier.set_config(state.config)
        state.config_changed.connect(self.hier.set_config)  # and so do the hierarchy's explanations
        if state.config is not None:
            self.bf16.set_config(state.config)
        state.config_changed.connect(self.bf16.set_config)  # and the BF16 tab's row / table sizes

    def wrap(self, tab, page) -> QScrollArea:
        scroll = QScrollArea()
        scroll.setObjectName(f"silicon_scroll_{tab}")
        scroll.setWidgetResizable(True)
        scroll.setWidget(page)
        return scroll

    @guarded
    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        narrow = self.width() < self.NARROW_PX
        for page in self.pages.values():
            if hasattr(page, "set_narrow"):
                page.set_narrow(narrow)
