"""M5: the memory calculator. Seed mode (weights + KV cache, the seed's formula and defaults) and K3 mode
(weights at BF16 / FP8 / MXFP4 with scale overhead, MLA latent cache growing with context, constant KDA state,
concurrency × context, GPUs × HBM), with a plot of cache size against context length. Every field is checked;
a bad value shows an inline message under the field and the last valid result stays on screen."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QFrame, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QTabWidget,
                               QVBoxLayout, QWidget)

from app.i18n import tr
from app.widgets.controls import ERROR_STYLE, NOTE_STYLE, note_label, set_stacked, shrinkable
from app.widgets.paint import css, qcolor
from app.widgets.safe_text import plain, rich_tr
from compute.teaching import memory as M
from app.slot_guard import guarded

SEED_FIELDS = (("params_billion", "7"), ("tokens", "4096"), ("layers", "32"), ("d_model", "4096"),
               ("kv_heads", "8"), ("batch", "1"), ("gpus", "1"))
K3_FIELDS = (("params_billion", "2800"), ("context", "1048576"), ("concurrency", "1"), ("gpus", "8"),
             ("hbm_gb", "288"))
GPU_PRESETS = (("b300", 288.0), ("h200", 141.0), ("h100", 80.0), ("custom", None))


def error_text(err: M.MemoryInputError) -> str:
    lim = {k: f"{int(v):,}" if float(v).is_integer() else f"{v:,}" for k, v in err.limits.items()}
    return tr("silicon.calc.err_" + err.key, **lim)


class Field:
    """One labelled input with its inline error message, in rows r, r+1 of a grid."""

    def __init__(self, prefix: str, name: str, default: str, grid: QGridLayout, row: int, on_change):
        self.prefix, self.name = prefix, name
        self.label = QLabel()
        self.label.setWordWrap(True)  # a long name wraps instead of widening a narrow dock
        self.hint = QLabel()
        self.hint.setStyleSheet(NOTE_STYLE)
        self.hint.setWordWrap(True)
        self.edit = QLineEdit(default)
        self.edit.setObjectName(f"{prefix}_{name}")
        self.edit.setMaximumWidth(160)
        self.error = QLabel()
        self.error.setObjectName(f"{prefix}_{name}_error")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        plain(self.label, self.hint, self.error)  # the texts name the model (its config's display_name)
        grid.addWidget(self.label, row, 0)
        grid.addWidget(self.edit, row, 1)
        grid.addWidget(self.hint, row, 2)
        grid.addWidget(self.error, row + 1, 1, 1, 2)
        self.edit.textEdited.connect(guarded(lambda _t: on_change()))

    def text(self) -> str:
        return self.edit.text().strip().replace(",", "").replace("_", "")

    def set_error(self, msg: str | None) -> None:
        self.error.setText(msg or "")
        self.error.setVisible(bool(msg))

    def retranslate(self, **args) -> None:
        self.label.setText(tr(f"silicon.calc.{self.prefix}.{self.name}"))
        self.hint.setText(tr(f"silicon.calc.{self.prefix}.{self.name}_hint", **args))



def _result_labels(prefix: str) -> tuple[QLabel, QLabel, QLabel]:
    """The 'fits' line, the stale-input warning and the formula box of a calculator panel."""
    fits = QLabel()
    fits.setObjectName(f"{prefix}_fits")
    fits.setWordWrap(True)
    stale = QLabel()
    stale.setWordWrap(True)
    stale.setObjectName(f"{prefix}_stale")
    stale.setStyleSheet(ERROR_STYLE)
    formula = QLabel()
    formula.setObjectName(f"{prefix}_formula")
    formula.setStyleSheet(f"font-family: 'DejaVu Sans Mono'; background: {css('code_fill')}; color: {css('code_text')};"
                          " padding: 8px; border-radius: 6px;")
    formula.setTextInteractionFlags(Qt.TextSelectableByMouse)
    formula.setWordWrap(True)
    plain(fits, stale, formula)  # the formula names the model (its config's display_name)
    return fits, stale, formula

def _output_grid(names, prefix: str):
    grid = QGridLayout()
    labels, values = {}, {}
    for i, n in enumerate(names):
        lab = QLabel()
        lab.setWordWrap(True)
        val = QLabel("—")
        val.setObjectName(f"{prefix}_out_{n}")
        val.setStyleSheet("font-size: 17px; font-weight: bold;")
        val.setTextInteractionFlags(Qt.TextSelectableByMouse)
        plain(lab, val)  # the labels name the model
        grid.addWidget(lab, i, 0)
        grid.addWidget(val, i, 1, alignment=Qt.AlignRight)
        labels[n], values[n] = lab, val
    return grid, labels, values


def _read_fields(fields: dict[str, Field], check) -> dict | None:
    """Each field's value through check(name, text), or None after showing each bad field's message."""
    vals, ok = {}, True
    for name, f in fields.items():
        try:
            vals[name] = check(name, f.text())
            f.set_error(None)
        except M.MemoryInputError as e:
            f.set_error(error_text(e))
            ok = False
    return vals if ok else None


def _inputs_beside_results(grid: QGridLayout, title: QLabel, out: QGridLayout, *below: QWidget) -> QHBoxLayout:
    """A calculator's top row: the input grid, a rule, then the results column (title, outputs, `below`)."""
    right = QVBoxLayout()
    right.addWidget(title)
    right.addLayout(out)
    for w in below:
        right.addWidget(w)
    right.addStretch(1)
    top = QHBoxLayout()
    top.addLayout(grid, 3)
    sep = QFrame()
    sep.setFrameShape(QFrame.VLine)
    top.addWidget(sep)
    top.addLayout(right, 2)
    return top


