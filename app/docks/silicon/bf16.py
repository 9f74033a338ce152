"""M3: one BF16 value as 16 bits. Type a number (float32 first, then round-to-nearest-even to BF16) or toggle
any bit; sign / exponent / mantissa coloured; the decoded value with its formula; the float32 bits beside
with the dropped half and the rounding decision; special values; facts computed from the format."""
from __future__ import annotations

import math

from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from app.docks.silicon.canvas import DIM, PANEL, TEXT, Canvas
from app.i18n import tr
from app.widgets.controls import ERROR_STYLE, note_label
from app.widgets.paint import box, css, mix, qcolor, text, wrapped
from app.widgets.safe_text import plain
from compute.teaching import bits as B
from compute.config import default_config
from app.slot_guard import guarded

GROUP_ROLE = {"sign": "attnres", "exponent": "activation", "mantissa": "state"}


def group_of(bit_index: int) -> str:
    """Field of a bit of a float32 or BF16 pattern, counting from the most significant bit (0): both formats
    have 1 sign bit and 8 exponent bits; the rest is mantissa."""
    if bit_index == 0:
        return "sign"
    return "exponent" if bit_index <= 8 else "mantissa"


def fmt_value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+∞" if v > 0 else "−∞"
    if v == 0:
        return "−0" if math.copysign(1, v) < 0 else "0"
    return repr(v)


def parse_number(s: str) -> float:
    """User text -> float. Accepts decimals, exponents, inf/∞, nan, unicode minus. Raises ValueError."""
    t = s.strip().replace("−", "-").replace("∞", "inf").replace(",", "").lower()
    if not t:
        raise ValueError("empty")
    return float(t)


class Float32Strip(Canvas):
    """The float32 pattern of the input: 32 cells, the kept upper half coloured by field, the dropped lower
    half grey, and the rounding decision."""

    LOGICAL = (820.0, 150.0)
    NARROW = (440.0, 236.0)  # below 620 px: the kept half above the dropped half, 16 bits a row, full-size text

    def __init__(self, tab: "Bf16Tab"):
        super().__init__(tab)
        self.tab = tab
        self.setMinimumSize(400, 74)

    def draw(self, p) -> None:
        r = self.tab.rounding
        b32 = r["f32_bits"]
        w = self.logical_box()[0]
        text(p, 10, 16, tr("silicon.bf16.f32_title", hex=f"0x{b32:08X}", v=fmt_value(r["f32_value"])), 10, TEXT, True,
             width=w - 20)
        cw, x0, y0 = 24.0, 26.0, 38.0
        if self.narrow:
            self._draw_rows(p, r, b32, cw, x0, y0)
            return
        for i in range(32):
            bit = (b32 >> (31 - i)) & 1
            g = group_of(i)
            x = x0 + i * cw + (6 if i >= 16 else 0)
            kept = i < 16
            col = qcolor(GROUP_ROLE[g]) if kept else DIM
            fill = mix(PANEL, col, 0.85 if bit else 0.18)
            box(p, QRectF(x, y0, cw - 3, 30), fill, col, radius=4, width=1.2)
            text(p, x + (cw - 3) / 2, y0 + 15, str(bit), 11, TEXT if bit or not kept else DIM, True,
                 Qt.AlignCenter, cw)
        text(p, x0 + 8 * cw, y0 + 44, tr("silicon.bf16.kept"), 9, TEXT, align=Qt.AlignHCenter | Qt.AlignVCenter,
             width=380)
        text(p, x0 + 24 * cw + 6, y0 + 44, tr("silicon.bf16.dropped", hex=f"0x{r['lower']:04X}"), 9, DIM,
             align=Qt.AlignHCenter | Qt.AlignVCenter, width=380)
        text(p, 10, 128, tr(f"silicon.bf16.round_{r['decision']}", bf=f"0x{r['bf16_bits']:04X}"), 10,
             qcolor("expert"), True, width=800)

    def _draw_rows(self, p, r, b32: int, cw: float, x0: float, y0: float) -> None:
        """The narrow layout: bits 31..16 (kept, coloured by field) on one row, 15..0 (dropped) under them."""
        for i in range(32):
            bit = (b32 >> (31 - i)) & 1
            kept = i < 16
            x, y = x0 + (i % 16) * cw, y0 + (0 if kept else 62)
            col = qcolor(GROUP_ROLE[group_of(i)]) if kept else DIM
            box(p, QRectF(x, y, cw - 3, 30), mix(PANEL, col, 0.85 if bit else 0.18), col, radius=4, width=1.2)
            text(p, x + (cw - 3) / 2, y + 15, str(bit), 11, TEXT if bit or not kept else DIM, True, Qt.AlignCenter, cw)
        mid = x0 + 8 * cw
        text(p, mid, y0 + 44, tr("silicon.bf16.kept"), 9, TEXT, align=Qt.AlignHCenter | Qt.AlignVCenter, width=400)
        text(p, mid, y0 + 106, tr("silicon.bf16.dropped", hex=f"0x{r['lower']:04X}"), 9, DIM,
             align=Qt.AlignHCenter | Qt.AlignVCenter, width=400)
        wrapped(p, QRectF(10, y0 + 124, 420, 44), tr(f"silicon.bf16.round_{r['decision']}",
                                                     bf=f"0x{r['bf16_bits']:04X}"), 10, qcolor("expert"))


