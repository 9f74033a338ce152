"""R3: inside one server (CPU + RAM ⇄ PCIe ⇄ GPU HBM ⇄ L2 ⇄ SMs, click a device) and three ways to place K3 on
several GPUs (tensor / pipeline / expert parallel) with what travels between them, sized from the K3 config."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QRadioButton, QVBoxLayout, QWidget

from app.docks.routing.anim import EDGE, MUTED, PANEL, TEXT, AnimatedDiagram
from app.i18n import tr
from app.widgets.paint import along, arrow, box, caption, css, dot, label, line, qcolor
from app.widgets.safe_text import rich_tr
from app.slot_guard import guarded

BF16 = 2
N_GPUS = 4
DEVICES = ("cpu", "ram", "pcie", "hbm", "l2", "sm")


@dataclass
class Placement:
    """Per-token traffic of the three placements for K3 on N GPUs (BF16), from the config."""

    hidden: int
    latent: int
    top_k: int
    n_experts: int
    layers: int
    moe_layers: int
    attnres_blocks: int
    gpus: int = N_GPUS

    @classmethod
    def from_config(cls, gpus: int = N_GPUS) -> "Placement":
        from compute.config import load_default

        c = load_default()
        return cls(c.hidden_size, c.moe_latent_size or c.hidden_size, c.num_experts_per_tok, c.n_routed_experts,
                   c.num_hidden_layers, sum(1 for f in c.ffn_types if f == "moe"), c.attn_res_stored_blocks, gpus)

    @property
    def activation_bytes(self) -> int:
        """One token's hidden vector in BF16."""
        return self.hidden * BF16

    @property
    def tp_bytes_per_layer(self) -> int:
        """Tensor parallel: two AllReduces (after the mixer, after the FFN) of one hidden vector per layer."""
        return 2 * self.activation_bytes

    def pp_ranges(self) -> list[tuple[int, int]]:
        """1-based (first, last) layer of each pipeline stage, as even as possible."""
        base, extra = divmod(self.layers, self.gpus)
        out, start = [], 1
        for g in range(self.gpus):
            n = base + (1 if g < extra else 0)
            out.append((start, start + n - 1))
            start += n
        return out

    @property
    def ep_experts_per_gpu(self) -> int:
        return self.n_experts // self.gpus

    @property
    def ep_dispatch_bytes(self) -> int:
        """Expert parallel: the latent z to each of the top-k experts (upper bound, all on other GPUs)."""
        return self.top_k * self.latent * BF16

    @property
    def ep_dispatch_bytes_full(self) -> int:
        return self.top_k * self.hidden * BF16


class ServerDiagram(AnimatedDiagram):
    device_clicked = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent, (400, 240))
        self.selected = "pcie"
        self._rects: dict[str, QRectF] = {}

    def device_rect(self, key: str) -> QRectF:
        return self._rects.get(key, QRectF())

    def draw(self, p, w, h):
        y = (h - 36) * 0.5 + 4
        r = self._rects
        r["cpu"] = QRectF(w * 0.02, y - 50, w * 0.14, 40)
        r["ram"] = QRectF(w * 0.02, y + 10, w * 0.14, 40)
        r["pcie"] = QRectF(w * 0.22, y - 16, w * 0.13, 32)
        gpu = QRectF(w * 0.40, y - 70, w * 0.57, 140)
        r["hbm"] = QRectF(gpu.left() + 10, gpu.top() + 26, w * 0.12, gpu.height() - 36)
        r["l2"] = QRectF(r["hbm"].right() + w * 0.04, y - 22, w * 0.11, 44)  # "L2 cache" / "L2 캐시" fits at 400 px
        r["sm"] = QRectF(r["l2"].right() + w * 0.04, gpu.top() + 26, gpu.right() - r["l2"].right() - w * 0.04 - 10,
                         gpu.height() - 36)
        box(p, gpu, qcolor("gpu_body"), EDGE)
        label(p, gpu.center().x(), gpu.top() + 12, "GPU", TEXT)
        fills = {"cpu": PANEL, "ram": qcolor("state").darker(280), "pcie": qcolor("pcie"),
                 "hbm": qcolor("state").darker(230), "l2": PANEL, "sm": qcolor("kda").darker(220)}
        for k in DEVICES:
            sel = k == self.selected
            box(p, r[k], fills[k].lighter(150) if sel else fills[k], qcolor("highlight") if sel else EDGE,
                label=tr(f"routing.server.{k}.name"))
        line(p, QPointF(r["cpu"].center().x(), r["cpu"].bottom()), QPointF(r["ram"].center().x(), r["ram"].top()),
             EDGE, 2)
        a_ram = QPointF(r["ram"].right(), r["ram"].center().y())
        path = [a_ram, QPointF(r["pcie"].left(), y), QPointF(r["pcie"].right(), y), QPointF(r["hbm"].left(), y),
                r["hbm"].center(), QPointF(r["hbm"].right(), y), QPointF(r["l2"].left(), y),
                QPointF(r["l2"].right(), y), QPointF(r["sm"].left(), y), r["sm"].center()]
        for a, b in ((path[0], path[1]), (path[2], path[3]), (path[5], path[6]), (path[7], path[8])):
            line(p, a, b, EDGE, 2)
        t = self.phase(4.0)
        dot(p, along(path, t), qcolor("expert"), 5)
        # bandwidth labels (orders of magnitude, H200-class)
        label(p, r["pcie"].center().x(), r["pcie"].top() - 24, "PCIe 5.0 ×16", MUTED, w=120)
        label(p, r["pcie"].center().x(), r["pcie"].top() - 10, "≈ 64 GB/s", MUTED, w=120)
        # under the GPU box, left-aligned with HBM: inside the HBM box it ran past its edges below ~480 px
        label(p, r["hbm"].left(), gpu.bottom() + 11, "HBM ≈ 4.8 TB/s", MUTED, Qt.AlignLeft, w=gpu.width())
        caption(p, w, h, tr("routing.server.caption"))

    @guarded
    def mousePressEvent(self, event):  # noqa: N802
        pos = event.position()
        for k in DEVICES:
            if self._rects.get(k, QRectF()).contains(pos):
                self.selected = k
                self.update()
                self.device_clicked.emit(k)
                return


