"""Latent MoE tab of the expert dock: the real sizes of K3's Stable LatentMoE and the all-to-all bytes.

Sizes come from the shipped configs (assets/configs/kimi-k3.json and kimi-k2.json via compute.config):
    x [hidden] -> W_down -> z [latent] -> k routed experts (+ shared on the full x) -> RMSNorm -> W_up -> y [hidden]
Expert parallelism sends each token's expert input to the GPUs that hold its k experts (dispatch) and brings
the k outputs back (combine). With the latent, what travels is z, not x.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.i18n import tr
from app.widgets.paint import css, qcolor
from app.widgets.safe_text import rich_tr
from app.slot_guard import guarded

BF16_BYTES = 2


def all_to_all_bytes(width: int, destinations: int, bytes_per_value: int = BF16_BYTES) -> int:
    """Bytes one token sends in one direction of an expert-parallel all-to-all in one MoE layer:
    one vector of `width` values to each of `destinations` experts (each assumed on another GPU)."""
    return int(width) * int(destinations) * int(bytes_per_value)


@dataclass
class LatentSizes:
    hidden: int
    latent: int
    top_k: int
    n_experts: int
    n_shared: int
    moe_layers: int
    k2_hidden: int
    k2_top_k: int

    @classmethod
    def from_configs(cls) -> "LatentSizes":
        from compute.config import ModelConfig, available_configs, load_default

        k3 = load_default()
        k2 = ModelConfig.from_json(available_configs()["kimi-k2"])
        return cls(hidden=k3.hidden_size, latent=k3.moe_latent_size or k3.hidden_size, top_k=k3.num_experts_per_tok,
                   n_experts=k3.n_routed_experts, n_shared=k3.n_shared_experts,
                   moe_layers=sum(1 for f in k3.ffn_types if f == "moe"),
                   k2_hidden=k2.moe_latent_size or k2.hidden_size, k2_top_k=k2.num_experts_per_tok)

    @property
    def with_latent(self) -> int:
        return all_to_all_bytes(self.latent, self.top_k)

    @property
    def without_latent(self) -> int:
        return all_to_all_bytes(self.hidden, self.top_k)

    @property
    def k2(self) -> int:
        return all_to_all_bytes(self.k2_hidden, self.k2_top_k)


def _fmt(n: float) -> str:
    return f"{n:,.0f}"


class LatentDiagram(QWidget):
    """x → W↓ → z → k experts + shared → W↑ → y, box heights proportional to vector widths."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.sizes: LatentSizes | None = None
        self.setMinimumSize(400, 260)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)

    @guarded
    def paintEvent(self, event):  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        p.fillRect(self.rect(), qcolor("background"))
        s = self.sizes
        text = qcolor("text")
        if s is None:
            p.setPen(text)
            p.drawText(self.rect(), Qt.AlignCenter, tr("experts.latent.no_config"))
            return
        W, H = self.width(), self.height()
        f = QFont(self.font())
        narrow = W < 640
        f.setPointSizeF(7.5 if narrow else 9)
        p.setFont(f)
        top, bottom = (58.0 if narrow else 34.0), H - (70.0 if narrow else 58.0)
        cw = W * 0.13  # label width per column
        full_h = bottom - top
        mid = (top + bottom) / 2
        act = qcolor("activation")
        weight = qcolor("weight")
        gold = qcolor("expert")
        shared = qcolor("shared")
        xs = [0.04, 0.15, 0.27, 0.50, 0.70, 0.82, 0.94]
        col_w = W * 0.07

        def box(cx, h, color, label, sub=""):
            r = QRectF(W * cx - col_w / 2, mid - h / 2, col_w, h)
            p.setPen(Qt.NoPen)
            p.setBrush(color)
            p.drawRoundedRect(r, 3, 3)
            p.setPen(text)
            p.drawText(QRectF(r.center().x() - cw / 2, 2, cw, 16), Qt.AlignCenter, label)
            if sub:
                if narrow:
                    sub = sub.replace("→", "→\n")
                p.drawText(QRectF(r.center().x() - cw / 2, 18, cw, top - 20), Qt.AlignHCenter | Qt.AlignTop, sub)
            return r

        h_full = full_h * 0.62
        h_lat = h_full * s.latent / s.hidden
        rx = box(xs[0], h_full, act, "x", _fmt(s.hidden))
        rd = box(xs[1], h_full * 0.8, weight, "W↓", f"{_fmt(s.hidden)}→{_fmt(s.latent)}")
        rz = box(xs[2], h_lat, act, "z", _fmt(s.latent))
        # routed experts: k small gold boxes in a column block
        n = s.top_k
        ex_x = W * xs[3]
        ex_h = (h_full * 0.95) / n
        ex_rects = []
        for i in range(n):
            r = QRectF(ex_x - col_w * 0.45, mid - h_full * 0.95 / 2 + i * ex_h + 1, col_w * 0.9, ex_h - 2)
            ex_rects.append(r)
            p.setPen(Qt.NoPen)
            p.setBrush(gold)
            p.drawRect(r)
        p.setPen(text)
        p.drawText(QRectF(ex_x - W * 0.11, 2, W * 0.22, top - 4), Qt.AlignHCenter | Qt.AlignTop | Qt.TextWordWrap,
                   tr("experts.latent.routed", k=n, n=s.n_experts) + "\n" + tr("experts.latent.on_gpus"))
        rn = box(xs[4], h_lat, act, "Σ w·E(z)", tr("experts.latent.rmsnorm"))
        ru = box(xs[5], h_full * 0.8, weight, "W↑", f"{_fmt(s.latent)}→{_fmt(s.hidden)}")
        ry = box(xs[6], h_full, act, "y", _fmt(s.hidden))
        # shared experts: below the flow, on the full x, always on
        sh_text = tr("experts.latent.shared", n=s.n_shared)
        sh_w = p.fontMetrics().horizontalAdvance(sh_text) + 20
        sh = QRectF(W * 0.50 - sh_w / 2, bottom + 8, sh_w, 22)
        p.setPen(Qt.NoPen)
        p.setBrush(shared)
        p.drawRoundedRect(sh, 4, 4)
        p.setPen(qcolor("ink"))
        p.drawText(sh, Qt.AlignCenter, sh_text)
        pen = QPen(text)
        pen.setWidthF(1.2)
        p.setPen(pen)
        p.setBrush(Qt.NoBrush)

        def arrow(a: QPointF, b: QPointF, color=text):
            pn = QPen(color)
            pn.setWidthF(1.4)
            p.setPen(pn)
            p.drawLine(a, b)
            d = b - a
            L = max((d.x() ** 2 + d.y() ** 2) ** 0.5, 1e-6)
            ux, uy = d.x() / L, d.y() / L
            tip = QPainterPath(b)
            tip.lineTo(b - QPointF(7 * ux - 3.5 * uy, 7 * uy + 3.5 * ux))
            tip.lineTo(b - QPointF(7 * ux + 3.5 * uy, 7 * uy - 3.5 * ux))
            tip.closeSubpath()
            p.fillPath(tip, color)

        for a, b in ((rx, rd), (rd, rz), (rn, ru), (ru, ry)):
            arrow(QPointF(a.right(), mid), QPointF(b.left(), mid))
        net = qcolor("packet")
        for r in ex_rects:  # dispatch z -> each expert, combine back
            arrow(QPointF(rz.right(), mid), QPointF(r.left(), r.center().y()), net)
            arrow(QPointF(r.right(), r.center().y()), QPointF(rn.left(), mid), net)
        arrow(QPointF(rx.center().x(), rx.bottom()), QPointF(sh.left(), sh.center().y()), shared)
        arrow(QPointF(sh.right(), sh.center().y()), QPointF(ry.center().x(), ry.bottom()), shared)
        p.setPen(net)
        p.drawText(QRectF(8, bottom + 32, W - 16, H - bottom - 34), Qt.AlignHCenter | Qt.AlignTop | Qt.TextWordWrap,
                   tr("experts.latent.a2a_label", k=n, w=_fmt(s.latent), b=_fmt(s.with_latent)))
        p.end()