class _CalcPanel(QWidget):
    """A calculator mode: `values()` reads its inputs (None when one is bad), `estimate(values)` computes,
    `_show()` writes the result; a bad input keeps the last result on screen, marked stale."""

    @guarded
    def recompute(self) -> None:
        vals = self.values()
        if vals is None:
            self.stale.setText(tr("silicon.calc.stale") if self.result else "")
            return
        self.result = self.estimate(vals)
        self.inputs = vals
        self.stale.setText("")
        self._show()


class SeedCalc(_CalcPanel):
    OUTPUTS = ("weights_gb", "kv_gib", "total_gib", "per_gpu_gib")

    def __init__(self, parent=None):
        super().__init__(parent)
        grid = QGridLayout()
        self.fields = {}
        self.precision = QComboBox()
        self.precision.setObjectName("seed_precision")
        self.precision_label = QLabel()
        self.precision_hint = QLabel()
        self.precision_hint.setStyleSheet(NOTE_STYLE)
        self.precision_hint.setWordWrap(True)
        shrinkable(self.precision, 12)
        row = 0
        for name, default in SEED_FIELDS:
            self.fields[name] = Field("seed", name, default, grid, row, self.recompute)
            row += 2
            if name == "params_billion":
                grid.addWidget(self.precision_label, row, 0)
                grid.addWidget(self.precision, row, 1)
                grid.addWidget(self.precision_hint, row, 2)
                row += 2
        grid.setColumnStretch(2, 1)
        out, self.out_labels, self.out_values = _output_grid(self.OUTPUTS, "seed")
        self.fits, self.stale, self.formula = _result_labels("seed")
        self.title_out = QLabel()
        self.title_out.setStyleSheet("font-weight: bold;")
        self.excl_title = QLabel()
        self.excl_title.setStyleSheet("font-weight: bold;")
        self.exclusions = note_label()
        self.multi = note_label()
        self.top = top = _inputs_beside_results(grid, self.title_out, out, self.fits, self.stale, self.formula)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.excl_title)
        lay.addWidget(self.exclusions)
        lay.addWidget(self.multi)
        lay.addStretch(1)
        self.result: dict | None = None
        self.precision.currentIndexChanged.connect(guarded(lambda _i: self.recompute()))

    def values(self) -> dict | None:
        """Validated inputs, or None after showing each bad field's message."""
        vals = _read_fields(self.fields, M.check_seed_field)
        if vals is None:
            return None
        vals["bytes_per_weight"] = self.precision.currentData() or 2.0
        return vals

    def estimate(self, vals: dict) -> dict:
        return M.estimate(**vals)

    def _show(self) -> None:
        r = self.result
        if r is None:
            return
        self.out_values["weights_gb"].setText(f"{r['weights_gb']:,.2f} GB")
        self.out_values["kv_gib"].setText(f"{r['kv_gib']:,.2f} GiB")
        self.out_values["total_gib"].setText(f"{r['total_gib']:,.2f} GiB")
        self.out_values["per_gpu_gib"].setText(f"{r['per_gpu_gib']:,.2f} GiB")
        self.fits.setText(tr("silicon.calc.fits" if r["fits"] else "silicon.calc.no_fit", gib=f"{r['gpu_gib']:.2f}"))
        self.fits.setStyleSheet(f"color: {css('good' if r['fits'] else 'error')}; font-weight: bold;")
        self.formula.setText(tr("silicon.calc.seed.formula", hd=r["head_dim"], kv=f"{r['kv_bytes']:,.0f}",
                                w=f"{r['weights_bytes']:,.0f}"))

    def retranslate(self) -> None:
        for f in self.fields.values():
            f.retranslate()
        self.precision_label.setText(tr("silicon.calc.seed.precision"))
        self.precision_hint.setText(tr("silicon.calc.seed.precision_hint"))
        i = self.precision.currentIndex()
        self.precision.blockSignals(True)
        self.precision.clear()
        for key, b in M.SEED_PRECISIONS.items():
            self.precision.addItem(tr(f"silicon.calc.prec_{key}", b=f"{b:g}"), b)
        self.precision.setCurrentIndex(i if i >= 0 else 1)
        self.precision.blockSignals(False)
        for n in self.OUTPUTS:
            self.out_labels[n].setText(tr(f"silicon.calc.seed.out_{n}"))
        self.title_out.setText(tr("silicon.calc.out_title"))
        self.excl_title.setText(tr("silicon.calc.excl_title"))
        self.exclusions.setText(tr("silicon.calc.seed.exclusions"))
        self.multi.setText(tr("silicon.calc.seed.multi_gpu"))
        self.recompute()


