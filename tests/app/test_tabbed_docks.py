"""The five tabbed docks (app/docks/tabbed.py) in the real main window: one `show_tab(key)`, and one
retranslation per page for each language switch (the main window used to retranslate them a second time)."""
from __future__ import annotations

import pytest

from app import i18n

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

TABBED = ("SiliconDock", "ExpertGridDock", "RoutingDock", "ExperimentsDock", "LearnDock")


@pytest.fixture
def win(make_window, qtbot):
    w = make_window(wait_trace=False, start_engine=False)
    qtbot.waitUntil(lambda: all(name in w.docks for name in TABBED), timeout=20000)  # the late docks exist
    return w


def test_one_retranslation_per_page_per_language_switch(win, monkeypatch):
    from app.docks.tabbed import TabbedDock

    calls: dict[str, int] = {}
    for name in TABBED:
        dock = win.docks[name]
        assert isinstance(dock, TabbedDock)
        for tab, page in dock.pages.items():
            key = f"{name}:{tab}"
            calls[key] = 0

            def counted(_orig=page.retranslate, _key=key):
                calls[_key] += 1
                return _orig()
            monkeypatch.setattr(page, "retranslate", counted)
    for lang, title in (("ko", "실리콘"), ("en", "Silicon")):
        for key in calls:
            calls[key] = 0
        i18n.set_language(lang)
        assert calls and all(n == 1 for n in calls.values()), {k: n for k, n in calls.items() if n != 1}
        assert title in win.docks["SiliconDock"].windowTitle()
        for name in TABBED:  # the tab texts follow too
            dock = win.docks[name]
            assert dock.tabs.tabText(0) == i18n.tr(dock.tab_key.format(key=dock.key, tab=next(iter(dock.pages))))


def test_show_tab_takes_a_key_and_brings_the_dock_forward(win, qtbot):
    for name in TABBED:
        dock = win.docks[name]
        for tab in reversed(list(dock.pages)):
            dock.show_tab(tab)
            assert dock.current_tab() == tab
            assert dock.tabs.currentWidget().isAncestorOf(dock.pages[tab]) or dock.tabs.currentWidget() is dock.pages[tab]
        qtbot.waitUntil(lambda d=dock: not d.visibleRegion().isEmpty(), timeout=3000)  # raised above its group
    with pytest.raises(KeyError, match="no tab 'nope'"):
        win.docks["LearnDock"].show_tab("nope")
