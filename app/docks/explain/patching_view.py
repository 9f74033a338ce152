"""The Explain dock's patching map (issue 39.1 / 39.4): the residual patching grid as a layer × position heat
map (causal tracing's picture: row 0 = the embedding at the bottom, the answer's restored share in amber), the
clean and corrupted prompts and the two words the metric compares, and the lens's "readable from layer N"
beside patching's "decided at layer M"."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.docks.explain.fit import grow_to_page
from app.i18n import tr
from app.widgets.controls import note_label, section_label
from scene.causal_lanes import lane_colours
from scene.lens_column import settled_rank_one


def _q(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"


class PatchMap(QWidget):
    """Title, the map and its notes; `show_result(res)` fills them from ExplainResult.causal (hidden map and a
    one-line reason when there is no grid)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.title = section_label()
        lay.addWidget(self.title)
        self.decided = QLabel()
        self.decided.setObjectName("explain_patch_decided")
        self.decided.setWordWrap(True)
        self.decided.setTextFormat(Qt.PlainText)
        lay.addWidget(self.decided)
        self.plot = pg.PlotWidget(enableMenu=False)
        self.plot.setObjectName("explain_patch_map")
        self.plot.setMouseEnabled(False, False)
        self.plot.setMinimumHeight(100)  # the Route page's controls and the route's line above it: 1280×720 fits
        grow_to_page(self.plot)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        lay.addWidget(self.plot, 1)
        self.note = note_label()
        self.note.setObjectName("explain_patch_note")
        self.note.setTextFormat(Qt.PlainText)
        lay.addWidget(self.note)
        self.scores: np.ndarray | None = None  # tests: the grid drawn
        self._res = None
        self.retranslate()

    def show_result(self, res) -> None:
        self._res = res
        causal = getattr(res, "causal", {}) if res is not None else {}
        patch = causal.get("patch")
        self.plot.setVisible(patch is not None)
        readable = settled_rank_one(res.lens_rank) if res is not None else None
        if patch is None:
            self.scores = None
            msg = causal.get("patch_error")
            self.note.setText(tr("explain.patch.error", message=msg) if msg else
                              tr("explain.route.computing") if res is not None and not causal else "")
            self.decided.setText("")
            return
        sc = np.asarray(patch["scores"], np.float64)
        self.scores = sc
        rgba = (lane_colours(sc.reshape(-1)).reshape(sc.shape[0], sc.shape[1], 4) * 255).astype(np.uint8)
        self.image.setImage(rgba[::-1], levels=(0, 255))  # row 0 (the embedding) at the bottom
        L1, T = sc.shape
        self.plot.invertY(False)
        self.plot.setXRange(-0.5, T - 0.5, padding=0.0)
        self.plot.setYRange(-0.5, L1 - 0.5, padding=0.0)
        self.image.setRect(QRectF(-0.5, -0.5, T, L1))
        self._ticks(res, T)
        self.note.setText(tr("explain.patch.metric", clean=patch["clean"], corrupted=patch["corrupted"],
                             a=_q(patch["clean_word"]), b=_q(patch["corrupted_word"])))
        dec = patch["decided_at"]
        r = readable if readable is not None else "—"
        self.decided.setText(tr("explain.patch.decided", readable=r, decided=dec) if dec is not None
                             else tr("explain.patch.undecided", readable=r))

    def _ticks(self, res, T: int) -> None:
        self.plot.getAxis("bottom").setTicks([[(t, str(t)) for t in range(T)]])  # the pieces: in the note

    def retranslate(self) -> None:
        self.title.setText(tr("explain.patch.title"))
        self.plot.setLabel("left", tr("explain.patch.axis_layer"))
        self.plot.setLabel("bottom", tr("explain.patch.axis_position"))
        if self._res is not None:
            self.show_result(self._res)