class K3Calc(_CalcPanel):
    OUTPUTS = ("weights_gb", "mla_gib", "kda_gib", "total_gib", "per_gpu_gib", "hbm_gb", "free_gib",
               "max_sequences", "all_mla_gib")

    def __init__(self, parent=None):
        super().__init__(parent)
        grid = QGridLayout()
        self.fmt = QComboBox()
        self.fmt.setObjectName("k3_format")
        self.fmt_label = QLabel()
        self.cache = QComboBox()
        self.cache.setObjectName("k3_cache_bytes")
        self.cache_label = QLabel()
        self.preset = QComboBox()
        self.preset.setObjectName("k3_preset")
        self.preset_label = QLabel()
        for combo in (self.fmt, self.cache, self.preset):
            shrinkable(combo, 16)
        grid.addWidget(self.fmt_label, 0, 0)
        grid.addWidget(self.fmt, 0, 1, 1, 2)
        self.fields = {}
        row = 2
        for name, default in K3_FIELDS:
            if name == "gpus":
                grid.addWidget(self.preset_label, row, 0)
                grid.addWidget(self.preset, row, 1, 1, 2)
                row += 2
            self.fields[name] = Field("k3", name, default, grid, row, self.recompute)
            row += 2
        grid.addWidget(self.cache_label, row, 0)
        grid.addWidget(self.cache, row, 1, 1, 2)
        grid.setColumnStretch(2, 1)
        out, self.out_labels, self.out_values = _output_grid(self.OUTPUTS, "k3")
        self.title_out = QLabel()
        self.title_out.setStyleSheet("font-weight: bold;")
        self.fits, self.stale, self.formula = _result_labels("k3")
        top = _inputs_beside_results(grid, self.title_out, out, self.fits, self.stale)
        self.plot = pg.PlotWidget(enableMenu=False)  # no context menus (built, then dropped, ~2.5 ms a plot)
        self.plot.setObjectName("k3_plot")
        self.plot.setBackground(qcolor("background"))
        self.plot.setLogMode(x=True, y=True)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setMinimumHeight(260)
        self.legend = self.plot.addLegend(offset=(10, 10))
        ctx = np.unique(np.round(np.logspace(10, 20, 61, base=2)).astype(np.int64))
        self._ctx = ctx
        self.curves = {}
        styles = {"mla_gib": (qcolor("mla"), Qt.SolidLine), "kda_gib": (qcolor("kda"), Qt.SolidLine),
                  "k3_gib": (qcolor("expert"), Qt.SolidLine), "all_mla_gib": (qcolor("output"), Qt.DashLine)}
        for key, (col, style) in styles.items():
            self.curves[key] = self.plot.plot([], [], pen=pg.mkPen(col, width=2.5, style=style), name=key)
        ticks = [(np.log10(2.0**e), f"{2**(e - 10)}K" if e < 20 else "1M") for e in range(10, 21, 2)]
        self.plot.getAxis("bottom").setTicks([ticks, []])
        self.marker = pg.InfiniteLine(angle=90, pen=pg.mkPen((200, 200, 200), width=1, style=Qt.DotLine))
        self.plot.addItem(self.marker)
        self.plot_note = plain(note_label())
        self.excl_title = QLabel()
        self.excl_title.setStyleSheet("font-weight: bold;")
        self.exclusions = note_label()
        self.top = top
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.formula)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.plot_note)
        lay.addWidget(self.excl_title)
        lay.addWidget(self.exclusions)
        self.result: dict | None = None
        self.config = None  # the shown model (None: K3's numbers); set_config follows another
        self.shape = M.K3_SHAPE
        self.fmt.currentIndexChanged.connect(guarded(lambda _i: self.recompute()))
        self.cache.currentIndexChanged.connect(guarded(lambda _i: self.recompute()))
        self.preset.currentIndexChanged.connect(self._preset_changed)

    @guarded
    def set_config(self, cfg) -> None:
        """Another model: its cache shape, and its parameters and maximum context as the inputs' values."""
        self.config = cfg
        self.shape = M.CacheShape.from_config(cfg)
        if cfg.total_params_billion:
            self.fields["params_billion"].edit.setText(f"{cfg.total_params_billion:g}")
        self.fields["context"].edit.setText(str(min(cfg.max_position_embeddings, M.K3_LIMITS["context"][1])))
        self.retranslate()

    def model_args(self) -> dict:
        """Format arguments of the texts: the model's name and its cache shape."""
        sh, cfg = self.shape, self.config
        params = cfg.total_params_billion if cfg is not None else M.K3_PARAMS_BILLION
        return dict(model=cfg.display_name if cfg is not None else "Kimi K3", layers=sh.layers,
                    mla_layers=sh.mla_layers, kda_layers=sh.kda_layers, mla_numbers=sh.mla_numbers, kda_heads=sh.kda_heads, dk=sh.kda_head_dim,
                    kv=cfg.kv_lora_rank if cfg is not None else M.K3_KV_LORA_RANK,
                    rope=cfg.qk_rope_head_dim if cfg is not None else M.K3_QK_ROPE_DIM,
                    params=f"{params:,g}" if params else "?",
                    max_ctx=f"{cfg.max_position_embeddings if cfg is not None else M.K3_MAX_CONTEXT:,}")

    @guarded
    def _preset_changed(self, _i: int) -> None:
        hbm = self.preset.currentData()
        if hbm:
            self.fields["hbm_gb"].edit.setText(f"{hbm:g}")
        self.recompute()

    def values(self) -> dict | None:
        vals = _read_fields(self.fields, lambda name, text: M.validate({name: M.K3_LIMITS[name]}, **{name: text})[name])
        if vals is None:
            return None
        vals["weight_format"] = self.fmt.currentData() or "mxfp4"
        vals["cache_bytes"] = self.cache.currentData() or 2
        return vals

    def estimate(self, vals: dict) -> dict:
        return M.k3_estimate(**vals, shape=self.shape)

    def _show(self) -> None:
        r, v = self.result, self.inputs
        o = self.out_values
        o["weights_gb"].setText(f"{r['weights_gb']:,.1f} GB ({r['weights_gib']:,.1f} GiB)")
        o["mla_gib"].setText(f"{r['mla_gib']:,.2f} GiB")
        o["kda_gib"].setText(f"{r['kda_gib']:,.3f} GiB")
        o["total_gib"].setText(f"{r['total_gib']:,.1f} GiB")
        o["per_gpu_gib"].setText(f"{r['per_gpu_gib']:,.1f} GiB")
        o["hbm_gb"].setText(f"{r['hbm_gb']:,.0f} GB")
        o["free_gib"].setText(f"{r['free_gib']:,.1f} GiB")
        o["max_sequences"].setText(f"{r['max_sequences']:,}")
        o["all_mla_gib"].setText(f"{r['all_mla_gib']:,.2f} GiB")
        self.fits.setText(tr("silicon.calc.k3.fits" if r["fits"] else "silicon.calc.k3.no_fit"))
        self.fits.setStyleSheet(f"color: {css('good' if r['fits'] else 'error')}; font-weight: bold;")
        bits, sbits, block = M.WEIGHT_FORMATS[v["weight_format"]]
        a = self.model_args()
        self.formula.setText(tr("silicon.calc.k3.formula", bits=bits, sbits=sbits, block=f"{block:,}",
                                bpw=f"{r['bytes_per_weight']:.6g}", cb=f"{v['cache_bytes']:g}",
                                mpt=f"{r['mla_bytes_per_token']:,.0f}", kda=f"{r['kda_bytes_per_sequence']:,.0f}",
                                **a))
        c = M.context_curve(self._ctx, cache_bytes=v["cache_bytes"], shape=self.shape)
        for key, curve in self.curves.items():
            values = np.asarray(c[key])
            if np.all(values > 0):
                curve.setData(self._ctx.astype(float), values)
            else:  # e.g. no KDA layers: nothing to draw on a log scale
                curve.setData([], [])
        self.marker.setValue(np.log10(v["context"]))
        if r["kda_bytes_per_sequence"] > 0 and r["mla_bytes_per_token"] > 0:
            cross = r["kda_bytes_per_sequence"] / r["mla_bytes_per_token"]
            self.plot_note.setText(tr("silicon.calc.k3.plot_note", cross=f"{cross:,.0f}",
                                      ratio=f"{self.shape.layers / max(self.shape.mla_layers, 1):.2f}", **a))
        else:
            self.plot_note.setText(tr("silicon.calc.k3.plot_note_no_kda", **a))

    def retranslate(self) -> None:
        a = self.model_args()
        for f in self.fields.values():
            f.retranslate(**a)
        self.fmt_label.setText(tr("silicon.calc.k3.format"))
        self.cache_label.setText(tr("silicon.calc.k3.cache_bytes"))
        self.preset_label.setText(tr("silicon.calc.k3.preset"))
        for combo, items in (
                (self.fmt, [(tr(f"silicon.calc.fmt_{k}", bpw=f"{M.bytes_per_weight(k):.5g}"), k) for k in M.WEIGHT_FORMATS]),
                (self.cache, [(tr("silicon.calc.cache_bf16"), 2.0), (tr("silicon.calc.cache_fp8"), 1.0)]),
                (self.preset, [(tr(f"silicon.calc.preset_{k}", gb=f"{g:g}" if g else ""), g) for k, g in GPU_PRESETS])):
            i = combo.currentIndex()
            combo.blockSignals(True)
            combo.clear()
            for label, data in items:
                combo.addItem(label, data)
            combo.setCurrentIndex(i if i >= 0 else (2 if combo is self.fmt else 0))
            combo.blockSignals(False)
        for n in self.OUTPUTS:
            self.out_labels[n].setText(tr(f"silicon.calc.k3.out_{n}", **a))
        self.title_out.setText(tr("silicon.calc.out_title"))
        self.excl_title.setText(tr("silicon.calc.excl_title"))
        self.exclusions.setText(tr("silicon.calc.k3.exclusions"))
        self.plot.setLabel("bottom", tr("silicon.calc.k3.axis_x"))
        self.plot.setLabel("left", tr("silicon.calc.k3.axis_y"))
        self.legend.clear()
        for key, curve in self.curves.items():
            self.legend.addItem(curve, rich_tr(f"silicon.calc.k3.curve_{key}", **a))  # a pyqtgraph label is HTML
        self.recompute()


class CalcTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.modes = QTabWidget()
        self.modes.setObjectName("calc_modes")
        self.seed = SeedCalc()
        self.k3 = K3Calc()
        self.modes.addTab(self.seed, "")
        self.modes.addTab(self.k3, "")
        self.header = note_label()
        lay = QVBoxLayout(self)
        lay.addWidget(self.header)
        lay.addWidget(self.modes, 1)
        self.retranslate()

    @guarded
    def set_config(self, cfg) -> None:
        """The model mode follows the shown model (its defaults, cache shape and texts)."""
        self.k3.set_config(cfg)
        self.modes.setTabText(1, tr("silicon.calc.mode_k3", **self.k3.model_args()))

    def set_narrow(self, narrow: bool) -> None:
        """Stack inputs above results when the dock is narrow."""
        for page in (self.seed, self.k3):
            set_stacked(page.top, narrow)
            page.layout().invalidate()  # hidden pages too: the tab stack sizes itself by every page
            page.updateGeometry()

    def retranslate(self) -> None:
        self.header.setText(tr("silicon.calc.header"))
        self.modes.setTabText(0, tr("silicon.calc.mode_seed"))
        self.modes.setTabText(1, tr("silicon.calc.mode_k3", **self.k3.model_args()))
        self.seed.retranslate()
        self.k3.retranslate()
