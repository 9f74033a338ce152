"""The Explain dock's workspace: a short top (what is explained, at which position, the status line) above
pages that each fit a default dock at 1920×1080, 1366×768 and 1280×720 (issue 40.2) — Answer & sources, Lens,
Attention, Causal route & patching, Experiments, Side by side — with their widgets (`build_pages`, which
connects them to the dock's parts and slots). Tables that fit their column: app/docks/explain/fit.py."""
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


def build_pages(dock, page: dict) -> None:
    """The widgets of ExplainDock's pages (app/docks/explain/dock.py) as its attributes, connected to the dock's
    parts (its knock-out panel and attention page: made before) and its public slots; page: page_tabs()'s
    layouts. Qt Designer's setupUi pattern: the dock owns the widgets, this builds them."""
    _build_answer(dock, page["answer"])
    _build_lens(dock, page["lens"])
    _build_attention(dock, page["attention"])
    _build_route(dock, page["route"])
    _build_direct(dock, page["direct"])
    _build_experiments(dock, page["experiments"])


def _build_answer(dock, lay) -> None:
    dock.sources_title = section_label()
    lay.addWidget(dock.sources_title)
    dock.sources = wrapping_table(0, 4, "explain_sources", grow=True)
    dock.sources.setSelectionBehavior(QAbstractItemView.SelectRows)
    dock.sources.setSelectionMode(QAbstractItemView.SingleSelection)
    dock.sources.setContextMenuPolicy(Qt.CustomContextMenu)
    dock.sources.customContextMenuRequested.connect(dock.knockout_panel.sources_menu)
    dock.sources.itemSelectionChanged.connect(dock.knockout_panel.update_buttons)
    lay.addWidget(dock.sources, 10)  # before the page's closing stretch
    krow = QHBoxLayout()
    dock.knock = QPushButton()
    dock.knock.setObjectName("explain_knockout")
    dock.knock.clicked.connect(dock.knockout_panel.knock_out_selected)
    dock.mode = QComboBox()
    dock.mode.setObjectName("explain_mode")
    dock.mode.activated.connect(guarded(lambda _i: dock.refresh()))
    krow.addWidget(dock.knock)
    krow.addWidget(dock.mode)
    krow.addStretch(1)
    lay.addLayout(krow)
    dock.sources_note = note_label()
    lay.addWidget(dock.sources_note)


def _build_lens(dock, lay) -> None:
    dock.lens_title = section_label()
    lay.addWidget(dock.lens_title)
    dock.plot = pg.PlotWidget()
    dock.plot.setObjectName("explain_lens_plot")
    dock.plot.setMinimumHeight(140)
    grow_to_page(dock.plot)
    dock.plot.showGrid(x=True, y=True, alpha=0.25)
    dock.plot.setYRange(0.0, 1.0, padding=0.04)
    dock.legend = dock.plot.addLegend(offset=(8, 8))
    dock.curve_prob = dock.plot.plot(pen=pg.mkPen(qcolor("output"), width=3))
    dock.curve_rank = dock.plot.plot(pen=pg.mkPen(qcolor("kda"), width=2, style=Qt.DashLine))
    lay.addWidget(dock.plot, 1)
    dock.lens_column = note_label()
    dock.lens_column.setObjectName("explain_lens_column")
    lay.addWidget(dock.lens_column)
    dock.lens_note = note_label()
    lay.addWidget(dock.lens_note)


def _build_attention(dock, lay) -> None:
    dock.att_title = section_label()
    lay.addWidget(dock.att_title)
    dock.att_heads = QCheckBox()
    dock.att_heads.setObjectName("explain_attention_per_head")
    dock.att_heads.toggled.connect(dock.attention.per_head_toggled)
    lay.addWidget(dock.att_heads)
    dock.att_plot, dock.att_image = heatmap_plot("explain_attention_overview")
    dock.att_plot.setMinimumHeight(150)
    grow_to_page(dock.att_plot)
    dock.att_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(qcolor("focus"), width=1))
    dock.att_plot.addItem(dock.att_line)
    dock.att_plot.scene().sigMouseClicked.connect(dock.attention.overview_clicked)
    # the overview and the chosen layer's head view side by side (one above the other, the page would not
    # fit a 1280×720 or 1366×768 dock); both as high as the page lets them be
    # the head view is a row per token: a long prompt scrolls inside its own area (bounded by the page)
    dock.att_head_view = HeadView()
    dock.att_head_scroll = QScrollArea()
    dock.att_head_scroll.setObjectName("explain_head_view_scroll")
    dock.att_head_scroll.setWidgetResizable(True)
    dock.att_head_scroll.setFrameShape(QScrollArea.NoFrame)
    dock.att_head_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    dock.att_head_scroll.setWidget(dock.att_head_view)
    grow_to_page(dock.att_head_scroll)
    dock.att_split = QSplitter(Qt.Horizontal)
    dock.att_split.setObjectName("explain_attention_split")
    dock.att_split.setChildrenCollapsible(False)
    dock.att_split.addWidget(dock.att_plot)
    dock.att_split.addWidget(dock.att_head_scroll)
    dock.att_split.setSizes([1000, 1000])  # halves (the weights of the sizes)
    dock.att_split.setStretchFactor(0, 1)
    dock.att_split.setStretchFactor(1, 1)
    grow_to_page(dock.att_split)
    dock.att_split.setMinimumHeight(150)
    lay.addWidget(dock.att_split, 1)
    dock.att_layer = QLabel()
    dock.att_layer.setObjectName("explain_attention_layer")
    dock.att_layer.setWordWrap(True)
    lay.addWidget(dock.att_layer)
    dock.att_table = QTableWidget(0, 0)
    dock.att_table.setObjectName("explain_attention")
    dock.att_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
    dock.att_table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
    lay.addWidget(dock.att_table)
    dock.att_note = note_label()
    lay.addWidget(dock.att_note)


