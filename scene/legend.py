"""The overlay's legend strip along the bottom: the value scale, the colour roles this model has and the honesty
notes, flowed to the view's width on an opaque panel (scene/labels.py reserves its box)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF, QLinearGradient, QPainter, QPen

from scene import palette
from scene.block_kinds import mixer_key
from scene.header import _pack, _wrap
from scene.overlay_style import OverlayInput, make_font, qcolor, theme_colour
from scene.tooltips import model_args

EXPORT_MIN_SCALE = 0.45  # the smallest export's fonts (x the screen's): a 320 x 180 GIF's legend is ~6-px text
MAX_LEGEND_SHARE = 0.2  # of the view's height: past it the notes go, then the colour roles' later lines


def export_label_scale(width: float, height: float) -> float:
    """How much an export of width x height scales the overlay's fonts (1 = the screen's): with the image, from
    1280 x 800 up (a 4K PNG: 2.7, a legible legend), down to EXPORT_MIN_SCALE for small ones (a 320 x 180 GIF
    shows the model, not a legend drawn at a laptop screen's size)."""
    return max(EXPORT_MIN_SCALE, min(width / 1280, height / 800))


def _legend_layout(inp: OverlayInput, width: float, height: float, s: float) -> dict:
    """The legend strip along the bottom: its box and its lines (the value scale, the colour roles, then the
    honesty notes), flowed to the view's width."""
    tr = inp.tr
    f = make_font(10.5 * s)
    fb = make_font(10.5 * s, True)
    dims = inp.layout.dims  # the roles this model has: no KDA entry for DeepSeek-V3, "MLA" without a gate
    entries = [("kda", tr("scene.legend.kda")), ("mla", tr(f"scene.legend.{mixer_key('mla', dims.mla_gate)}")),
               ("dense", tr("scene.legend.dense")), ("attnres", tr("scene.legend.attnres")),
               ("weight", tr("scene.legend.weight")), ("state", tr("scene.legend.state")),
               ("expert", tr("scene.legend.expert")), ("shared", tr("scene.legend.shared"))]
    absent = {"kda"} - set(dims.mixers) | {"mla"} - set(dims.mixers) | ({"attnres"} if not dims.block_size else set())
    absent |= {"shared"} if not dims.shared else set()
    absent |= {"dense"} if "dense" not in dims.ffns else set()
    absent |= {"expert"} if "moe" not in dims.ffns else set()
    entries = [e for e in entries if e[0] not in absent]
    notes = [tr("scene.legend.values"), tr("scene.legend.toy", **model_args(inp.layout.dims))]
    if inp.flow_on:
        notes.append(tr("scene.legend.flow"))
    if inp.route_on:
        notes.append(tr("scene.legend.route_causal" if inp.route_kind == "causal" else "scene.legend.route"))
    if inp.units_on:
        notes.append(tr("scene.legend.units"))
    if not inp.has_trace:
        notes.append(tr("scene.legend.no_trace"))
    key = (tuple(entries), tuple(notes), tr("scene.legend.scale"), float(width), float(height), float(s), f.key(),
           fb.key())
    hit = _LAID_OUT.get(key)
    if hit is not None:
        return dict(hit, box=QRectF(hit["box"]))  # the callers read it; the box is the one mutable part
    out = _lay_out(entries, notes, tr("scene.legend.scale"), width, height, s, f, fb)
    if len(_LAID_OUT) >= _LAID_OUT_MAX:
        _LAID_OUT.clear()
    _LAID_OUT[key] = out
    return dict(out, box=QRectF(out["box"]))


# (entries, notes, scale text, size, scale, fonts) -> the laid-out legend. The camera's band check lays the legend
# out on the UI thread for every trace step and explanation (~2 ms of text measuring on 2 cores) and the render
# thread for every frame's labels; its texts change far less often. Bounded: cleared when full.
_LAID_OUT: dict = {}
_LAID_OUT_MAX = 64


def _lay_out(entries, notes, scale_text: str, width: float, height: float, s: float, f, fb) -> dict:
    fm = QFontMetricsF(f)
    lh = fm.height() + 4 * s
    pad = 10 * s
    max_w = width - 2 * pad - 16 * s
    bar_w = 90 * s
    items = [("bar", scale_text, bar_w + 8 * s + QFontMetricsF(fb).horizontalAdvance(scale_text))]
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
    # notes side by side where they fit; one wider than the view wraps at its spaces (it ran off the picture)
    note_lines = [line for packed in _pack(notes, "   ·   ", fm, max_w) for line in _wrap(packed, fm, max_w)]
    budget = MAX_LEGEND_SHARE * height  # a small view keeps the scale and the roles that fit, not the notes
    if (len(lines) + len(note_lines)) * lh + 2 * pad - 4 * s > budget:
        note_lines = []
        lines = lines[:max(1, int((budget - 2 * pad + 4 * s) // lh))]
    box_h = (len(lines) + len(note_lines)) * lh + 2 * pad - 4 * s
    content_w = max([sum(it[2] for it in ln) + gap * (len(ln) - 1) for ln in lines] +
                    [fm.horizontalAdvance(t) for t in note_lines])
    box = QRectF(pad, height - box_h - pad, content_w + 2 * pad, box_h)
    return {"box": box, "lines": lines, "notes": note_lines, "font": f, "bold": fb, "lh": lh, "pad": pad,
            "gap": gap, "bar_w": bar_w}


def _paint_legend(p: QPainter, inp: OverlayInput, lg: dict, s: float) -> None:
    theme = inp.theme
    box, f, fb, lh, pad, gap, bar_w = (lg[k] for k in ("box", "font", "bold", "lh", "pad", "gap", "bar_w"))
    fm = QFontMetricsF(f)
    p.setPen(QPen(theme_colour(theme, "panel_edge"), 1))
    p.setBrush(theme_colour(theme, "panel"))
    p.drawRoundedRect(box, 6 * s, 6 * s)
    p.setFont(f)
    y = box.top() + pad - 2 * s
    for ln in lg["lines"]:
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
                p.setPen(theme_colour(theme, "text"))
                p.drawText(QPointF(x + bar_w + 8 * s, y + fm.ascent()), payload)
                p.setFont(f)
            else:
                role, text = payload
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(qcolor(role))
                p.drawRoundedRect(QRectF(x, y + 3 * s, 10 * s, fm.height() - 6 * s), 2 * s, 2 * s)
                p.setPen(theme_colour(theme, "legend_text"))
                p.drawText(QPointF(x + 16 * s, y + fm.ascent()), text)
            x += w + gap
        y += lh
    p.setPen(theme_colour(theme, "legend_note"))
    for t in lg["notes"]:
        p.drawText(QPointF(box.left() + pad, y + fm.ascent()), t)
        y += lh
