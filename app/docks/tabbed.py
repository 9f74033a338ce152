"""TabbedDock: a dock whose body is one tab per page (the silicon, experts, routing, experiments and learn docks).

It owns the tabs, brings one to the front (`show_tab(key)`) and retranslates itself once per language change:
window title, tab texts (and tool tips where the catalogue has them), then every page's `retranslate()`.
The main window leaves docks with `retranslates_itself` alone when the language changes.
"""
from __future__ import annotations

from PySide6.QtWidgets import QAbstractScrollArea, QDockWidget, QTabWidget, QWidget

from app.i18n import tr
from app.widgets.controls import scrolled
from app.slot_guard import guarded


class TabbedDock(QDockWidget):
    """`TabbedDock(state, key, pages)`: `pages` maps tab keys to page widgets, in tab order. Texts are the
    catalogue's `title_key` / `tab_key` (/ `tip_key`) formatted with the dock's `key` and the tab key. Pages
    that do not scroll by themselves are put in a frameless vertical scroll area (`wrap`)."""

    title_key = "{key}.dock.title"
    tab_key = "{key}.tab.{tab}"
    tip_key: str | None = None
    retranslates_itself = True

    def __init__(self, state, key: str, pages: dict[str, QWidget], parent=None, document_mode: bool = False):
        super().__init__(parent)
        self.state = state
        self.key = key
        self.setObjectName(type(self).__name__)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName(f"{key}.tabs")
        self.tabs.setDocumentMode(document_mode)
        self.pages = dict(pages)
        for tab, page in self.pages.items():
            self.tabs.addTab(page if isinstance(page, QAbstractScrollArea) else self.wrap(tab, page), "")
        self.setWidget(self.tabs)
        state.language_changed.connect(self._language_changed)  # a bound slot: disconnected when the dock dies
        self.retranslate()

    def wrap(self, tab: str, page: QWidget) -> QAbstractScrollArea:
        return scrolled(page)

    @guarded
    def _language_changed(self, _lang: str) -> None:
        self.retranslate()

    def show_tab(self, key: str) -> None:
        """Bring the dock forward with the tab `key` (one of `pages`) open."""
        if key not in self.pages:
            raise KeyError(f"{type(self).__name__} has no tab {key!r}; tabs: {', '.join(self.pages)}")
        self.tabs.setCurrentIndex(list(self.pages).index(key))
        self.show()
        self.raise_()

    def current_tab(self) -> str:
        return list(self.pages)[self.tabs.currentIndex()]

    def retranslate(self) -> None:
        self.setWindowTitle(tr(self.title_key.format(key=self.key)))
        for i, tab in enumerate(self.pages):
            self.tabs.setTabText(i, tr(self.tab_key.format(key=self.key, tab=tab)))
            if self.tip_key:
                self.tabs.setTabToolTip(i, tr(self.tip_key.format(key=self.key, tab=tab)))
        for page in self.pages.values():
            page.retranslate()