def _build_route(dock, lay) -> None:
    dock.show3d = Show3DControls()
    dock.show3d.changed.connect(dock.show3d_changed)
    lay.addWidget(dock.show3d)
    dock.route_line = note_label()  # the causal route the 3D view lights, its blocks named (show3d.route_line)
    dock.route_line.setObjectName("explain_route_line")
    dock.route_line.setTextFormat(Qt.PlainText)
    lay.addWidget(dock.route_line)
    dock.patch_map = PatchMap()
    dock.effects_view = EffectsView(dock.patch_map)  # the map, or the heads' / experts' total effects
    dock.effects_view.changed.connect(dock.refresh)  # a table asks for its effects
    lay.addWidget(dock.effects_view, 10)


def _build_direct(dock, lay) -> None:
    """Direct effects (not causal): what each block writes straight into the answer's logit."""
    dock.blocks_title = section_label()
    lay.addWidget(dock.blocks_title)
    dock.blocks = wrapping_table(0, 3, "explain_blocks", grow=True)
    dock.blocks.setSelectionBehavior(QAbstractItemView.SelectRows)
    dock.blocks.setSelectionMode(QAbstractItemView.SingleSelection)
    dock.blocks.itemSelectionChanged.connect(dock.knockout_panel.update_buttons)
    dock.blocks.setContextMenuPolicy(Qt.CustomContextMenu)
    dock.blocks.customContextMenuRequested.connect(dock.knockout_panel.blocks_menu)
    lay.addWidget(dock.blocks, 10)
    brow = QHBoxLayout()
    dock.knock_block = QPushButton()
    dock.knock_block.setObjectName("explain_knockout_block")
    dock.knock_block.clicked.connect(dock.knockout_panel.knock_out_block)
    brow.addWidget(dock.knock_block)
    brow.addStretch(1)
    lay.addLayout(brow)
    dock.block_words = QLabel()
    dock.block_words.setObjectName("explain_block_words")
    dock.block_words.setWordWrap(True)
    dock.block_words.setTextFormat(Qt.RichText)
    lay.addWidget(dock.block_words)
    dock.blocks_note = note_label()
    lay.addWidget(dock.blocks_note)


def _build_experiments(dock, lay) -> None:
    """The experiment's result first (what the user asked for), then what is knocked out."""
    dock.ko_label = QLabel()
    dock.ko_label.setObjectName("explain_knockout_result")
    dock.ko_label.setWordWrap(True)
    dock.ko_label.setTextFormat(Qt.RichText)
    lay.addWidget(dock.ko_label)
    dock.ko_table = wrapping_table(5, 2, "explain_knockout_table")
    lay.addWidget(dock.ko_table)
    dock.ko_list_title = QLabel()
    dock.ko_list_title.setTextFormat(Qt.PlainText)
    dock.ko_list_title.setWordWrap(True)
    lay.addWidget(dock.ko_list_title)
    dock.ko_list = _KnockoutList(dock.knockout_panel)
    dock.ko_list.setObjectName("explain_knockout_list")
    dock.ko_list.setContextMenuPolicy(Qt.CustomContextMenu)
    dock.ko_list.customContextMenuRequested.connect(dock.knockout_panel.list_menu)
    lay.addWidget(dock.ko_list)
    dock.ko_list.hide()
    dock.ko_list_title.hide()
    row = QHBoxLayout()
    dock.restore = QPushButton()
    dock.restore.setObjectName("explain_restore")
    dock.restore.clicked.connect(dock.knockout_panel.restore_knockout)
    row.addWidget(dock.restore)
    row.addStretch(1)
    lay.addLayout(row)
    dock.ko_empty = note_label()
    dock.ko_empty.setObjectName("explain_knockout_empty")
    lay.addWidget(dock.ko_empty)
