"""LearnDock: the tabs of the Learn dock (see the package docstring) and where the quiz's links lead.

Quiz links: "exp:<tab>" opens the Experiments dock on that tab, "learn:<tab>" switches this dock's tab,
"block:L<n>/<kind>" selects that layer and block in the scene (AppState.select_layer / select_block).
"""
from __future__ import annotations

from app.docks.learn import TABS
from app.docks.learn.harness import HarnessPanel
from app.docks.learn.quality import QualityPanel
from app.docks.learn.quiz import QuizPanel
from app.docks.learn.serving import ServingPanel
from app.docks.tabbed import TabbedDock
from app.i18n import tr
from app.slot_guard import guarded


class LearnDock(TabbedDock):
    title_key = "{key}.dock_title"

    def __init__(self, state, parent=None):
        panels = (ServingPanel(), HarnessPanel(), QualityPanel(), QuizPanel())
        super().__init__(state, "learn", dict(zip(TABS, panels)), parent, document_mode=True)
        self.pages["quiz"].link_requested.connect(self._quiz_link)

    def follow_link(self, link: str) -> bool:
        """Go to what a quiz answer links to; False when the target panel is not in this window."""
        kind, _, target = link.partition(":")
        if kind == "learn":
            self.show_tab(target)
        elif kind == "exp":
            return self.state.show_dock("ExperimentsDock", target)  # the window shows it (AppState)
        elif kind == "block":
            head, _, _kind = target.partition("/")
            if head.startswith("L") and head[1:].isdigit():
                self.state.select_layer(int(head[1:]) - 1)
            self.state.select_block(target)
        else:
            raise ValueError(f"unknown link {link!r}")
        return True

    @guarded
    def _quiz_link(self, link: str) -> None:
        if not self.follow_link(link):
            self.pages["quiz"].feedback.setText(tr("learn.quiz.no_panel"))
