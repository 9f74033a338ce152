"""The overlay's header panel: the title, the layer line (the rows/cols note on its row where it fits) and the
step notes, wrapped to the view's width (scene/labels.py places it top left; no block is drawn through its
opaque panel)."""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen

from scene.block_kinds import mixer_key
from scene.overlay_style import OverlayInput, _Fonts, qcolor, theme_colour

INLINE_GAP = 14  # px (x the label scale) between the layer line and the rows/cols note drawn on its row


def _header_lines(inp: OverlayInput) -> list[tuple[str, str]]:
    """(kind, text) of the header's lines: title, subtitle, rows/cols note, step note."""
    lay, tr = inp.layout, inp.tr
    dims = lay.dims
    mixer = dims.mixers[lay.layer] if lay.layer < len(dims.mixers) else "kda"
    ffn = dims.ffns[lay.layer] if lay.layer < len(dims.ffns) else "moe"
    lines = [("title", header_title(inp)),
             ("sub", tr("scene.subtitle", layer=lay.layer + 1, n=dims.n_layers, mixer=tr(f"scene.mixer.{mixer_key(mixer, dims.mla_gate)}"),
                        ffn=tr(f"scene.ffn.{ffn}"))),
             ("dim", tr("scene.rows_cols"))]
    if inp.step_note:
        lines.append(("note", inp.step_note))
    if inp.outside_note:
        lines.append(("note", inp.outside_note))
    if inp.explain_note:
        lines.append(("note", inp.explain_note))
    return lines


def header_title(inp: OverlayInput) -> str:
    """The header's title line; with a trace it says which toy weights produced the numbers."""
    title = inp.tr("scene.title")
    if inp.weights in ("trained", "random"):
        title += " · " + inp.tr("weights.header", weights=inp.tr(f"weights.short.{inp.weights}"))
    return title


# (lines, width, scale, fonts) -> the fitted lines. The header is laid out for every frame's labels and for every
# camera band check (each step and each explanation, on the UI thread: ~2-3 ms of text measuring on 2 cores), and
# its text changes far less often. Bounded: cleared when full.
_FITTED: dict = {}
_FITTED_MAX = 64


def _fitted_header_lines(inp: OverlayInput, width: float, s: float, f: _Fonts) -> list[tuple[str, str]]:
    """The header's lines wrapped at spaces to the view's width (a long Korean title or step note in a narrow
    export ran past the panel and off the picture); a single word still too wide is elided."""
    lines = tuple(_header_lines(inp))
    key = (lines, float(width), float(s), f.title.key(), f.sub.key())
    fitted = _FITTED.get(key)
    if fitted is None:
        fitted = tuple(_fit_lines(lines, width, s, f))
        if len(_FITTED) >= _FITTED_MAX:
            _FITTED.clear()
        _FITTED[key] = fitted
    return list(fitted)


def _fit_lines(lines, width: float, s: float, f: _Fonts) -> list[tuple[str, str]]:
    max_w = max(width - 32 * s, 40 * s)  # the panel keeps 8*s from both edges and 8*s padding inside
    out = []
    for kind, text in lines:
        fm = QFontMetricsF(f.title if kind == "title" else f.sub)
        if kind == "dim" and out and out[-1][0] == "sub" and \
                fm.horizontalAdvance(out[-1][1]) + INLINE_GAP * s + fm.horizontalAdvance(text) <= max_w:
            out.append(("dim_inline", text))  # on the layer line's row: one line less over the stack's top
            continue
        out += [(kind, line) for line in _wrap(text, fm, max_w)]
    return out


