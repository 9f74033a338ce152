"""M4: the memory hierarchy of a named GPU (HBM → L2 → L1/shared → registers → tensor cores, plus the host
CPU + RAM over PCIe) with public spec-sheet figures, and a "what is stored where" selector."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QVBoxLayout,
                               QWidget)

from app.docks.silicon.canvas import DIM, PANEL, PANEL_EDGE, TEXT, Canvas
from app.i18n import tr
from app.widgets.controls import note_label, set_stacked
from app.widgets.paint import arrow, box, fit_text, font, mix, pen, qcolor, text
from app.widgets.safe_text import esc, rich_tr
from compute.teaching import memory as M
from compute.config import load_default
from app.slot_guard import guarded


@dataclass(frozen=True)
class GpuSpec:
    name: str
    sms: int
    hbm_gb: float
    hbm_tbs: float
    l2_mb: float | None  # None: not on the public spec sheet
    l1_smem_kb_per_sm: int
    regs_kb_per_sm: int
    clock_ghz: float | None  # boost clock used only for the derived shared-memory bandwidth
    tmem_kb_per_sm: int | None = None
    source_key: str = ""

    def total_mib(self, kb_per_sm: int) -> float:
        return self.sms * kb_per_sm / 1024

    def smem_tbs(self) -> float | None:
        """Derived: 32 banks × 4 B = 128 B per clock per SM × SMs × clock."""
        return None if self.clock_ghz is None else 128 * self.sms * self.clock_ghz * 1e9 / 1e12


GPUS = {
    "H200": GpuSpec("NVIDIA H200 SXM", 132, 141, 4.8, 50, 256, 256, 1.98, None, "silicon.hier.src_h200"),
    "B300": GpuSpec("NVIDIA B300 (Blackwell Ultra)", 160, 288, 8.0, None, 256, 256, None, 256,
                    "silicon.hier.src_b300"),
}

LEVELS = ("tensor", "reg", "smem", "l2", "hbm", "host")
# item -> (levels where it lives or passes through, the level where it mainly lives)
ITEMS: dict[str, tuple[tuple[str, ...], str]] = {
    "weights": (("hbm", "l2", "smem", "reg", "tensor"), "hbm"),
    "mla_cache": (("hbm", "l2", "smem", "reg"), "hbm"),
    "kda_state": (("hbm", "l2", "smem", "reg"), "hbm"),
    "activations": (("reg", "smem", "l2", "hbm", "tensor"), "reg"),
    "token_ids": (("host", "hbm"), "host"),
    "tokenizer": (("host",), "host"),
    "request_text": (("host",), "host"),
}


class HierarchyDiagram(Canvas):
    LOGICAL = (800.0, 500.0)
    # the dock's 400-460 px: a steeper-sided, taller pyramid whose rows hold three lines (name, size, speed) in
    # 9.5-point text, instead of the wide one pressed to 0.62 (its 8.5-point texts shrank to 6 px there and the
    # shared-memory speed was cut off)
    NARROW = (560.0, 600.0)
    NARROW_WIDTHS = {"tensor": 280, "reg": 320, "smem": 380, "l2": 420, "hbm": 440, "host": 440}

    def __init__(self, tab: "HierarchyTab"):
        super().__init__(tab)
        self.tab = tab

    def centre_x(self) -> float:
        return 320.0 if self.narrow else 450.0

    def rows(self) -> dict[str, QRectF]:
        cx = self.centre_x()
        spec = {"tensor": (66, 330), "reg": (124, 420), "smem": (188, 500), "l2": (262, 580), "hbm": (336, 660),
                "host": (438, 660)}
        if self.narrow:  # 1.25 times the spacing, 68-unit rows
            return {k: QRectF(cx - self.NARROW_WIDTHS[k] / 2, 62 + (y - 66) * 1.25, self.NARROW_WIDTHS[k], 68)
                    for k, (y, _w) in spec.items()}
        return {k: QRectF(cx - w / 2, y, w, 54) for k, (y, w) in spec.items()}

    def draw(self, p) -> None:
        g = self.tab.gpu()
        lit, main = ITEMS.get(self.tab.item(), ((), None))
        rows = self.rows()
        state = qcolor("state")
        p.setFont(font(12, True))  # shrinks to fit the narrow box (the English title is 614 units at 12 pt)
        p.setPen(TEXT)
        fit_text(p, QRectF(20, 6, self.logical_box()[0] - 30, 28), tr("silicon.hier.canvas_title", gpu=g.name),
                 Qt.AlignLeft | Qt.AlignVCenter)
        # frames: SM and GPU package
        # narrow: the frame starts higher, so its "one SM (x132)" label sits above the tensor-core row, not under it
        sm = rows["tensor"].united(rows["smem"]).adjusted(*((-16, -22, 16, 8) if self.narrow else (-40, -8, 40, 8)))
        pkg = sm.united(rows["hbm"]).adjusted(-10, -6, 10, 22)
        p.setPen(pen(PANEL_EDGE, 1.5, Qt.DashLine))
        p.drawRoundedRect(pkg, 12, 12)
        p.drawRoundedRect(sm, 10, 10)
        text(p, sm.left() + 8, sm.top() + 12, tr("silicon.hier.sm_frame", n=g.sms), 9, DIM, width=200)
        text(p, pkg.right() - 8, pkg.bottom() - 11, tr("silicon.hier.pkg_frame"), 9, DIM,
             align=Qt.AlignRight | Qt.AlignVCenter, width=300)
        smem_bw = g.smem_tbs()
        na = tr("silicon.hier.na")
        info = {
            "tensor": (tr("silicon.hier.tensor"), tr("silicon.hier.tensor_detail"), ""),
            "reg": (tr("silicon.hier.reg"),
                    tr("silicon.hier.per_sm", kb=g.regs_kb_per_sm, mib=f"{g.total_mib(g.regs_kb_per_sm):.1f}")
                    + (tr("silicon.hier.tmem", kb=g.tmem_kb_per_sm) if g.tmem_kb_per_sm else ""), na),
            "smem": (tr("silicon.hier.smem"),
                     tr("silicon.hier.per_sm", kb=g.l1_smem_kb_per_sm, mib=f"{g.total_mib(g.l1_smem_kb_per_sm):.1f}"),
                     tr("silicon.hier.derived_bw", tbs=f"{smem_bw:.1f}", ghz=g.clock_ghz) if smem_bw else na),
            "l2": (tr("silicon.hier.l2"), f"{g.l2_mb:g} MB" if g.l2_mb else na, na),
            "hbm": (tr("silicon.hier.hbm"), f"{g.hbm_gb:g} GB HBM3e", f"{g.hbm_tbs:g} TB/s"),
            "host": (tr("silicon.hier.host"), tr("silicon.hier.host_detail"), tr("silicon.hier.pcie")),
        }
        for key, r in rows.items():
            on = key in lit
            strong = key == main
            fill = mix(PANEL, state, 0.55 if strong else (0.25 if on else 0.0))
            edge = state if on else PANEL_EDGE
            if key == "host":
                p.setPen(pen(PANEL_EDGE, 1.5, Qt.DashLine))
            box(p, r, fill, edge, radius=8, width=2.5 if on else 1.2)
            name, size, bw = info[key]
            text(p, r.left() + 12, r.top() + 16, name, 10, TEXT, True, width=r.width() - 24)
            if self.narrow:  # size and speed each on their own line under the name
                p.setFont(font(9.5))
                p.setPen(TEXT if on else DIM)
                for i, line_text in enumerate(t for t in (size, bw) if t):
                    fit_text(p, QRectF(r.left() + 12, r.top() + 27 + 19 * i, r.width() - 24, 19), line_text,
                             Qt.AlignLeft | Qt.AlignVCenter, min_scale=0.9)
                continue
            p.setFont(font(8.5))
            p.setPen(TEXT if on else DIM)
            fit_text(p, QRectF(r.left() + 12, r.top() + 28, r.width() - 24, 20), size, Qt.AlignLeft | Qt.AlignVCenter)
            if bw:  # right of the name, in what the name leaves (shrunk, then elided: it overlapped the name)
                name_w = QFontMetricsF(font(10, True)).horizontalAdvance(name)
                room = QRectF(r.left() + 12 + name_w + 10, r.top() + 6, r.width() - 34 - name_w, 20)
                p.setFont(font(8.5))
                p.setPen(TEXT if on else DIM)
                fit_text(p, room, bw, Qt.AlignRight | Qt.AlignVCenter)
        # PCIe link between host and HBM
        y0, y1 = pkg.bottom() + 2, rows["host"].top() - 2
        cx = self.centre_x()
        arrow(p, QPointF(cx - 8, y1), QPointF(cx - 8, y0), DIM, 2, 8)
        arrow(p, QPointF(cx + 8, y0), QPointF(cx + 8, y1), DIM, 2, 8)
        text(p, cx + 22, (y0 + y1) / 2, "PCIe", 9, DIM)
        # speed / size axis
        top, bottom = (rows["tensor"].top() + 30, rows["hbm"].bottom() - 10) if self.narrow else (90, 380)
        arrow(p, QPointF(40, bottom), QPointF(40, top), DIM, 2, 8)
        p.setFont(font(9.5 if self.narrow else 8.5))
        p.setPen(DIM)
        p.drawText(QRectF(4, top - 42, 100, 40), int(Qt.AlignLeft | Qt.AlignBottom | Qt.TextWordWrap),
                   tr("silicon.hier.faster"))
        p.drawText(QRectF(4, bottom + 4, 100, 40), int(Qt.AlignLeft | Qt.AlignTop | Qt.TextWordWrap),
                   tr("silicon.hier.larger"))


class HierarchyTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.gpu_label = QLabel()
        self.gpu_combo = QComboBox()
        self.gpu_combo.setObjectName("hier_gpu")
        for k in GPUS:
            self.gpu_combo.addItem(k, k)
        self.items_label = QLabel()
        self.items = QListWidget()
        self.items.setObjectName("hier_items")
        for k in ITEMS:
            it = QListWidgetItem()
            it.setData(Qt.UserRole, k)
            self.items.addItem(it)
        self.items.setCurrentRow(0)
        self.items.setMaximumWidth(230)
        self.diagram = HierarchyDiagram(self)
        self.explain = QLabel()
        self.explain.setObjectName("hier_explain")
        self.explain.setWordWrap(True)
        self.explain.setTextFormat(Qt.RichText)  # bold title; the model's name in it is escaped (rich_tr)
        self.source = note_label()
        self.caveat = note_label()
        top = QHBoxLayout()
        top.addWidget(self.gpu_label)
        top.addWidget(self.gpu_combo)
        top.addStretch(1)
        left = QVBoxLayout()
        left.addWidget(self.items_label)
        left.addWidget(self.items)
        left.addStretch(1)
        mid = self.mid = QHBoxLayout()
        mid.addLayout(left)
        mid.addWidget(self.diagram, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addLayout(mid, 1)
        lay.addWidget(self.explain)
        lay.addWidget(self.source)
        lay.addWidget(self.caveat)
        self.config = None  # the shown model (None: K3); set_config follows another
        self.gpu_combo.currentIndexChanged.connect(guarded(lambda _i: self._update()))
        self.items.currentRowChanged.connect(guarded(lambda _r: self._update()))
        self.retranslate()

    def set_narrow(self, narrow: bool) -> None:
        set_stacked(self.mid, narrow)
        self.items.setMaximumWidth(16777215 if narrow else 230)

    def gpu(self) -> GpuSpec:
        return GPUS[self.gpu_combo.currentData() or "H200"]

    def item(self) -> str:
        it = self.items.currentItem()
        return it.data(Qt.UserRole) if it else "weights"

    def select_item(self, key: str) -> None:
        for i in range(self.items.count()):
            if self.items.item(i).data(Qt.UserRole) == key:
                self.items.setCurrentRow(i)

    @guarded
    def set_config(self, cfg) -> None:
        """Explain the places with the numbers of `cfg` (a ModelConfig; None = K3's)."""
        self.config = cfg
        self._update()

    def _model_fmt(self) -> dict:
        """Format arguments of the explanations: the shown model's cache shape, size and vocabulary."""
        cfg = self.config if self.config is not None else load_default()
        shape = M.CacheShape.from_config(cfg)
        params = cfg.total_params_billion
        mla = M.mla_cache_bytes(1, layers=shape.mla_layers, numbers_per_token=shape.mla_numbers)
        kda = M.kda_state_bytes(layers=shape.kda_layers, heads=shape.kda_heads, d_k=shape.kda_head_dim,
                                d_v=shape.kda_head_dim)
        return dict(
            model=cfg.display_name, vocab=f"{cfg.vocab_size:,}",
            params=(f"{params / 1000:g}T" if params >= 1000 else f"{params:g}B") if params else "?",
            gb=f"{M.k3_estimate(params_billion=params)['weights_gb']:,.1f}" if params else "?",
            b=f"{mla:,.0f}", gib=f"{mla * M.K3_MAX_CONTEXT / M.GIB:.1f}", numbers=shape.mla_numbers,
            mla_layers=shape.mla_layers, kda_layers=shape.kda_layers, heads=shape.kda_heads,
            dim=shape.kda_head_dim, mib=f"{kda / 2**20:,.0f}")

    def _update(self) -> None:
        k = self.item()
        fmt = self._model_fmt()
        key = "kda_state_none" if k == "kda_state" and not fmt["kda_layers"] else k
        self.explain.setText(f"<b>{esc(tr('silicon.hier.item_' + k))}</b> — " + rich_tr("silicon.hier.explain_" + key, **fmt))
        self.source.setText(tr(self.gpu().source_key))
        self.diagram.update()

    def retranslate(self) -> None:
        self.gpu_label.setText(tr("silicon.hier.gpu"))
        self.items_label.setText(tr("silicon.hier.items"))
        for i in range(self.items.count()):
            it = self.items.item(i)
            it.setText(tr("silicon.hier.item_" + it.data(Qt.UserRole)))
        self.caveat.setText(tr("silicon.hier.caveat"))
        row_h = max(self.items.sizeHintForRow(0), self.items.fontMetrics().lineSpacing() + 4)
        self.items.setFixedHeight(row_h * self.items.count() + 2 * self.items.frameWidth() + 6)
        self._update()
