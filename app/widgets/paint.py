"""QPainter helpers shared by every dock's diagrams, and the one table of colours they use.

Colours are named roles: the block kinds of scene/palette.py (kda, mla, expert, state, background, text, …)
plus the diagram roles below (wires, panels, edges, packets, highlights …). Code asks `qcolor(role)` instead of
writing RGB literals, so a colour is defined once. Shapes take QPointF / QRectF in the painter's coordinates.
"""
from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen

from scene.palette import ROLES as SCENE_ROLES
from scene.palette import role_qcolor_tuple

# diagram roles -> RGBA 0..255 (the block kinds come from scene/palette.py)
UI_ROLES: dict[str, tuple[int, int, int, int]] = {
    "dim": (120, 128, 140, 255),  # secondary text and arrows on a canvas
    "muted": (140, 148, 160, 255),  # captions and labels of the routing diagrams
    "wire": (150, 158, 170, 255),  # an idle wire / bit line
    "wire_off": (70, 76, 88, 255),  # an unused router wire
    "hot": (255, 214, 90, 255),  # an active word line / driven bit line
    "dark": (60, 66, 78, 255),  # an empty capacitor / unpowered part
    "panel": (38, 43, 52, 255),  # a box in a routing diagram
    "panel_deep": (24, 27, 33, 255),  # a box on a silicon canvas
    "panel_edge": (58, 64, 76, 255),  # the edge of a silicon box
    "edge": (90, 98, 112, 255),  # the edge of a routing box, a link
    "grid_line": (45, 50, 60, 255),  # the layer rails of the encapsulation stack
    "payload": (60, 64, 72, 255),  # the user data inside the envelopes
    "gpu_body": (28, 34, 42, 255),  # a GPU's outline fill
    "cell_empty": (44, 52, 62, 255),  # an empty memory cell / slot
    "bar_track": (34, 38, 46, 255),  # the empty part of a bar
    "bar_off": (96, 108, 128, 255),  # a bar that was not selected
    "highlight": (255, 255, 255, 255),  # the edge of the selected box
    "ink": (20, 20, 20, 255),  # text on a bright fill
    "focus": (80, 230, 255, 255),  # the expert the app has selected
    "packet": (120, 220, 140, 255),  # a network packet / the all-to-all traffic
    "packet_fill": (30, 60, 40, 255),  # a packet header box
    "request": (110, 170, 255, 255),  # a memory request
    "network_node": (44, 60, 80, 255),  # the routers on the packet's path
    "link": (70, 80, 96, 255),  # a GPU ↔ NVSwitch link
    "link_dim": (60, 70, 84, 255),  # the outline of the GPU ring
    "switch": (50, 44, 70, 255),  # the NVSwitch
    "router": (60, 50, 20, 255),  # the MoE router box
    "pcie": (60, 50, 30, 255),  # the PCIe bus
    "route": (245, 178, 46, 70),  # a token → expert route, faint
    "expert_bar": (120, 40, 0, 255),  # the score bars of the expert grid
    "error": (255, 112, 112, 255),  # an error message
    "good": (31, 157, 106, 255),  # "it fits"
    "note": (138, 147, 160, 255),  # a side note
    "caveat": (107, 115, 128, 255),  # the "constructed / not to scale" line
    "bad": (217, 83, 79, 255),  # a wrong quiz answer (on white text)
    "phase_a": (47, 127, 216, 255),  # trace phase A: prefill
    "phase_b": (217, 130, 43, 255),  # trace phase B: decode
    "badge_fill": (58, 51, 32, 255),  # the "toy, not K3" badge of the routing toy
    "badge_text": (245, 210, 138, 255),
    "code_fill": (24, 27, 33, 255),  # the background of a formula block
    "code_text": (220, 224, 230, 255),
    "bit_off": (28, 31, 38, 255),  # a BF16 bit that is 0
    "bit_text": (150, 158, 170, 255),
    "table_head": (42, 47, 56, 255),  # a light HTML table: header row, rows, text, rules
    "table_row": (255, 255, 255, 255),
    "table_row_alt": (244, 246, 248, 255),
    "table_text": (27, 31, 36, 255),
    "table_rule": (201, 206, 214, 255),
    "osi_l1": (150, 80, 50, 255),  # the encapsulation stack's layers, physical (1) up to application (7)
    "osi_l2": (150, 120, 40, 255),
    "osi_l3": (48, 140, 96, 255),
    "osi_l4": (40, 130, 140, 255),
    "osi_l5": (52, 110, 160, 255),
    "osi_l6": (70, 88, 160, 255),
    "osi_l7": (92, 72, 150, 255),
    "caption_band": (12, 14, 20, 255),  # an animation's caption band below the picture, its title and text
    "caption_title": (255, 255, 255, 255),
    "caption_text": (220, 226, 235, 255),
    "status_note_fill": (245, 197, 66, 255),  # the status bar's engine note (CUDA fell back to the CPU …)
    "status_note_text": (26, 26, 26, 255),
    "form_error": (229, 72, 77, 255),  # a dialog's error line (the export dialog)
    "answer_fill": (17, 20, 26, 255),  # the answer strip under the 3D view: background,
    "answer_bar": (240, 160, 48, 255),  # the probability bars (the scene's routed-expert amber: "chosen"),
    "answer_edge": (138, 147, 166, 255),  # the bars' "before temperature and top-p" outline,
    "answer_text": (230, 233, 239, 255),  # the drawn word, the other words and the out-of-language warning
    "answer_muted": (154, 163, 181, 255),
    "answer_warn": (255, 180, 84, 255),
    "answer_knockout": (255, 112, 118, 255),  # the strip's knock-out line (the 3D view's knock-out red, lighter)
    "tour_highlight": (255, 196, 64, 255),  # the guided tour's outline of its chapter's part (app/window/tour.py)
}