def _rows(lines: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The fitted lines grouped into the rows they are drawn on (a "dim_inline" line shares the row before)."""
    rows: list[list[tuple[str, str]]] = []
    for kind, text in lines:
        if kind == "dim_inline" and rows:
            rows[-1].append((kind, text))
        else:
            rows.append([(kind, text)])
    return rows


def _wrap(text: str, fm: QFontMetricsF, max_w: float) -> list[str]:
    """text in lines of at most max_w px: broken between its ' · ' parts first, inside a part at spaces only
    when the part alone is too wide; a word still too wide is elided."""
    if fm.horizontalAdvance(text) <= max_w:
        return [text]
    return [fm.elidedText(line, Qt.TextElideMode.ElideRight, max_w)
            for part_line in _pack(text.split(" · "), " · ", fm, max_w)
            for line in _pack(part_line.split(" "), " ", fm, max_w)]


def _pack(pieces: list[str], sep: str, fm: QFontMetricsF, max_w: float) -> list[str]:
    """pieces joined by sep, greedily, into lines of at most max_w px (a piece wider than that stands alone)."""
    lines, cur = [], ""
    for piece in pieces:
        cand = f"{cur}{sep}{piece}" if cur else piece
        if cur and fm.horizontalAdvance(cand) > max_w:
            lines.append(cur)
            cur = piece
        else:
            cur = cand
    return lines + [cur]


def _row_width(row: list[tuple[str, str]], s: float, f: _Fonts) -> float:
    fm, fm2 = QFontMetricsF(f.title), QFontMetricsF(f.sub)
    return sum((fm if k == "title" else fm2).horizontalAdvance(t) for k, t in row) + INLINE_GAP * s * (len(row) - 1)


def _header_rect(inp: OverlayInput, width: float, s: float, f: _Fonts) -> QRectF:
    fitted = _fitted_header_lines(inp, width, s, f)
    key = ("rect", tuple(fitted), float(width), float(s), f.title.key(), f.sub.key())  # as _fitted_header_lines
    box = _FITTED.get(key)
    if box is None:
        rows = _rows(fitted)
        fm, fm2 = QFontMetricsF(f.title), QFontMetricsF(f.sub)
        w = max(_row_width(row, s, f) for row in rows)
        h = sum(fm.height() + 2 * s if row[0][0] == "title" else fm2.height() for row in rows)
        pad = 8 * s
        box = (16 * s - pad, 12 * s - pad * 0.75, min(w + 2 * pad, width - 16 * s), h + 1.75 * pad)
        if len(_FITTED) >= _FITTED_MAX:
            _FITTED.clear()
        _FITTED[key] = box
    return QRectF(*box)


def _paint_header(p: QPainter, inp: OverlayInput, rect: QRectF, s: float, f: _Fonts, width: float) -> None:
    theme = inp.theme
    p.setPen(QPen(theme_colour(theme, "panel_edge"), 1))
    p.setBrush(theme_colour(theme, "panel"))
    p.drawRoundedRect(rect, 6 * s, 6 * s)
    x0, y = 16 * s, 12 * s
    lay = inp.layout
    mixer = lay.dims.mixers[lay.layer] if lay.layer < len(lay.dims.mixers) else "kda"
    mixer_c = qcolor(mixer)
    if theme == "light":  # the mixer's colour, darkened to read on white
        mixer_c = QColor.fromRgbF(mixer_c.redF() * 0.55, mixer_c.greenF() * 0.55, mixer_c.blueF() * 0.55)
    colours = {"title": theme_colour(theme, "title"), "sub": mixer_c, "dim": theme_colour(theme, "dim"),
               "note": theme_colour(theme, "note"), "dim_inline": theme_colour(theme, "dim")}
    for row in _rows(_fitted_header_lines(inp, width, s, f)):
        x = x0
        for kind, text in row:
            font = f.title if kind == "title" else f.sub
            fm = QFontMetricsF(font)
            p.setFont(font)
            p.setPen(colours[kind])
            p.drawText(QPointF(x, y + fm.ascent()), text)
            x += fm.horizontalAdvance(text) + INLINE_GAP * s
        title = row[0][0] == "title"
        y += QFontMetricsF(f.title if title else f.sub).height() + (2 * s if title else 0)