class Bf16Tab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self._syncing = False
        self.config = None  # the shown model (None: K3's shipped config); set_config follows another
        self.pattern = B.bf16_bits(0.75)
        self.rounding = B.bf16_rounding(0.75)
        self.input_label = QLabel()
        self.input = QLineEdit("0.75")
        self.input.setObjectName("bf16_input")
        self.input.setMaximumWidth(260)
        self.error = QLabel()
        self.error.setObjectName("bf16_error")
        plain(self.error)  # quotes what was typed
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.specials: list[tuple[QPushButton, float]] = []
        special_values = [("+0", 0.0), ("−0", -0.0), ("1", 1.0), ("0.1", 0.1), ("min_sub", B.bf16_facts()["min_subnormal"]),
                          ("max", B.bf16_facts()["max_finite"]), ("+∞", math.inf), ("−∞", -math.inf), ("NaN", math.nan)]
        srow = QVBoxLayout()
        self.special_label = QLabel()
        srow.addWidget(self.special_label)
        sgrid = QGridLayout()
        sgrid.setSpacing(4)
        srow.addLayout(sgrid)
        for n, (name, val) in enumerate(special_values):
            b = QPushButton()
            b.setObjectName(f"bf16_special_{name}")
            b.setProperty("label_key", name)
            b.clicked.connect(guarded(lambda _c=False, v=val: self.set_number(v)))
            sgrid.addWidget(b, n // 4, n % 4)
            self.specials.append((b, val))
        sgrid.setColumnStretch(4, 1)
        irow = QHBoxLayout()
        irow.addWidget(self.input_label)
        irow.addWidget(self.input)
        irow.addWidget(self.error, 1)
        # the 16 bits
        grid = QGridLayout()
        grid.setHorizontalSpacing(1)
        self.group_labels = {}
        for g, (col, span) in {"sign": (0, 1), "exponent": (1, 8), "mantissa": (9, 7)}.items():
            lab = QLabel()
            lab.setAlignment(Qt.AlignCenter)
            lab.setWordWrap(True)
            if g == "sign":
                lab.setFixedWidth(25)
            c = qcolor(GROUP_ROLE[g])
            size = "10px" if g == "sign" else "12px"
            lab.setStyleSheet(f"color: rgb({c.red()},{c.green()},{c.blue()}); font-weight: bold; font-size: {size};")
            grid.addWidget(lab, 0, col, 1, span)
            self.group_labels[g] = lab
        self.bit_buttons: list[QPushButton] = []
        for i in range(16):
            b = QPushButton()
            b.setCheckable(True)
            b.setObjectName(f"bf16_bit{15 - i}")
            b.setFixedSize(25, 36)
            c = qcolor(GROUP_ROLE[group_of(i)])
            rgb = f"{c.red()},{c.green()},{c.blue()}"
            b.setStyleSheet(
                f"QPushButton {{ background: {css('bit_off')}; color: {css('bit_text')}; border: 2px solid rgb({rgb});"
                f" border-radius: 4px; font: bold 13px; padding: 0px; }}"
                f"QPushButton:checked {{ background: rgb({rgb}); color: {css('ink')}; }}")
            b.toggled.connect(guarded(lambda _c, i=i: self._bit_toggled()))
            grid.addWidget(b, 1, i)
            idx = QLabel(str(15 - i))
            idx.setAlignment(Qt.AlignCenter)
            idx.setStyleSheet(f"color: {css('note')}; font-size: 10px;")
            grid.addWidget(idx, 2, i)
            self.bit_buttons.append(b)
        grid.setColumnStretch(16, 1)
        self.value = QLabel()
        self.value.setObjectName("bf16_value")
        self.value.setStyleSheet("font-size: 20px; font-weight: bold;")
        self.value.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.formula = QLabel()
        self.formula.setObjectName("bf16_formula")
        self.formula.setWordWrap(True)
        self.formula.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.strip = Float32Strip(self)
        self.facts_title = QLabel()
        self.facts_title.setStyleSheet("font-weight: bold;")
        self.facts = QLabel()
        self.facts.setObjectName("bf16_facts")
        self.facts.setWordWrap(True)
        plain(self.facts)  # names the model (its config's display_name)
        self.facts.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.note = note_label()
        lay = QVBoxLayout(self)
        lay.addLayout(irow)
        lay.addLayout(srow)
        lay.addSpacing(6)
        lay.addLayout(grid)
        lay.addWidget(self.value)
        lay.addWidget(self.formula)
        lay.addWidget(self.strip)
        lay.addWidget(self.facts_title)
        lay.addWidget(self.facts)
        lay.addWidget(self.note)
        lay.addStretch(1)
        self.input.textEdited.connect(self._typed)
        self._sync_buttons()
        self.retranslate()

    # --- input paths ---
    @guarded
    def _typed(self, s: str) -> None:
        try:
            x = parse_number(s)
        except ValueError:
            self.error.setText(tr("silicon.bf16.bad_number", text=s.strip()[:40]))
            return
        self.error.setText("")
        self._apply(x)

    def set_number(self, x: float) -> None:
        """Programmatic / special-value entry: shows the number in the box and applies it."""
        self.input.setText(fmt_value(x))
        self.error.setText("")
        self._apply(x)

    def _apply(self, x: float) -> None:
        self.rounding = B.bf16_rounding(x)
        self.pattern = self.rounding["bf16_bits"]
        self._sync_buttons()
        self._update_texts()

    def _bit_toggled(self) -> None:
        if self._syncing:
            return
        pat = 0
        for i, b in enumerate(self.bit_buttons):
            pat |= int(b.isChecked()) << (15 - i)
        self.pattern = pat
        v = B.bf16_from_bits(pat)
        self.rounding = B.bf16_rounding(v)  # an exact BF16 value: float32 lower half is 0
        self.input.setText(fmt_value(v))
        self.error.setText("")
        self._update_texts()

    def _sync_buttons(self) -> None:
        self._syncing = True
        for i, b in enumerate(self.bit_buttons):
            b.setChecked(bool((self.pattern >> (15 - i)) & 1))
            b.setText(str((self.pattern >> (15 - i)) & 1))
        self._syncing = False

    # --- text ---
    def _update_texts(self) -> None:
        for i, b in enumerate(self.bit_buttons):
            b.setText(str((self.pattern >> (15 - i)) & 1))
        s, e, m = B.split_bf16(self.pattern)
        v = B.bf16_value(s, e, m)
        kind = B.classify(s, e, m)
        sign_txt = "−" if s else "+"
        self.value.setText(tr("silicon.bf16.value", v=fmt_value(v), hex=f"0x{self.pattern:04X}",
                              kind=tr(f"silicon.bf16.kind_{kind}")))
        fields = f"{s} {e:08b} {m:07b}"
        if kind == "normal":
            f = tr("silicon.bf16.formula_normal", s=s, e=e, m=m, mant=repr(1 + m / 128), p=e - 127, v=fmt_value(v))
        elif kind in ("subnormal", "zero"):
            f = tr("silicon.bf16.formula_sub", s=s, m=m, v=fmt_value(v))
        elif kind == "inf":
            f = tr("silicon.bf16.formula_inf", sign=sign_txt)
        else:
            f = tr("silicon.bf16.formula_nan")
        self.formula.setText(tr("silicon.bf16.fields", fields=fields, s=s, e=e, m=m) + "\n" + f)
        self.strip.update()

    @guarded
    def set_config(self, cfg) -> None:
        """The facts name the shown model's row and embedding-table sizes (a ModelConfig)."""
        self.config = cfg
        self.retranslate()

    def retranslate(self) -> None:
        self.input_label.setText(tr("silicon.bf16.input"))
        self.special_label.setText(tr("silicon.bf16.specials"))
        for b, _v in self.specials:
            key = b.property("label_key")
            b.setText(tr(f"silicon.bf16.special_{key}") if key in ("min_sub", "max") else key)
        self.group_labels["sign"].setText(tr("silicon.bf16.sign"))
        self.group_labels["exponent"].setText(tr("silicon.bf16.exponent"))
        self.group_labels["mantissa"].setText(tr("silicon.bf16.mantissa"))
        self.facts_title.setText(tr("silicon.bf16.facts_title"))
        f = B.bf16_facts()
        cfg = self.config if self.config is not None else default_config()
        row = B.bytes_for(cfg.hidden_size)  # one hidden state / embedding row of the shown model
        emb = cfg.vocab_size * row
        lines = [
            tr("silicon.bf16.fact_row_of", n=f"{cfg.hidden_size:,}", bytes=f"{row:,}", model=cfg.display_name),
            tr("silicon.bf16.fact_row4096", bytes=f"{B.bytes_for(4096):,}", kib=f"{B.bytes_for(4096) / 1024:g}"),
            tr("silicon.bf16.fact_embedding_of", bytes=f"{emb:,}", gb=f"{emb / 1e9:.2f}", model=cfg.display_name,
               rows=f"{cfg.vocab_size:,}", row=f"{row:,}"),
            tr("silicon.bf16.fact_eps", eps=repr(f["epsilon"])),
            tr("silicon.bf16.fact_range", max=f"{f['max_finite']:.4e}", min=f"{f['min_normal']:.4e}",
               sub=f"{f['min_subnormal']:.4e}"),
        ]
        self.facts.setText("\n".join("• " + s for s in lines))
        self.note.setText(tr("silicon.bf16.note"))
        if self.error.text():
            self._typed(self.input.text())
        self._update_texts()