def head_qcolor(h: int, alpha: float = 1.0) -> QColor:
    """Attention head h's colour, as the 3D arcs draw it (scene/attention_arcs.HEAD_COLOURS)."""
    from scene.attention_arcs import head_colour

    return QColor.fromRgbF(*head_colour(h), float(alpha))


_overflows: list[tuple[str, float, float]] | None = None  # see record_overflows()


class record_overflows:
    """`with record_overflows() as found:` every text that box(), label(), text(), wrapped() or caption() draw
    past its rectangle (wider or taller than it, in the painter's font) is added to `found` as
    (text, needed width, rectangle width): the check behind tests/app/test_diagram_text_fits.py."""

    def __enter__(self) -> list[tuple[str, float, float]]:
        global _overflows
        self._saved, _overflows = _overflows, []
        return _overflows

    def __exit__(self, *_exc) -> bool:
        global _overflows
        _overflows = self._saved
        return False


_texts: list[tuple[str, float, bool]] | None = None  # see record_texts()


class record_texts:
    """`with record_texts() as seen:` every text drawn through draw_text() or fit_text() is added to `seen` as
    (text, its font's size in device pixels — the painter's scaling included —, elided): a drawing scaled
    down to fit its widget shows as small pixel sizes, a text cut short by fit_text() as elided. The check
    behind tests/app/test_dock_tabs_fit.py."""

    def __enter__(self) -> list[tuple[str, float, bool]]:
        global _texts
        self._saved, _texts = _texts, []
        return _texts

    def __exit__(self, *_exc) -> bool:
        global _texts
        _texts = self._saved
        return False


def _note_text(p: QPainter, s: str, font: QFont, elided: bool = False) -> None:
    if _texts is not None and s:
        scale = abs(p.deviceTransform().m22()) or 1.0
        px = font.pixelSize() if font.pixelSize() > 0 else font.pointSizeF() * p.device().logicalDpiY() / 72
        _texts.append((s, round(px * scale, 1), elided))


def draw_text(p: QPainter, rect: QRectF, flags, s: str) -> None:
    """p.drawText(rect, flags, s), noting an overflow while record_overflows() is on (and the text's size while
    record_texts() is)."""
    _note_text(p, s, p.font())
    if _overflows is not None and s:
        took = QFontMetricsF(p.font()).boundingRect(rect, int(flags), s)
        if took.width() > rect.width() + 0.5 or took.height() > rect.height() + 0.5:
            _overflows.append((s, round(took.width(), 1), round(rect.width(), 1)))
    p.drawText(rect, int(flags), s)


def qcolor(role: str, alpha: int | None = None) -> QColor:
    """The colour of a role (scene/palette.py block kinds and UI_ROLES), optionally with another alpha."""
    if role in UI_ROLES:
        c = QColor(*UI_ROLES[role])
    elif role in SCENE_ROLES:
        c = QColor(*role_qcolor_tuple(role))
    else:
        raise KeyError(f"unknown colour role {role!r}")
    if alpha is not None:
        c.setAlpha(alpha)
    return c


