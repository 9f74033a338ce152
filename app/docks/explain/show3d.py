"""The Explain dock's "In the 3D view" controls: the logit-lens column and the contribution
route drawn in the 3D stack, with the route's threshold, the heads and experts of the exploded layer lit by their
total effects (`with_units`), and what a clicked layer's blocks promote and suppress (`layer_words_html`). What
the 3D view draws of a result is app/engine/explain_service.overlay_of, with_units adding the heads' and experts' part."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QGridLayout, QLabel, QSlider, QWidget

from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.controls import fmt, section_label
from app.engine.explain_render import with_units  # noqa: F401 (the dock's name for it)
from app.engine.explain_service import largest_block, overlay_of  # noqa: F401 (the dock's names for them)

DEFAULT_LENS = True
DEFAULT_ROUTE = False
DEFAULT_PERCENT = 30  # the causal route's candidates: ≥ 30 % of the largest knock-out effect (direct effects:
# a block glows from 30 % of the largest |direct contribution|)
DEFAULT_ARCS = True
DEFAULT_UNITS = False  # the heads' and experts' total effects cost seconds of re-runs: lit when asked for
ROUTE_KINDS = ("causal", "direct")  # the causal route is the default; direct effects stay, named "not causal"


class Show3DControls(QWidget):
    """Two check boxes and the route's threshold slider; `changed` after any of them changed (by the user or
    by set_values)."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        self.title = section_label()
        grid.addWidget(self.title, 0, 0, 1, 2)
        self.lens = QCheckBox()
        self.lens.setObjectName("explain_lens3d")
        self.lens.setChecked(DEFAULT_LENS)
        self.route = QCheckBox()
        self.route.setObjectName("explain_route3d")
        self.route.setChecked(DEFAULT_ROUTE)
        self.arcs = QCheckBox()
        self.arcs.setObjectName("explain_arcs3d")
        self.arcs.setChecked(DEFAULT_ARCS)
        self.units = QCheckBox()  # the exploded layer's heads and experts lit by their total effects
        self.units.setObjectName("explain_units3d")
        self.units.setChecked(DEFAULT_UNITS)
        grid.addWidget(self.lens, 1, 0)
        grid.addWidget(self.arcs, 1, 1)
        grid.addWidget(self.route, 1, 2)
        grid.addWidget(self.units, 0, 2)  # beside the title: the Route page has no row to spare at 1280 x 720
        self.kind = QComboBox()
        self.kind.setObjectName("explain_route_kind")
        grid.addWidget(self.kind, 2, 0, 1, 3)
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setObjectName("explain_route_threshold")
        self.slider.setRange(0, 100)
        self.slider.setSingleStep(1)
        self.slider.setPageStep(10)
        self.slider.setValue(DEFAULT_PERCENT)
        grid.addWidget(self.slider, 3, 0, 1, 3)
        self.threshold_label = QLabel()
        self.threshold_label.setObjectName("explain_route_threshold_label")
        self.threshold_label.setTextFormat(Qt.PlainText)
        self.threshold_label.setWordWrap(True)
        grid.addWidget(self.threshold_label, 4, 0, 1, 3)
        self._largest = 0.0
        for box in (self.lens, self.route, self.arcs, self.units):
            box.toggled.connect(self._changed)
        self.slider.valueChanged.connect(self._changed)
        self.kind.activated.connect(self._changed)
        self.retranslate()
        self._sync()

    def values(self) -> tuple[bool, bool, int, bool]:
        """(lens on, route on, threshold percent, arcs on)."""
        return self.lens.isChecked(), self.route.isChecked(), self.slider.value(), self.arcs.isChecked()

    def set_values(self, lens: bool, route: bool, percent: int, arcs: bool | None = None,
                   units: bool | None = None) -> None:
        """Set them (e.g. from the remembered settings or a view file; arcs / units None: as they are); one
        `changed`."""
        boxes = (self.lens, self.route, self.slider, self.arcs, self.units)
        for w in boxes:
            w.blockSignals(True)
        self.lens.setChecked(bool(lens))
        self.route.setChecked(bool(route))
        self.slider.setValue(min(100, max(0, int(percent))))
        if arcs is not None:
            self.arcs.setChecked(bool(arcs))
        if units is not None:
            self.units.setChecked(bool(units))
        for w in boxes:
            w.blockSignals(False)
        self._changed()

    def route_kind(self) -> str:
        """The route drawn: "causal" (the default) or "direct" (direct effects, not causal)."""
        return ROUTE_KINDS[max(0, self.kind.currentIndex())]

    def any_on(self) -> bool:
        return self.lens.isChecked() or self.route.isChecked() or self.arcs.isChecked() or self.units.isChecked()

    def units_on(self) -> bool:
        """The heads and experts of the exploded layer are lit by their total effects (asked for: costly)."""
        return self.units.isChecked()

    def set_largest(self, largest: float) -> None:
        """The largest |block value| of the shown result (for the threshold's absolute value)."""
        self._largest = float(largest)
        self._sync()

    @guarded
    def _changed(self, *_args) -> None:
        self._sync()
        self.changed.emit()

    def _sync(self) -> None:
        for w in (self.slider, self.threshold_label, self.kind):
            w.setEnabled(self.route.isChecked())
        pct = self.slider.value()
        causal = self.route_kind() == "causal"
        self.threshold_label.setText(tr("explain.route.threshold.causal", pct=max(pct, 1)) if causal
                                     else tr("explain.route.threshold", pct=pct,
                                             value=fmt(self._largest * pct / 100, 3)))
        # the measure the slider works on, as the route drawn uses it (app/engine/explain_service.overlay_of)
        self.slider.setToolTip(tr("explain.route.threshold.tip.causal" if causal else "explain.route.threshold.tip"))

    def retranslate(self) -> None:
        self.title.setText(tr("explain.show3d.title"))
        self.lens.setText(tr("explain.show3d.lens"))
        self.lens.setToolTip(tr("explain.show3d.lens.tip"))
        self.route.setText(tr("explain.show3d.route"))
        self.route.setToolTip(tr("explain.show3d.route.tip"))
        self.arcs.setText(tr("explain.show3d.arcs"))
        self.arcs.setToolTip(tr("explain.show3d.arcs.tip"))
        self.units.setText(tr("explain.show3d.units"))
        self.units.setToolTip(tr("explain.show3d.units.tip"))
        i = self.kind.currentIndex()
        self.kind.clear()
        self.kind.addItems([tr(f"explain.route.kind.{k}") for k in ROUTE_KINDS])
        self.kind.setCurrentIndex(max(0, i))
        self.kind.setToolTip(tr("explain.route.kind.tip"))
        self._sync()


