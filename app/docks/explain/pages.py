"""The Explain dock's workspace: a short top (what is explained, at which position, the status line) above
pages that each fit a default dock at 1920×1080, 1366×768 and 1280×720 (issue 40.2) — Answer & sources, Lens,
Attention, Causal route & patching, Experiments, Side by side — with their widgets (`PageBuilders`, which
ExplainDock connects to its slots). Tables that fit their column: app/docks/explain/fit.py."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QHBoxLayout, QHeaderView, QLabel, QProxyStyle,
                               QPushButton, QScrollArea, QSplitter, QStyle, QTableWidget, QTabWidget)

from app.docks.experts.heatmap import heatmap_plot
from app.docks.explain.effects_view import EffectsView
from app.docks.explain.fit import PAGES, grow_to_page, wrapping_table
from app.docks.explain.head_view import HeadView
from app.docks.explain.knockouts import _KnockoutList
from app.docks.explain.patching_view import PatchMap
from app.docks.explain.show3d import Show3DControls
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.controls import note_label, scroll_page, section_label
from app.widgets.paint import qcolor


TAB_SPACE = 12  # px of a tab's width beside its label (the style's own is about 24): seven tabs fit a 1280- or
# 1366-px window's default dock (about 430 px) in English and Korean without the tab bar's scroll arrows


class _CompactTabs(QProxyStyle):
    """The application style with narrower tab margins (PM_TabBarTabHSpace), for the Explain dock's tab bar."""

    def pixelMetric(self, metric, option=None, widget=None):  # noqa: N802 (Qt name)
        if metric == QStyle.PM_TabBarTabHSpace:
            return TAB_SPACE
        return super().pixelMetric(metric, option, widget)


_COMPACT: _CompactTabs | None = None


def _compact_tabs() -> _CompactTabs:
    """One shared proxy over the application style (created without a base style: it would own it)."""
    global _COMPACT
    if _COMPACT is None:
        _COMPACT = _CompactTabs()
    return _COMPACT


def page_tabs() -> tuple[QTabWidget, dict]:
    """The pages as tabs (narrow tab margins, so that every tab is in sight at the default sizes; scroll buttons
    only when the user narrows the dock), each a frameless scroll area; {page name: its vertical layout}."""
    tabs = QTabWidget()
    tabs.setObjectName("explain_pages")
    tabs.tabBar().setStyle(_compact_tabs())
    tabs.setDocumentMode(True)
    tabs.setUsesScrollButtons(True)
    tabs.setElideMode(Qt.ElideNone)
    layouts = {}
    for name in PAGES:
        area = QScrollArea()
        area.setObjectName(f"explain_page_{name}")
        lay, title = scroll_page(area)
        title.hide()  # the tab names the page
        lay.setContentsMargins(8, 6, 8, 6)
        layouts[name] = lay
        tabs.addTab(area, "")
    return tabs, layouts


def retranslate_tabs(tabs: QTabWidget) -> None:
    for i, name in enumerate(PAGES):
        tabs.setTabText(i, tr(f"explain.page.{name}"))
        tabs.setTabToolTip(i, tr(f"explain.page.{name}.tip"))