def css(role: str) -> str:
    """A role as a style-sheet colour ("#rrggbb")."""
    return qcolor(role).name()


def css_rgba(role: str, alpha: int) -> str:
    c = qcolor(role)
    return f"rgba({c.red()},{c.green()},{c.blue()},{alpha})"


def mix(a: QColor, b: QColor, t: float) -> QColor:
    """Linear blend a -> b, t in [0, 1]."""
    t = min(1.0, max(0.0, t))
    return QColor(int(a.red() + (b.red() - a.red()) * t), int(a.green() + (b.green() - a.green()) * t),
                  int(a.blue() + (b.blue() - a.blue()) * t), int(a.alpha() + (b.alpha() - a.alpha()) * t))


FONT_FAMILIES = ["DejaVu Sans", "Noto Sans CJK KR"]  # Latin + combining marks from DejaVu, Hangul from Noto
MONO_FAMILIES = ["DejaVu Sans Mono", "Noto Sans Mono CJK KR"]
# The same two families for rich text. Qt's <code> and 'font-family:monospace' name one family, so a line holding
# Hangul is shaped as one item in the fallback CJK mono face, digits and Latin included (narrower, a size
# smaller); a family list lets every character take DejaVu Sans Mono first and only Hangul the CJK face.
MONO_CSS = "font-family:DejaVu Sans Mono,Noto Sans Mono CJK KR,monospace"  # unquoted names: fits in either quote


def mono_html(escaped: str) -> str:
    """Escaped text as a monospace rich-text span whose Latin, digits and Hangul keep one size."""
    return f"<span style=\"{MONO_CSS}\">{escaped}</span>"


def mono_font(like: QFont | None = None) -> QFont:
    """A widget font in the two mono families, at `like`'s size (the application font's by default)."""
    f = QFont(like) if like is not None else QFont()
    f.setFamilies(MONO_FAMILIES)
    f.setStyleHint(QFont.Monospace)
    return f


def font(pt: float, bold: bool = False, mono: bool = False) -> QFont:
    f = QFont(MONO_FAMILIES if mono else FONT_FAMILIES)
    f.setPointSizeF(pt)
    f.setBold(bold)
    return f


def pen(color: QColor, width: float = 2.0, style=Qt.SolidLine) -> QPen:
    q = QPen(color, width, style)
    q.setCapStyle(Qt.RoundCap)
    q.setJoinStyle(Qt.RoundJoin)
    return q


def box(p: QPainter, rect: QRectF, fill: QColor | None = None, edge: QColor | None = None, *, label: str = "",
        text: QColor | None = None, radius: float = 5.0, width: float = 1.2,
        flags=Qt.AlignCenter | Qt.TextWordWrap) -> QRectF:
    """A rounded box (fill, edge of `width`), with `label` drawn inside in the painter's font."""
    p.setPen(pen(qcolor("edge") if edge is None else edge, width))
    p.setBrush(qcolor("panel") if fill is None else fill)
    p.drawRoundedRect(rect, radius, radius)
    p.setBrush(Qt.NoBrush)
    if label:
        p.setPen(qcolor("text") if text is None else text)
        draw_text(p, rect.adjusted(3, 2, -3, -2), flags, label)
    return rect


def line(p: QPainter, a: QPointF, b: QPointF, color: QColor | None = None, width: float = 1.5, style=Qt.SolidLine):
    q = QPen(qcolor("edge") if color is None else color)
    q.setWidthF(width)
    q.setStyle(style)
    p.setPen(q)
    p.drawLine(a, b)


def arrow(p: QPainter, a: QPointF, b: QPointF, color: QColor | None = None, width: float = 1.5,
          head: float = 7.0) -> None:
    """A line a -> b with a filled head `head` long (half as wide on each side) at b."""
    color = qcolor("edge") if color is None else color
    line(p, a, b, color, width)
    d = b - a
    n = math.hypot(d.x(), d.y()) or 1.0
    ux, uy = d.x() / n, d.y() / n
    tip = QPainterPath(b)
    tip.lineTo(b - QPointF(head * ux - head * 0.5 * uy, head * uy + head * 0.5 * ux))
    tip.lineTo(b - QPointF(head * ux + head * 0.5 * uy, head * uy - head * 0.5 * ux))
    tip.closeSubpath()
    p.fillPath(tip, color)