LINE_BLOCKS = 4  # blocks named on the Route page's line; the rest in its tooltip (the page fits at 1280×720)


def route_line(ov) -> str:
    """The Route page's line about the causal route the 3D view lights (the same blocks, threshold and words as
    its header); "" when the causal route is not drawn or still computing."""
    if ov is None or ov.route_kind != "causal" or ov.computing or not ov.route:
        return ""
    pct = f"{100 * ov.threshold:.0f}"
    if not ov.lit:
        return tr("explain.route.line.spread", pct=pct, top=f"{100 * ov.largest:.0f}")
    names = _route_blocks(ov)
    shown = names[:LINE_BLOCKS] + ([tr("explain.route.more", n=len(names) - LINE_BLOCKS)]
                                   if len(names) > LINE_BLOCKS else [])
    return tr("explain.route.line", pct=pct, blocks=" · ".join(shown))


def route_tip(ov) -> str:
    """The route line's tooltip: every block of the route and what its effect is; "" when there is no line."""
    if not route_line(ov) or not ov.lit:
        return tr("explain.route.threshold.tip.causal") if route_line(ov) else ""
    return tr("explain.route.line.tip", pct=f"{100 * ov.threshold:.0f}", blocks=" · ".join(_route_blocks(ov)))


def _route_blocks(ov) -> list[str]:
    """The lit blocks, strongest first as causal_route lists them, each named with its effect."""
    values = {(ly, pt): v for ly, pt, v in ov.route}
    order = sorted(ov.lit, key=lambda k: -values.get(k, 0.0))
    return [tr("explain.route.block", layer=ly, part="FFN" if pt == "ffn" else tr(f"explain.part.{pt}"),
               effect=f"{100 * values.get((ly, pt), 0.0):.0f}") for ly, pt in order]


def _words(items) -> str:
    return ", ".join(f"{html.escape(_q(p), quote=False)} {fmt(v, 2)}" for p, v in items)


def _q(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"


def layer_words_html(res, layer: int) -> str:
    """What a 1-based layer's mixer and FFN (0: the embedding) promote and suppress, as the dock shows it."""
    values = {(l, p): v for l, p, v in res.totals}
    if layer == 0:
        if (0, "embedding") not in res.layer_words:
            return ""
        up, down = res.layer_words[(0, "embedding")]
        return tr("explain.layer_words.embedding", value=fmt(values[(0, "embedding")], 3), up=_words(up),
                  down=_words(down))
    if (layer, "mixer") not in res.layer_words or (layer, "ffn") not in res.layer_words:
        return ""
    (mu, md), (fu, fd) = res.layer_words[(layer, "mixer")], res.layer_words[(layer, "ffn")]
    return tr("explain.layer_words", layer=layer, mixer=res.mixers[layer - 1].upper(),
              mixer_value=fmt(values[(layer, "mixer")], 3), mixer_up=_words(mu), mixer_down=_words(md),
              ffn_value=fmt(values[(layer, "ffn")], 3), ffn_up=_words(fu), ffn_down=_words(fd))

