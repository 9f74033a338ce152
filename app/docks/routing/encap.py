"""R2: a request's encapsulation L7 → L1 for three stacks side by side (EtherCAT, OPC UA over opc.tcp,
an LLM HTTPS API). Click a layer block to see what it adds; the envelope bar below shows the frame of that
stack from the wire inwards with the chosen layer's bytes highlighted. Caveats from the seed underneath."""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.docks.routing.anim import EDGE, MUTED, TEXT, begin_paint
from app.i18n import tr
from app.widgets.paint import box, css, draw_text, fit_text, qcolor
from app.slot_guard import guarded

OSI = (7, 6, 5, 4, 3, 2, 1)
# stack -> blocks (top layer, bottom layer, key); keys name i18n entries routing.encap.<key>.name / .adds
STACKS: dict[str, list[tuple[int, int, str]]] = {
    "ethercat": [(7, 3, "ecat.datagram"), (2, 2, "ecat.frame"), (1, 1, "ecat.phy")],
    "opcua": [(7, 6, "opc.binary"), (5, 5, "opc.secure"), (4, 4, "opc.tcp"), (3, 3, "opc.ip"), (2, 2, "opc.eth"),
              (1, 1, "opc.phy")],
    "https": [(7, 7, "llm.http"), (6, 5, "llm.tls"), (4, 4, "llm.tcp"), (3, 3, "llm.ip"), (2, 2, "llm.eth"),
              (1, 1, "llm.phy")],
}
# the frame on the wire, outermost first: (text, owning block key); "payload" = the application's data
ENVELOPES: dict[str, list[tuple[str, str]]] = {
    "ethercat": [("preamble+SFD 8 B", "ecat.phy"), ("MAC 14 B", "ecat.frame"), ("ECAT hdr 2 B", "ecat.datagram"),
                 ("datagram hdr 10 B", "ecat.datagram"), ("process data", "payload"), ("WKC 2 B", "ecat.datagram"),
                 ("FCS 4 B", "ecat.frame")],
    "opcua": [("preamble 8 B", "opc.phy"), ("MAC 14 B", "opc.eth"), ("IPv4 20 B", "opc.ip"), ("TCP 20 B", "opc.tcp"),
              ("UACP hdr 8 B", "opc.tcp"), ("channel+token 8 B", "opc.secure"), ("seq 8 B", "opc.secure"),
              ("UA Binary request", "opc.binary"), ("signature", "opc.secure"), ("FCS 4 B", "opc.eth")],
    "https": [("preamble 8 B", "llm.phy"), ("MAC 14 B", "llm.eth"), ("IPv4 20 B", "llm.ip"), ("TCP 20 B", "llm.tcp"),
              ("TLS rec 5 B", "llm.tls"), ("HTTP + JSON", "llm.http"), ("AEAD tag 16 B", "llm.tls"),
              ("FCS 4 B", "llm.eth")],
}
def block_color(top: int) -> QColor:
    return qcolor(f"osi_l{top}")


def owner_layer(key: str) -> int:
    for blocks in STACKS.values():
        for top, _, k in blocks:
            if k == key:
                return top
    return 7


class StacksDiagram(QWidget):
    block_clicked = Signal(str, str)  # stack, block key

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumSize(400, 420)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self.selected: tuple[str, str] = ("https", "llm.tls")
        self._rects: dict[tuple[str, str], QRectF] = {}

    def geometry_for(self, w: float, h: float, label_w: float = 0.0):
        """(left, top, row_h, col_w); label_w: the widest OSI layer name in the painter's font (the left
        column is at least that wide plus its margins: 'Presentation' ran past 66 px)."""
        narrow = w < 620
        left = max(118.0 if not narrow else 66.0, label_w + 12)
        top = 30.0 if not narrow else 46.0
        bottom_note = 34.0 if not narrow else 46.0
        row_h = (h - top - bottom_note - 6) / 7
        col_w = (w - left - 10) / 3
        return left, top, row_h, col_w

    def block_rect(self, stack: str, key: str) -> QRectF:
        return self._rects.get((stack, key), QRectF())

    @guarded
    def paintEvent(self, event):  # noqa: N802
        p, f = begin_paint(self, 8.5)
        w, h = float(self.width()), float(self.height())
        if w < 620:
            f.setPointSizeF(7.5)
            p.setFont(f)
        metrics = QFontMetricsF(f)
        label_w = max(metrics.horizontalAdvance(tr(f"routing.osi.{layer}")) for layer in OSI)
        left, top, row_h, col_w = self.geometry_for(w, h, label_w if w < 620 else 0.0)
        for i, layer in enumerate(OSI):
            y = top + i * row_h
            p.setPen(MUTED)
            sep = " " if left > 100 else "\n"
            draw_text(p, QRectF(4, y, left - 8, row_h), Qt.AlignVCenter | Qt.AlignLeft | Qt.TextWordWrap,
                      f"L{layer}{sep}{tr(f'routing.osi.{layer}')}")
            pen = QPen(qcolor("grid_line"))
            p.setPen(pen)
            p.drawLine(QPointF(left - 4, y), QPointF(w - 6, y))
        self._rects.clear()
        for c, (stack, blocks) in enumerate(STACKS.items()):
            x = left + c * col_w
            p.setPen(TEXT)
            bold = QFont(f)
            bold.setBold(True)
            p.setFont(bold)
            draw_text(p, QRectF(x, 2, col_w, top - 4), Qt.AlignCenter | Qt.TextWordWrap, tr(f"routing.encap.{stack}"))
            p.setFont(f)
            covered = set()
            for top_l, bot_l, key in blocks:
                i0, i1 = OSI.index(top_l), OSI.index(bot_l)
                covered.update(range(i0, i1 + 1))
                r = QRectF(x + 5, top + i0 * row_h + 2, col_w - 10, (i1 - i0 + 1) * row_h - 4)
                self._rects[(stack, key)] = r
                sel = self.selected == (stack, key)
                box(p, r, block_color(top_l).darker(100 if sel else 170), qcolor("highlight") if sel else EDGE,
                    label=tr(f"routing.encap.{key}.name"), text=TEXT)
                if sel:
                    pen = QPen(qcolor("highlight"))
                    pen.setWidthF(2.2)
                    p.setPen(pen)
                    p.setBrush(Qt.NoBrush)
                    p.drawRoundedRect(r, 5, 5)
            # after the wire: where the request goes next (not OSI)
            note_r = QRectF(x + 5, top + 7 * row_h + 4, col_w - 10, h - (top + 7 * row_h) - 6)
            pen = QPen(MUTED)
            pen.setStyle(Qt.DashLine)
            p.setPen(pen)
            p.setBrush(Qt.NoBrush)
            p.drawRoundedRect(note_r, 4, 4)
            p.setPen(MUTED)
            fit_text(p, note_r.adjusted(2, 1, -2, -1), tr(f"routing.encap.{stack}.after"))  # shrinks at 420 px
        p.end()

    @guarded
    def mousePressEvent(self, event):  # noqa: N802
        pos = event.position()
        for (stack, key), r in self._rects.items():
            if r.contains(pos):
                self.selected = (stack, key)
                self.update()
                self.block_clicked.emit(stack, key)
                return