class PlacementDiagram(AnimatedDiagram):
    def __init__(self, placement: Placement | None, parent=None):
        super().__init__(parent, (400, 200))
        self.pl = placement
        self.mode = "tp"

    def draw(self, p, w, h):
        pl = self.pl
        if pl is None:
            label(p, w / 2, h / 2, tr("routing.place.no_config"), TEXT, w=w)
            return
        n = pl.gpus
        gw = w / n * 0.7
        gap = w / n
        top, gh = 26.0, h - 78
        centers = []
        t = self.phase(2.5)
        for g in range(n):
            x = gap * g + (gap - gw) / 2
            gr = QRectF(x, top, gw, gh)
            box(p, gr, qcolor("gpu_body"), EDGE)
            title = f"GPU{g}"
            if self.mode == "tp":
                full = f"GPU{g} · " + tr("routing.place.tp.slice", n=n)
                title = full if p.fontMetrics().horizontalAdvance(full) < gap - 6 else f"GPU{g} · 1/{n}"
            label(p, gr.center().x(), top - 10, title, TEXT, w=gap)
            centers.append(gr)
            if self.mode == "tp":  # every layer's matrices, this GPU's 1/n column slice bright
                rows_ = 10
                for l in range(rows_):
                    cell = QRectF(gr.left() + 6, gr.top() + 6 + l * (gh - 12) / rows_, gw - 12, (gh - 12) / rows_ - 3)
                    p.fillRect(cell, qcolor("cell_empty"))
                    sl = QRectF(cell.left() + g * cell.width() / n, cell.top(), cell.width() / n, cell.height())
                    p.fillRect(sl, qcolor("kda").darker(120))
            elif self.mode == "pp":
                a, b = pl.pp_ranges()[g]
                p.fillRect(gr.adjusted(6, 6, -6, -6), qcolor("kda").darker(160 + 25 * g))
                label(p, gr.center().x(), gr.center().y(), tr("routing.place.pp.layers", a=a, b=b), TEXT, w=gw)
            else:
                cols = 8
                rows = 7
                cw = (gw - 12) / cols
                ch = min(cw, (gh - 40) / rows)
                for e in range(cols * rows):
                    r_, c_ = divmod(e, cols)
                    p.fillRect(QRectF(gr.left() + 6 + c_ * cw, gr.top() + 30 + r_ * ch, cw - 1.5, ch - 1.5),
                               qcolor("expert").darker(180))
                label(p, gr.center().x(), gr.top() + 16, tr("routing.place.ep.experts", k=pl.ep_experts_per_gpu),
                      TEXT, w=gw)
        ys = top + gh / 2
        if self.mode == "tp":  # ring AllReduce
            for g in range(n):
                a = QPointF(centers[g].right(), ys)
                b = QPointF(centers[(g + 1) % n].left(), ys) if g < n - 1 else QPointF(centers[0].left(), ys + 30)
                if g < n - 1:
                    arrow(p, a, b, EDGE, 1.2)
                    dot(p, along([a, b], t), qcolor("packet"), 4)
            # ring closes: last GPU back to the first, under the boxes
            yb = top + gh + 2
            ring = [QPointF(centers[-1].center().x(), centers[-1].bottom()), QPointF(centers[-1].center().x(), yb + 14),
                    QPointF(centers[0].center().x(), yb + 14), QPointF(centers[0].center().x(), centers[0].bottom())]
            for a_, b_ in zip(ring, ring[1:]):
                line(p, a_, b_, EDGE, 1.2)
            dot(p, along(ring, t), qcolor("packet"), 4)
        elif self.mode == "pp":
            g = int(t * (n - 1))
            f = t * (n - 1) - g
            if g < n - 1:
                a = QPointF(centers[g].right(), ys)
                b = QPointF(centers[g + 1].left(), ys)
                dot(p, along([a, b], f), qcolor("request"), 5)
            for g in range(n - 1):
                arrow(p, QPointF(centers[g].right(), ys), QPointF(centers[g + 1].left(), ys), EDGE, 1.2)
        else:
            for g in range(n):
                for d in range(n):
                    if d != g:
                        a = QPointF(centers[g].center().x(), centers[g].bottom() - 8)
                        b = QPointF(centers[d].center().x(), centers[d].bottom() - 8)
                        mid = QPointF((a.x() + b.x()) / 2, h - 22)
                        dot(p, along([a, mid, b], t), qcolor("expert"), 3)
        caption(p, w, h, tr(f"routing.place.{self.mode}.travel"))


