"""Scene labels: ONE QPainter overlay drawn with Qt fonts (CJK capable) on the widget and on exported images.

Labels are anchored to blocks of the layout, projected with the same camera, and placed by priority; a label
that would overlap one already placed is skipped (so nothing is drawn on top of anything else).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QLinearGradient, QPainter, QPen

from scene import palette
from scene.camera import Camera, project
from scene.layout import Layout

FONT_FAMILIES = ["Noto Sans CJK KR", "Noto Sans KR", "Noto Sans CJK SC", "DejaVu Sans", "Sans Serif"]


def make_font(px: float, bold: bool = False) -> QFont:
    f = QFont()
    f.setFamilies(FONT_FAMILIES)
    f.setPixelSize(max(6, int(round(px))))
    f.setBold(bold)
    f.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    return f


def qcolor(role_or_rgba, alpha: float | None = None) -> QColor:
    rgba = palette.role(role_or_rgba) if isinstance(role_or_rgba, str) else role_or_rgba
    c = QColor.fromRgbF(*[float(v) for v in rgba[:3]], float(rgba[3] if alpha is None else alpha))
    return c


@dataclass
class OverlayInput:
    layout: Layout
    camera: Camera
    tr: callable
    selected: str | None = None
    hovered: str | None = None
    has_trace: bool = False
    tokens: list | None = None  # pieces per drawn row
    step_note: str = ""  # text for the current trace step (S7)
    flow_on: bool = False
    extra_labels: list | None = None  # [(world point, text, role)]


def _rect_free(r: QRectF, taken: list[QRectF]) -> bool:
    return not any(r.intersects(t) for t in taken)


def draw_overlay(p: QPainter, inp: OverlayInput, width: float, height: float, scale: float = 1.0,
                 with_tokens: bool = True) -> list[QRectF]:
    """Draw every label and the legend for a width x height view (logical px; scale multiplies fonts).

    Returns the rectangles taken. with_tokens=False leaves out the token names by the rows (the only labels
    that change when a knob changes the sampled tokens): draw_token_names adds them over such a picture."""
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    lay, cam, tr = inp.layout, inp.camera, inp.tr
    s = scale
    taken: list[QRectF] = []
    f_title = make_font(17 * s, True)
    f_sub = make_font(12 * s)
    f_name = make_font(11.5 * s, True)
    f_shape = make_font(10 * s)
    f_small = make_font(10 * s)
    text_c = qcolor("text")
    dim_c = QColor(170, 176, 190)

    # ---- HUD: title (top-left) ----------------------------------------------------------------------
    L = lay.layer + 1
    dims = lay.dims
    mixer = dims.mixers[lay.layer] if lay.layer < len(dims.mixers) else "kda"
    ffn = dims.ffns[lay.layer] if lay.layer < len(dims.ffns) else "moe"
    title = tr("scene.title")
    sub = tr("scene.subtitle", layer=L, n=dims.n_layers, mixer=tr(f"scene.mixer.{mixer}"),
             ffn=tr(f"scene.ffn.{ffn}"))
    x0, y0 = 16 * s, 12 * s
    p.setFont(f_title)
    fm = QFontMetricsF(f_title)
    p.setPen(text_c)
    p.drawText(QPointF(x0, y0 + fm.ascent()), title)
    y = y0 + fm.height() + 2 * s
    p.setFont(f_sub)
    fm2 = QFontMetricsF(f_sub)
    p.setPen(qcolor(mixer))
    p.drawText(QPointF(x0, y + fm2.ascent()), sub)
    y += fm2.height()
    p.setPen(dim_c)
    p.drawText(QPointF(x0, y + fm2.ascent()), tr("scene.rows_cols"))
    y += fm2.height()
    if inp.step_note:
        p.setPen(QColor(255, 214, 120))
        p.drawText(QPointF(x0, y + fm2.ascent()), inp.step_note)
        y += fm2.height()
    taken.append(QRectF(0, 0, max(fm.horizontalAdvance(title), fm2.horizontalAdvance(sub),
                                  fm2.horizontalAdvance(tr("scene.rows_cols")),
                                  fm2.horizontalAdvance(inp.step_note)) + 40 * s, y + 4 * s))

    # ---- legend (bottom-left) -----------------------------------------------------------------------
    _draw_legend(p, inp, width, height, s, taken)

    # ---- block labels ---------------------------------------------------------------------------------
    cands = []  # (priority, anchor world, name, shape, role, block id)
    for b in lay.blocks:
        if not b.label:
            continue
        if b.part == "bracket":
            anchor = np.array([b.lo[0] - 0.1, b.lo[1], b.center[2]])
            cands.append((3, anchor, tr("scene.bracket", n=b.meta["index"]), b.k3_shape, "attnres", b.id, "left"))
            continue
        anchor = np.array([b.center[0], b.lo[1], b.hi[2] + 0.06])
        pri = 1 if b.id in (inp.selected, inp.hovered) else (2 if b.family != "stack" else 2)
        name = tr(b.label_key) if b.label_key else b.kind
        cands.append((pri, anchor, name, b.k3_shape, b.role, b.id, "above"))
    # stack layer numbers + the selected layer marker
    for b in lay.blocks:
        if b.part == "slab" and (b.layer in (1, dims.n_layers) or b.layer % 12 == 0 or b.layer == L):
            anchor = np.array([b.hi[0] + 0.15, b.lo[1], b.center[2]])
            txt = f"▶ {b.layer}" if b.layer == L else str(b.layer)
            cands.append((0 if b.layer == L else 4, anchor, txt, "", b.role if b.layer == L else "text", b.id,
                          "right"))
    for item in inp.extra_labels or []:
        cands.append((1, np.asarray(item[0]), item[1], "", item[2], "", "above"))
    cands.sort(key=lambda c: c[0])
    pts, ok = project(np.array([c[1] for c in cands]), cam, width, height)
    fmn = QFontMetricsF(f_name)
    fms = QFontMetricsF(f_shape)

    def rect_for(px, py, where, name, shp):
        gap = 6 * s if shp else 0
        w = fmn.horizontalAdvance(name) + gap + (fms.horizontalAdvance(shp) if shp else 0) + 12 * s
        h = fmn.height() + 3 * s
        if where == "above":
            return QRectF(px - w / 2, py - h - 2 * s, w, h)
        if where == "left":
            return QRectF(px - w - 4 * s, py - h / 2, w, h)
        return QRectF(px + 4 * s, py - h / 2, w, h)

    placed = []  # [rect, cand, shape shown]
    for cand, (px, py), vis in zip(cands, pts, ok):  # pass 1: names only, by priority
        pri, _, name, shape, role, bid, where = cand
        if not vis or not (-50 < px < width + 50 and -50 < py < height + 50):
            continue
        r = rect_for(px, py, where, name, shape if pri == 0 else "")
        if r.right() < 0 or r.left() > width or r.bottom() < 0 or r.top() > height:
            continue
        if r.left() < 2 * s:  # keep labels whole: slide them inside the view
            r.moveLeft(2 * s)
        if r.right() > width - 2 * s:
            r.moveRight(width - 2 * s)
        if pri > 0 and not _rect_free(r, taken):
            continue
        taken.append(r)
        placed.append([r, cand, shape if pri == 0 else "", (px, py)])
    for item in placed:  # pass 2: add the K3 shape where there is room
        r, cand, shown, (px, py) = item
        shape = cand[3]
        if shape and not shown:
            wide = rect_for(px, py, cand[6], cand[2], shape)
            others = [t for t in taken if t is not r]
            if _rect_free(wide, others) and wide.right() < width and wide.left() > 0:
                taken[taken.index(r)] = wide
                item[0], item[2] = wide, shape
    for r, cand, shape, _ in placed:
        pri, _, name, _, role, bid, where = cand
        wn = fmn.horizontalAdvance(name)
        gap = 6 * s
        emphasis = bool(bid) and bid in (inp.selected, inp.hovered)
        p.setPen(QPen(QColor(255, 255, 255, 200), 1.2 * s) if emphasis else Qt.PenStyle.NoPen)
        p.setBrush(QColor(14, 16, 22, 225 if emphasis else 185))
        p.drawRoundedRect(r, 4 * s, 4 * s)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(qcolor(role) if role != "text" else QColor(120, 126, 140))
        p.drawRoundedRect(QRectF(r.left(), r.top(), 3 * s, r.height()), 1.5 * s, 1.5 * s)
        base = r.top() + 1.5 * s + fmn.ascent()
        p.setFont(f_name)
        p.setPen(QColor(255, 255, 255) if emphasis else text_c)
        p.drawText(QPointF(r.left() + 7 * s, base), name)
        if shape:
            p.setFont(f_shape)
            p.setPen(dim_c)
            p.drawText(QPointF(r.left() + 7 * s + wn + gap, base), shape)

    if with_tokens:
        draw_token_names(p, inp, width, height, scale, taken)
    return taken


def draw_token_names(p: QPainter, inp: OverlayInput, width: float, height: float, scale: float,
                     taken: list[QRectF]) -> None:
    """The token names beside the rows of the first block of the exploded layer, where nothing in taken is."""
    if not inp.tokens:
        return
    lay, cam, s = inp.layout, inp.camera, scale
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    f_small = make_font(10 * s)
    dim_c = QColor(170, 176, 190)
    first = None
    for b in lay.layer_blocks():
        if b.grid is not None and b.rows_are_tokens and b.orient == "wall":
            if first is None or (b.lo[2], b.lo[0]) < (first.lo[2], first.lo[0]):
                first = b
    if first is None:
        return
    rows = first.grid[0]
    anchors = np.array([[first.lo[0] - 0.08, first.lo[1], first.hi[2] - (r + 0.5) * first.pitch_r]
                        for r in range(rows)])
    tp, tok_ok = project(anchors, cam, width, height)
    p.setFont(f_small)
    fmt = QFontMetricsF(f_small)
    spacing = float(np.median(np.abs(np.diff(tp[:, 1])))) if rows > 1 else fmt.height()
    if spacing < fmt.height() * 0.95:  # rows too close at this zoom: names would pile up
        return
    for r, ((px, py), vis) in enumerate(zip(tp, tok_ok)):
        if not vis or r >= len(inp.tokens):
            continue
        txt = inp.tokens[r].replace(" ", "␣") or "·"
        w = fmt.horizontalAdvance(txt)
        rr = QRectF(px - w - 4 * s, py - fmt.height() / 2, w + 2 * s, fmt.height())
        if not _rect_free(rr, taken):
            continue
        p.setPen(dim_c)
        p.drawText(QPointF(rr.left(), rr.top() + fmt.ascent()), txt)


def _draw_legend(p: QPainter, inp: OverlayInput, width: float, height: float, s: float, taken: list) -> None:
    """A compact strip along the bottom: the value scale, the colour roles, then the honesty notes."""
    tr = inp.tr
    f = make_font(10.5 * s)
    fb = make_font(10.5 * s, True)
    fm = QFontMetricsF(f)
    lh = fm.height() + 4 * s
    entries = [("kda", tr("scene.legend.kda")), ("mla", tr("scene.legend.mla")),
               ("dense", tr("scene.legend.dense")), ("attnres", tr("scene.legend.attnres")),
               ("weight", tr("scene.legend.weight")), ("state", tr("scene.legend.state")),
               ("expert", tr("scene.legend.expert")), ("shared", tr("scene.legend.shared"))]
    notes = [tr("scene.legend.values"), tr("scene.legend.toy")]
    if inp.flow_on:
        notes.append(tr("scene.legend.flow"))
    if not inp.has_trace:
        notes.append(tr("scene.legend.no_trace"))
    pad = 10 * s
    max_w = width - 2 * pad - 16 * s
    bar_w = 90 * s
    # flow the items into lines: (kind, payload, width)
    items = [("bar", tr("scene.legend.scale"), bar_w + 8 * s + QFontMetricsF(fb).horizontalAdvance(
        tr("scene.legend.scale")))]
    items += [("chip", (role, text), 16 * s + fm.horizontalAdvance(text)) for role, text in entries]
    lines, cur, cur_w = [], [], 0.0
    gap = 16 * s
    for it in items:
        if cur and cur_w + gap + it[2] > max_w:
            lines.append(cur)
            cur, cur_w = [], 0.0
        cur_w += (gap if cur else 0) + it[2]
        cur.append(it)
    if cur:
        lines.append(cur)
    note_lines, cur = [], ""
    for n in notes:
        cand = f"{cur}   ·   {n}" if cur else n
        if cur and fm.horizontalAdvance(cand) > max_w:
            note_lines.append(cur)
            cur = n
        else:
            cur = cand
    if cur:
        note_lines.append(cur)
    box_h = (len(lines) + len(note_lines)) * lh + 2 * pad - 4 * s
    content_w = max([sum(it[2] for it in ln) + gap * (len(ln) - 1) for ln in lines] +
                    [fm.horizontalAdvance(t) for t in note_lines])
    box = QRectF(pad, height - box_h - pad, content_w + 2 * pad, box_h)
    taken.append(box)
    p.setPen(QPen(QColor(60, 66, 80), 1))
    p.setBrush(QColor(14, 16, 22, 205))
    p.drawRoundedRect(box, 6 * s, 6 * s)
    y = box.top() + pad - 2 * s
    for ln in lines:
        x = box.left() + pad
        for kind, payload, w in ln:
            if kind == "bar":
                grad = QLinearGradient(x, 0, x + bar_w, 0)
                for t in np.linspace(0, 1, 9):
                    grad.setColorAt(float(t), qcolor(tuple(palette.diverging(np.array([t * 2 - 1]), 1.0)[0])))
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(grad)
                p.drawRoundedRect(QRectF(x, y + 3 * s, bar_w, fm.height() - 6 * s), 2 * s, 2 * s)
                p.setFont(fb)
                p.setPen(QColor(235, 237, 242))
                p.drawText(QPointF(x + bar_w + 8 * s, y + fm.ascent()), payload)
                p.setFont(f)
            else:
                role, text = payload
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(qcolor(role))
                p.drawRoundedRect(QRectF(x, y + 3 * s, 10 * s, fm.height() - 6 * s), 2 * s, 2 * s)
                p.setPen(QColor(220, 224, 232))
                p.drawText(QPointF(x + 16 * s, y + fm.ascent()), text)
            x += w + gap
        y += lh
    p.setPen(QColor(165, 172, 188))
    for t in note_lines:
        p.drawText(QPointF(box.left() + pad, y + fm.ascent()), t)
        y += lh
