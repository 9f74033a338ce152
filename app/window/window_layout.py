"""The main window's layout budget (a part the window owns: `MainWindow.dock_layout`): its default size on a screen,
the default dock layout for its current size (the 3D view keeps SCENE_SHARE of the window area: two side columns
where both fit beside such a scene, else one tabbed column), Window -> Reset layout, and the layout applied once
the window is on screen (as saved, or the default). The part reads the window's public names only (.docks,
.dock_builder, .settings, .restored, .answer_strip and QMainWindow's own methods).
"""
from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QScrollArea, QStyle, QTabBar

from app.docks.registry import DOCKS

SCENE_SHARE = 0.56  # the default layout leaves the 3D view at least this share of the window area
MIN_COLUMN = 300  # the narrowest side column of the default layout (one column below that)
MIN_PANELS = 440  # the right column's panels (diagrams, calculators) need this much not to scroll sideways


def window_size_for(avail_w: int, avail_h: int) -> tuple[int, int]:
    """92% of a screen's available area (an unscaled 3840 x 2160 screen too: it opened at 1880 x 1040, a quarter
    of it), at most 3200 x 1800 logical pixels."""
    return min(3200, int(avail_w * 0.92)), min(1800, int(avail_h * 0.92))


def default_window_size() -> tuple[int, int]:
    """window_size_for the primary screen."""
    screen = QGuiApplication.primaryScreen()
    if screen is None:
        return 1600, 960
    avail = screen.availableGeometry()
    return window_size_for(avail.width(), avail.height())