class PageBuilders:
    """The widgets of ExplainDock's pages (app/docks/explain/dock.py), which connects them to its slots."""

    def _build_answer(self, lay) -> None:
        self.sources_title = section_label()
        lay.addWidget(self.sources_title)
        self.sources = wrapping_table(0, 4, "explain_sources", grow=True)
        self.sources.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.sources.setSelectionMode(QAbstractItemView.SingleSelection)
        self.sources.setContextMenuPolicy(Qt.CustomContextMenu)
        self.sources.customContextMenuRequested.connect(self._sources_menu)
        self.sources.itemSelectionChanged.connect(self._update_buttons)
        lay.addWidget(self.sources, 10)  # before the page's closing stretch
        krow = QHBoxLayout()
        self.knock = QPushButton()
        self.knock.setObjectName("explain_knockout")
        self.knock.clicked.connect(self.knock_out_selected)
        self.mode = QComboBox()
        self.mode.setObjectName("explain_mode")
        self.mode.activated.connect(guarded(lambda _i: self.refresh()))
        krow.addWidget(self.knock)
        krow.addWidget(self.mode)
        krow.addStretch(1)
        lay.addLayout(krow)
        self.sources_note = note_label()
        lay.addWidget(self.sources_note)

    def _build_lens(self, lay) -> None:
        self.lens_title = section_label()
        lay.addWidget(self.lens_title)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("explain_lens_plot")
        self.plot.setMinimumHeight(140)
        grow_to_page(self.plot)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setYRange(0.0, 1.0, padding=0.04)
        self.legend = self.plot.addLegend(offset=(8, 8))
        self.curve_prob = self.plot.plot(pen=pg.mkPen(qcolor("output"), width=3))
        self.curve_rank = self.plot.plot(pen=pg.mkPen(qcolor("kda"), width=2, style=Qt.DashLine))
        lay.addWidget(self.plot, 1)
        self.lens_column = note_label()
        self.lens_column.setObjectName("explain_lens_column")
        lay.addWidget(self.lens_column)
        self.lens_note = note_label()
        lay.addWidget(self.lens_note)

    def _build_attention(self, lay) -> None:
        self.att_title = section_label()
        lay.addWidget(self.att_title)
        self.att_heads = QCheckBox()
        self.att_heads.setObjectName("explain_attention_per_head")
        self.att_heads.toggled.connect(self._per_head_toggled)
        lay.addWidget(self.att_heads)
        self.att_plot, self.att_image = heatmap_plot("explain_attention_overview")
        self.att_plot.setMinimumHeight(150)
        grow_to_page(self.att_plot)
        self.att_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(qcolor("focus"), width=1))
        self.att_plot.addItem(self.att_line)
        self.att_plot.scene().sigMouseClicked.connect(self._attention_clicked)
        # the overview and the chosen layer's head view side by side (one above the other, the page would not
        # fit a 1280×720 or 1366×768 dock); both as high as the page lets them be
        # the head view is a row per token: a long prompt scrolls inside its own area (bounded by the page)
        self.att_head_view = HeadView()
        self.att_head_scroll = QScrollArea()
        self.att_head_scroll.setObjectName("explain_head_view_scroll")
        self.att_head_scroll.setWidgetResizable(True)
        self.att_head_scroll.setFrameShape(QScrollArea.NoFrame)
        self.att_head_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.att_head_scroll.setWidget(self.att_head_view)
        grow_to_page(self.att_head_scroll)
        self.att_split = QSplitter(Qt.Horizontal)
        self.att_split.setObjectName("explain_attention_split")
        self.att_split.setChildrenCollapsible(False)
        self.att_split.addWidget(self.att_plot)
        self.att_split.addWidget(self.att_head_scroll)
        self.att_split.setSizes([1000, 1000])  # halves (the weights of the sizes)
        self.att_split.setStretchFactor(0, 1)
        self.att_split.setStretchFactor(1, 1)
        grow_to_page(self.att_split)
        self.att_split.setMinimumHeight(150)
        lay.addWidget(self.att_split, 1)
        self.att_layer = QLabel()
        self.att_layer.setObjectName("explain_attention_layer")
        self.att_layer.setWordWrap(True)
        lay.addWidget(self.att_layer)
        self.att_table = QTableWidget(0, 0)
        self.att_table.setObjectName("explain_attention")
        self.att_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.att_table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        lay.addWidget(self.att_table)
        self.att_note = note_label()
        lay.addWidget(self.att_note)

    def _build_route(self, lay) -> None:
        self.show3d = Show3DControls()
        self.show3d.changed.connect(self._show3d_changed)
        lay.addWidget(self.show3d)
        self.route_line = note_label()  # the causal route the 3D view lights, its blocks named (show3d.route_line)
        self.route_line.setObjectName("explain_route_line")
        self.route_line.setTextFormat(Qt.PlainText)
        lay.addWidget(self.route_line)
        self.patch_map = PatchMap()
        self.effects_view = EffectsView(self.patch_map)  # the map, or the heads' / experts' total effects
        self.effects_view.changed.connect(self.refresh)  # a table asks for its effects
        lay.addWidget(self.effects_view, 10)

    def _build_direct(self, lay) -> None:
        """Direct effects (not causal): what each block writes straight into the answer's logit."""
        self.blocks_title = section_label()
        lay.addWidget(self.blocks_title)
        self.blocks = wrapping_table(0, 3, "explain_blocks", grow=True)
        self.blocks.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.blocks.setSelectionMode(QAbstractItemView.SingleSelection)
        self.blocks.itemSelectionChanged.connect(self._update_buttons)
        self.blocks.setContextMenuPolicy(Qt.CustomContextMenu)
        self.blocks.customContextMenuRequested.connect(self._blocks_menu)
        lay.addWidget(self.blocks, 10)
        brow = QHBoxLayout()
        self.knock_block = QPushButton()
        self.knock_block.setObjectName("explain_knockout_block")
        self.knock_block.clicked.connect(self.knock_out_block)
        brow.addWidget(self.knock_block)
        brow.addStretch(1)
        lay.addLayout(brow)
        self.block_words = QLabel()
        self.block_words.setObjectName("explain_block_words")
        self.block_words.setWordWrap(True)
        self.block_words.setTextFormat(Qt.RichText)
        lay.addWidget(self.block_words)
        self.blocks_note = note_label()
        lay.addWidget(self.blocks_note)

    def _build_experiments(self, lay) -> None:
        """The experiment's result first (what the user asked for), then what is knocked out."""
        self.ko_label = QLabel()
        self.ko_label.setObjectName("explain_knockout_result")
        self.ko_label.setWordWrap(True)
        self.ko_label.setTextFormat(Qt.RichText)
        lay.addWidget(self.ko_label)
        self.ko_table = wrapping_table(5, 2, "explain_knockout_table")
        lay.addWidget(self.ko_table)
        self.ko_list_title = QLabel()
        self.ko_list_title.setTextFormat(Qt.PlainText)
        self.ko_list_title.setWordWrap(True)
        lay.addWidget(self.ko_list_title)
        self.ko_list = _KnockoutList(self)
        self.ko_list.setObjectName("explain_knockout_list")
        self.ko_list.setContextMenuPolicy(Qt.CustomContextMenu)
        self.ko_list.customContextMenuRequested.connect(self._ko_list_menu)
        lay.addWidget(self.ko_list)
        self.ko_list.hide()
        self.ko_list_title.hide()
        row = QHBoxLayout()
        self.restore = QPushButton()
        self.restore.setObjectName("explain_restore")
        self.restore.clicked.connect(self.restore_knockout)
        row.addWidget(self.restore)
        row.addStretch(1)
        lay.addLayout(row)
        self.ko_empty = note_label()
        self.ko_empty.setObjectName("explain_knockout_empty")
        lay.addWidget(self.ko_empty)
