"""The plots' context menus are as they were before the plots were built without them (pg.PlotWidget(enableMenu=False),
~2.5 ms less a plot than building the menus and dropping them): the heatmaps, the experts dock's plots, the compared
runs' maps, the patching map and the memory plot have none; the other plots keep pyqtgraph's."""
import pyqtgraph as pg
import pytest

pytestmark = pytest.mark.window(explain=False)

WITHOUT = {"experts.qb.load_plot", "experts.qb.ratio_plot", "experts.layers.counts", "experts.layers.heatmap",
           "experts.usage.heatmap", "experts.usage.heatmap_other", "explain_attention_overview",
           "explain_attention_other", "compare_run_lens", "compare_run_map_0", "compare_run_map_1",
           "explain_patch_map", "k3_plot"}
WITH = {"compare_plot", "explain_lens_plot", "kda_plot"}


def test_plots_without_a_context_menu_build_none(main_window, qtbot):
    plots = {p.objectName(): p for p in main_window.findChildren(pg.PlotWidget)}
    assert set(plots) == WITHOUT | WITH, sorted(plots)  # a new plot is sorted into one of the two
    for name, p in plots.items():
        item = p.getPlotItem()
        if name in WITHOUT:
            assert not item.menuEnabled() and item.getViewBox().menu is None, name
        else:
            assert item.menuEnabled() and item.getViewBox().menu is not None, name