class ServerTab(QWidget):
    def __init__(self, state=None, parent=None):
        super().__init__(parent)
        try:
            self.placement = Placement.from_config()
            self._error = ""
        except Exception as exc:  # broken config: explain inline, keep the dock
            self.placement, self._error = None, str(exc)
        self.server_title = QLabel()
        self.server_title.setWordWrap(True)
        self.server_title.setStyleSheet("font-weight: bold;")
        self.server = ServerDiagram(self)
        self.server.setObjectName("routing.server.diagram")
        self.server_detail = QLabel()
        self.server_detail.setWordWrap(True)
        self.server_detail.setTextFormat(Qt.RichText)
        self.place_title = QLabel()
        self.place_title.setStyleSheet("font-weight: bold;")
        self.buttons = QButtonGroup(self)
        row = QHBoxLayout()
        self.radios = {}
        for i, m in enumerate(("tp", "pp", "ep")):
            rb = QRadioButton()
            rb.setObjectName(f"routing.place.{m}")
            self.buttons.addButton(rb, i)
            self.radios[m] = rb
            row.addWidget(rb)
        row.addStretch(1)
        self.radios["tp"].setChecked(True)
        self.place = PlacementDiagram(self.placement, self)
        self.place.setObjectName("routing.place.diagram")
        self.place_detail = QLabel()
        self.place_detail.setWordWrap(True)
        self.place_detail.setTextFormat(Qt.RichText)
        self.gpu_note = QLabel()
        self.gpu_note.setWordWrap(True)
        self.gpu_note.setStyleSheet(f"color: {css('caveat')};")
        lay = QVBoxLayout(self)
        lay.addWidget(self.server_title)
        lay.addWidget(self.server, 1)
        lay.addWidget(self.server_detail)
        lay.addWidget(self.place_title)
        lay.addLayout(row)
        lay.addWidget(self.place, 1)
        lay.addWidget(self.place_detail)
        lay.addWidget(self.gpu_note)
        self.server.setMaximumHeight(280)
        self.place.setMaximumHeight(330)
        self.server.device_clicked.connect(guarded(lambda k: self._update_server()))
        self.buttons.idClicked.connect(self._on_mode)
        self.retranslate()

    @guarded
    def _on_mode(self, i: int):
        self.place.mode = ("tp", "pp", "ep")[i]
        self.place.update()
        self._update_place()

    def _update_server(self):
        k = self.server.selected
        self.server_detail.setText(f"<b>{tr(f'routing.server.{k}.name')}</b> — {tr(f'routing.server.{k}.text')}")

    def _update_place(self):
        pl = self.placement
        if pl is None:
            self.place_detail.setText(rich_tr("routing.place.error", msg=self._error))  # rich label; quotes an error
            return
        m = self.place.mode
        f = lambda n: f"{n:,}"  # noqa: E731
        if m == "tp":
            text = tr("routing.place.tp.numbers", n=pl.gpus, hidden=f(pl.hidden), act=f(pl.activation_bytes),
                      per_layer=f(pl.tp_bytes_per_layer), layers=pl.layers,
                      total=f(pl.tp_bytes_per_layer * pl.layers))
        elif m == "pp":
            ranges = ", ".join(f"{a}–{b}" for a, b in pl.pp_ranges())
            text = tr("routing.place.pp.numbers", n=pl.gpus, ranges=ranges, act=f(pl.activation_bytes),
                      hidden=f(pl.hidden), blocks=pl.attnres_blocks, boundaries=pl.gpus - 1)
        else:
            text = tr("routing.place.ep.numbers", n=pl.gpus, experts=pl.n_experts, per=pl.ep_experts_per_gpu,
                      k=pl.top_k, latent=f(pl.latent), hidden=f(pl.hidden), lat_b=f(pl.ep_dispatch_bytes),
                      full_b=f(pl.ep_dispatch_bytes_full), layers=pl.moe_layers)
        self.place_detail.setText(text)

    def retranslate(self):
        self.server_title.setText(tr("routing.server.title"))
        self.place_title.setText(tr("routing.place.title"))
        for m, rb in self.radios.items():
            rb.setText(tr(f"routing.place.{m}.name"))
        self.gpu_note.setText(tr("routing.place.note"))
        self._update_server()
        self._update_place()
        self.server.update()
        self.place.update()