class EnvelopeBar(QWidget):
    """The selected stack's frame, outermost first; the chosen layer's own bytes highlighted."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumHeight(70)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.stack, self.key = "https", "llm.tls"

    @guarded
    def paintEvent(self, event):  # noqa: N802
        p, f = begin_paint(self, 8)
        rects = self.segment_rects(p.fontMetrics())
        for (text, owner), r in zip(ENVELOPES[self.stack], rects):
            mine = owner == self.key
            color = qcolor("payload") if owner == "payload" else block_color(owner_layer(owner))
            box(p, r, color if mine else color.darker(230), qcolor("highlight") if mine else EDGE, label=text,
                text=TEXT if mine else MUTED, radius=3)
        bottom = max(r.bottom() for r in rects)
        p.setPen(MUTED)
        p.drawText(QRectF(6, bottom + 2, self.width() - 12, 32), Qt.AlignLeft | Qt.AlignTop | Qt.TextWordWrap,
                   tr("routing.encap.envelope_hint"))
        p.end()
        need = int(bottom + 36)
        if need != self.minimumHeight():
            self.setMinimumHeight(need)

    def segment_rects(self, fm) -> list[QRectF]:
        """Segments at their text width, wrapping onto the next line when the bar is narrow."""
        out, x, y = [], 6.0, 6.0
        for text, _ in ENVELOPES[self.stack]:
            wd = fm.horizontalAdvance(text) + 14
            if x + wd > self.width() - 6 and x > 6:
                x, y = 6.0, y + 30
            out.append(QRectF(x, y, wd - 2, 26))
            x += wd
        return out


class EncapTab(QWidget):
    def __init__(self, state=None, parent=None):
        super().__init__(parent)
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        self.stacks = StacksDiagram(self)
        self.stacks.setObjectName("routing.encap.stacks")
        self.detail = QLabel()
        self.detail.setObjectName("routing.encap.detail")
        self.detail.setWordWrap(True)
        self.detail.setTextFormat(Qt.RichText)
        self.detail.setMinimumHeight(54)
        self.envelope = EnvelopeBar(self)
        self.caveats = QLabel()
        self.caveats.setWordWrap(True)
        self.caveats.setTextFormat(Qt.RichText)
        self.caveats.setStyleSheet(f"color: {css('caveat')};")
        lay = QVBoxLayout(self)
        lay.addWidget(self.intro)
        lay.addWidget(self.stacks, 1)
        lay.addWidget(self.envelope)
        lay.addWidget(self.detail)
        lay.addWidget(self.caveats)
        self.stacks.block_clicked.connect(self.show_block)
        self.retranslate()

    @guarded
    def show_block(self, stack: str, key: str):
        self.envelope.stack, self.envelope.key = stack, key
        self.envelope.update()
        self.detail.setText(f"<b>{tr(f'routing.encap.{stack}')} · {tr(f'routing.encap.{key}.name')}</b><br>"
                            f"{tr(f'routing.encap.{key}.adds')}")

    def retranslate(self):
        self.intro.setText(tr("routing.encap.intro"))
        self.caveats.setText("<br>".join(f"• {tr(f'routing.encap.caveat{i}')}" for i in range(1, 5)))
        self.show_block(*self.stacks.selected)
        self.stacks.update()
