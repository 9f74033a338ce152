"""The expert docks' heatmap: a fixed (no pan, zoom or context menu) plot, rows downwards, holding one image."""
from __future__ import annotations

import pyqtgraph as pg


def heatmap_plot(object_name: str) -> tuple[pg.PlotWidget, pg.ImageItem]:
    """A plot named `object_name` with its row-major image item; the first row is drawn at the top."""
    plot = pg.PlotWidget(enableMenu=False)  # no context menus (built, then dropped, they cost ~2.5 ms a plot)
    plot.setObjectName(object_name)
    plot.setMouseEnabled(False, False)
    plot.invertY(True)
    image = pg.ImageItem(axisOrder="row-major")
    plot.addItem(image)
    return plot, image