def fit_to_screen(window) -> None:
    """Shrink and move the window into its screen's available area (a geometry saved when something had
    widened the window past the screen must not come back)."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    avail = screen.availableGeometry()
    geo = window.geometry()
    w, h = min(geo.width(), avail.width()), min(geo.height(), avail.height())
    if (w, h) != (geo.width(), geo.height()):
        window.resize(w, h)
        x = min(max(geo.x(), avail.left()), avail.right() + 1 - w)
        y = min(max(geo.y(), avail.top()), avail.bottom() + 1 - h)
        window.move(x, y)


def _height_for(widget, width: int) -> int:
    """The height a widget wants at `width` (its height-for-width where it has one)."""
    if widget.hasHeightForWidth():
        return widget.heightForWidth(width)
    layout = widget.layout()
    if layout is not None and layout.hasHeightForWidth():
        return layout.totalHeightForWidth(width)
    return widget.sizeHint().height()


def scroll_if_wide(dock, max_w: int = 480, max_h: int = 440) -> None:
    """Wrap a dock body that refuses to shrink in a scroll area, so one wide panel cannot squeeze the scene."""
    body = dock.widget()
    if body is None:
        return
    hint = body.minimumSizeHint()
    if hint.width() <= max_w and hint.height() <= max_h and not getattr(dock, "scroll_body", False):
        return
    area = QScrollArea(dock)
    area.setObjectName(f"{dock.objectName()}_scroll")
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.NoFrame)
    area.setWidget(body)
    dock.setWidget(area)


class DockLayout:
    """MainWindow's dock layout: where each registry dock goes (the head dock of each tab group in `group_heads`),
    the default sizes, Reset layout and the layout applied once the window is on screen."""

    def __init__(self, window):
        self.window = window
        self.group_heads: dict = {}  # registry tab group -> the dock placed first in it (the others tab behind it)

    def place(self, entry, dock) -> None:
        """Put a dock in its default area / tab group."""
        w = self.window
        dock.setFloating(False)
        w.addDockWidget(entry.area, dock)
        head = self.group_heads.get(entry.group)
        if head is None or head is dock:
            self.group_heads[entry.group] = dock
        else:
            w.tabifyDockWidget(head, dock)
        dock.show()

    def raise_group_heads(self) -> None:
        """Each tab group's head dock in front."""
        for dock in self.group_heads.values():
            dock.raise_()

    def default_sizes(self) -> None:
        """The default layout for the window's current size: the scene keeps SCENE_SHARE of the window area.
        Two side columns (trace player left; controls over the tabbed panels right) when both fit beside such
        a scene, else one column on the left with every panel as a tab, the trace player in front (up to about
        2200 px wide: 1280 x 720, 1366 x 768, 1920 x 1080); in two columns the controls only as tall as they need,
        the rest to the panels below them."""
        budget = self._side_budget()
        left_min, right_min = self._column_min_widths()
        if budget < left_min + right_min:
            self._one_column(max(left_min, right_min, budget))
        else:
            self._two_columns(budget, left_min, right_min)
        self.unelide_tabs()

    def _side_budget(self) -> int:
        """Pixels the side columns (and their separators) may take beside a scene of SCENE_SHARE."""
        w = self.window
        strip = getattr(w, "answer_strip", None)  # under the scene, in the central widget
        scene_h = max(1, w.centralWidget().height() - (strip.sizeHint().height() if strip is not None else 0))
        gap = w.style().pixelMetric(QStyle.PM_DockWidgetSeparatorExtent, None, w)
        need_w = math.ceil(SCENE_SHARE * w.width() * w.height() / scene_h)
        return w.width() - need_w - 2 * gap

    def _column_min_widths(self) -> tuple[int, int]:
        """The narrowest each column may be: its docks' own minimum, also of a body that scrolls (a scroll
        area would shrink to nothing), and never under MIN_COLUMN."""
        entries = self.window.dock_builder.entries
        left, right = MIN_COLUMN, MIN_PANELS
        for name, dock in self.window.docks.items():
            body = dock.widget()
            w = dock.minimumSizeHint().width()
            if isinstance(body, QScrollArea) and body.widget() is not None:
                w = max(w, min(480, body.widget().minimumSizeHint().width() + 16))
            if entries[name].area == Qt.LeftDockWidgetArea:
                left = max(left, w)
            else:
                right = max(right, w)
        return left, right

    def _two_columns(self, budget: int, left_min: int, right_min: int) -> None:
        w = self.window
        heads = self.group_heads
        left = [d for d in heads.values() if w.dockWidgetArea(d) == Qt.LeftDockWidgetArea]
        right = [d for d in heads.values() if w.dockWidgetArea(d) == Qt.RightDockWidgetArea]
        lw = min(440, max(left_min, int(budget * 0.45)))
        rw = min(520, max(right_min, budget - lw))
        if left:
            w.resizeDocks(left[:1], [lw], Qt.Horizontal)
        if right:
            w.resizeDocks(right[:1], [rw], Qt.Horizontal)
        controls = heads.get("right_top")
        if controls is not None and len(right) > 1:
            rest = [d for d in right if d is not controls][:1]
            body = controls.widget()
            inner = body.widget() if isinstance(body, QScrollArea) else body
            h = controls.sizeHint().height() - body.sizeHint().height() + _height_for(inner, rw) + 2
            h = min(h, int(w.centralWidget().height() * 0.45))
            w.resizeDocks([controls] + rest, [h, max(200, w.centralWidget().height() - h)], Qt.Vertical)

    def _one_column(self, width: int) -> None:
        """Every dock a tab of the left column, the trace player in front."""
        w = self.window
        entries = w.dock_builder.entries
        first = None
        for entry in DOCKS:
            dock = next((d for n, d in w.docks.items() if entries[n] is entry), None)
            if dock is None:
                continue
            if dock.isFloating():
                dock.setFloating(False)
            if first is None:
                if w.dockWidgetArea(dock) != Qt.LeftDockWidgetArea:
                    w.addDockWidget(Qt.LeftDockWidgetArea, dock)
                first = dock
            elif dock not in w.tabifiedDockWidgets(first):
                # straight into the tab group: added to the area first, the docks would stand one above the other
                # for a moment and their summed minimum heights would grow the window past the screen
                w.tabifyDockWidget(first, dock)
            dock.show()
        if first is not None:
            first.raise_()
            w.resizeDocks([first], [min(460, width)], Qt.Horizontal)

    def unelide_tabs(self) -> None:
        """Dock tab bars show whole titles (scroll arrows instead of 'I…', 'Ex…')."""
        w = self.window
        for bar in w.findChildren(QTabBar):
            if bar.parent() is w:
                bar.setElideMode(Qt.ElideNone)
                bar.setUsesScrollButtons(True)

    def reset(self) -> None:
        """Every dock back to its registry place, shown, group heads in front, default sizes."""
        w = self.window
        w.dock_builder.build_all()
        self.group_heads = {}
        entries = w.dock_builder.entries
        for name, dock in w.docks.items():
            self.place(entries[name], dock)
        self.raise_group_heads()
        self.default_sizes()

    def lay_out(self) -> None:
        """The docks built so far as saved (restored at start) or by default."""
        w = self.window
        if w.restored:
            w.settings.restore_window(w, geometry=False)
        else:
            self.default_sizes()
        self.unelide_tabs()