class LatentTab(QWidget):
    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.diagram = LatentDiagram(self)
        self.diagram.setObjectName("experts.latent.diagram")
        self.numbers = QLabel()
        self.numbers.setObjectName("experts.latent.numbers")
        self.numbers.setTextFormat(Qt.RichText)
        self.numbers.setWordWrap(True)
        self.caveat = QLabel()
        self.caveat.setWordWrap(True)
        self.caveat.setStyleSheet(f"color: {css('caveat')};")
        lay = QVBoxLayout(self)
        self.diagram.setMaximumHeight(420)
        lay.addWidget(self.diagram, 1)
        lay.addWidget(self.numbers)
        lay.addWidget(self.caveat)
        lay.addStretch(1)
        try:
            self.diagram.sizes = LatentSizes.from_configs()
            self._error = ""
        except Exception as exc:  # a broken config file: say so, keep the dock alive
            self._error = str(exc)
        self.retranslate()

    def retranslate(self):
        s = self.diagram.sizes
        if s is None:
            self.numbers.setText(rich_tr("experts.latent.error", msg=self._error))  # rich label; quotes a config error
        else:
            kib = 1024.0
            self.numbers.setText(tr(
                "experts.latent.numbers",
                k=s.top_k, hidden=_fmt(s.hidden), latent=_fmt(s.latent),
                b_lat=_fmt(s.with_latent), kib_lat=s.with_latent / kib,
                b_full=_fmt(s.without_latent), kib_full=s.without_latent / kib,
                k2k=s.k2_top_k, k2h=_fmt(s.k2_hidden), b_k2=_fmt(s.k2), kib_k2=s.k2 / kib,
                layers=s.moe_layers, per_token=_fmt(2 * s.with_latent * s.moe_layers),
                mib=2 * s.with_latent * s.moe_layers / kib / kib))
        self.caveat.setText(tr("experts.latent.caveat"))
        self.diagram.update()