def dot(p: QPainter, c: QPointF, color: QColor, r: float = 5.0) -> None:
    p.setPen(Qt.NoPen)
    p.setBrush(color)
    p.drawEllipse(c, r, r)
    p.setBrush(Qt.NoBrush)


def text(p: QPainter, x: float, y: float, s: str, pt: float = 10, color: QColor | None = None, bold: bool = False,
         align=Qt.AlignLeft | Qt.AlignVCenter, width: float = 400, mono: bool = False) -> None:
    """Draw s in its own font anchored at (x, y): align picks which edge/centre of a width × 40 box sits on
    the point."""
    p.setFont(font(pt, bold, mono))
    p.setPen(qcolor("text") if color is None else color)
    if align & Qt.AlignHCenter:
        left = x - width / 2
    elif align & Qt.AlignRight:
        left = x - width
    else:
        left = x
    draw_text(p, QRectF(left, y - 20, width, 40), int(align), s)


def wrapped(p: QPainter, rect: QRectF, s: str, pt: float = 9, color: QColor | None = None) -> None:
    p.setFont(font(pt))
    p.setPen(qcolor("text") if color is None else color)
    draw_text(p, rect, int(Qt.TextWordWrap | Qt.AlignLeft | Qt.AlignTop), s)


def label(p: QPainter, x: float, y: float, s: str, color: QColor | None = None, align=Qt.AlignCenter,
          w: float = 160) -> None:
    """One line in the painter's font, 18 high, anchored at (x, y) by `align`."""
    p.setPen(qcolor("muted") if color is None else color)
    if align & Qt.AlignLeft:
        rect = QRectF(x, y - 9, w, 18)
    elif align & Qt.AlignRight:
        rect = QRectF(x - w, y - 9, w, 18)
    else:
        rect = QRectF(x - w / 2, y - 9, w, 18)
    draw_text(p, rect, align | Qt.AlignVCenter, s)


def caption(p: QPainter, w: float, h: float, s: str, color: QColor | None = None) -> None:
    """A caption at the foot of a w × h diagram, wrapped onto two lines when the diagram is narrow."""
    p.setPen(qcolor("muted") if color is None else color)
    draw_text(p, QRectF(5, h - 36, w - 10, 33), Qt.AlignHCenter | Qt.AlignBottom | Qt.TextWordWrap, s)


def along(points: list[QPointF], t: float) -> QPointF:
    """Point at fraction t (0..1) of the polyline's length."""
    segs = [(a, b, math.hypot(b.x() - a.x(), b.y() - a.y())) for a, b in zip(points, points[1:])]
    total = sum(s[2] for s in segs) or 1.0
    d = max(0.0, min(1.0, t)) * total
    for a, b, length in segs:
        if d <= length:
            f = d / length if length else 0.0
            return QPointF(a.x() + (b.x() - a.x()) * f, a.y() + (b.y() - a.y()) * f)
        d -= length
    return points[-1]


def fit_text(p: QPainter, rect: QRectF, s: str, flags=Qt.AlignCenter | Qt.TextWordWrap,
             min_scale: float = 0.7) -> QRectF:
    """Draw s inside rect in the painter's font, wrapped, shrunk step by step (down to min_scale of its size)
    until it fits; a text that still does not fit is elided on one line. Never draws outside rect; returns
    the rectangle the text took."""
    base = QFont(p.font())
    f = QFont(base)
    scale = 1.0
    while True:
        f.setPointSizeF(base.pointSizeF() * scale)
        took = QFontMetricsF(f).boundingRect(rect, int(flags), s)
        fits = took.width() <= rect.width() + 0.5 and took.height() <= rect.height() + 0.5
        if fits or scale <= min_scale + 1e-9:
            break
        scale = max(min_scale, scale - 0.05)
    if not fits:
        flags = int(flags) & ~int(Qt.TextWordWrap)
        s = QFontMetricsF(f).elidedText(s, Qt.ElideRight, rect.width())
        took = QFontMetricsF(f).boundingRect(rect, flags, s)
    _note_text(p, s, f, elided=not fits)
    p.setFont(f)
    p.drawText(rect, int(flags), s)
    p.setFont(base)
    return took
