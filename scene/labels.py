"""Scene labels: ONE QPainter overlay drawn with Qt fonts (CJK capable) on the widget and on exported images.

Labels are anchored to blocks of the layout, projected with the same camera, and placed by priority
(`place_labels`, pure geometry; `paint_overlay` paints its result). The header (title, layer, step) and the
legend sit on opaque panels, so no block is ever drawn through them, on screen or in a transparent export.

Placement rules:
- the blocks the current step names (OverlayInput.focus) are placed first and never dropped: each tries its
  spots in turn (above its block, aligned to its left or right edge, over its block's top, below it) and, if
  every spot is taken, is drawn at the first one anyway (never under the header or the legend);
- a label covers no block but its own (scene/label_obstacles.py: each block's projected outline; a 3 px graze
  of its edge allowed): where no spot above its block is clear it may sit over its own block's top, else any
  other label first tries the spots beside, below and a row above its block (drawn with a leader line to it) and
  is dropped only where none is clear (nothing is drawn over it); a step's focus, the selected / hovered block
  and a layer's caches (role "state": the MLA latent cache c_kv, the KDA state) only need a spot clear of the
  other labels, and the caches are placed before their neighbours;
- the stack's four thin cap blocks are named beside the whole cap, stacked up or down its side, with a leader
  line to their own block; one whose shape has no room where its name stands may move to another side spot;
- a stack layer number takes the row below or above its slab where its own spot is taken;
- a label wider than its block starts at the block's left edge (its colour bar sits on its own block, not on
  the neighbour's column).
Two themes: "dark" (the app) and "light" (for light slides; exports only).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen

from scene.camera import Camera, project
from scene.attention_arcs import first_token_wall
# the overlay's pieces live in their own modules; their names stay importable from here (tests, view, export)
from scene.overlay_style import (BACKGROUNDS, FONT_FAMILIES, THEME_NAMES, THEMES, OverlayInput,  # noqa: F401
                                 _Fonts, _fonts, make_font, qcolor, theme_colour)
from scene.header import (_fitted_header_lines, _header_lines, _header_rect, _pack, _paint_header,  # noqa: F401
                          _wrap, header_title)
from scene.legend import _legend_layout, _paint_legend
from scene.label_obstacles import BlockOutlines


@dataclass
class PlacedLabel:
    rect: QRectF
    block_id: str
    name: str
    shape: str  # the K3 shape shown after the name ("" when there was no room)
    role: str
    where: str  # "above" | "left" | "right"
    focus: bool = False
    forced: bool = False  # drawn although every spot overlapped something (focus labels only)
    leader: tuple[float, float, float, float] | None = None  # a side label's line to its block (x0, y0, x1, y1)


@dataclass
class Placement:
    """Where everything of the overlay goes (logical px of the view)."""
    header: QRectF
    legend: QRectF
    labels: list[PlacedLabel] = field(default_factory=list)
    taken: list[QRectF] = field(default_factory=list)

    def label_for(self, block_id: str) -> PlacedLabel | None:
        return next((lb for lb in self.labels if lb.block_id == block_id), None)


GRAZE = 3.0  # px (x scale) of a label's edge that may touch another block's outline


def _rect_free(r: QRectF, taken: list[QRectF]) -> bool:
    return not any(r.intersects(t) for t in taken)


def block_screen_box(block, cam: Camera, width: float, height: float) -> QRectF | None:
    """The block's projected bounding box on screen (logical px), None when any corner is behind the camera."""
    lo, hi = np.asarray(block.lo, float), np.asarray(block.hi, float)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    pts, ok = project(corners, cam, width, height)
    if not np.all(ok):
        return None
    x0, y0 = pts.min(axis=0)
    x1, y1 = pts.max(axis=0)
    return QRectF(float(x0), float(y0), float(x1 - x0), float(y1 - y0))



def _leader(r: QRectF, box: QRectF, gap: float) -> tuple[float, float, float, float] | None:
    """A line from a label moved away from its block (beside, below or a row above it) to the block's nearest
    edge; None when the label touches its block or sits just above it (the usual spot needs none)."""
    if r.intersects(box.adjusted(-gap, -gap, gap, gap)):
        return None
    if r.right() < box.left():  # left of it
        return r.right(), r.center().y(), box.left(), min(max(r.center().y(), box.top()), box.bottom())
    if r.left() > box.right():  # right of it
        return r.left(), r.center().y(), box.right(), min(max(r.center().y(), box.top()), box.bottom())
    x = min(max(r.center().x(), box.left()), box.right())
    if r.top() > box.bottom():  # below it
        return x, r.top(), x, box.bottom()
    return x, r.bottom(), x, box.top()  # a row above it


def _short(name: str) -> str:
    """A label's short form: without its trailing parenthesis ("k_rope (NoPE)" -> "k_rope"), else its last word
    where it has three or more ("latent cache c_kv" -> "c_kv")."""
    if name.endswith(")") and " (" in name:
        return name[:name.rindex(" (")]
    words = name.split()
    return words[-1] if len(words) >= 3 else name


def _is_cap(block) -> bool:
    """A thin block of the stack's cap (final AttnRes, final norm, LM head, sampling)."""
    return block.part == "global" and block.family == "stack" and block.layer == 0 and block.kind != "embedding"


def _rank(block) -> float:
    """Priority of a block's label when no step names it and it is not selected: a layer's caches (the MLA
    latent cache c_kv and rope key, the KDA state: role "state") before the blocks around them. Without this,
    equal labels went in layout order and a narrow cache block lost every spot above it to its left
    neighbour's wider label (MLA layers, step 6: no c_kv label)."""
    if block.role == "state":
        return 1.5
    if _is_cap(block):
        # the stack's cap is named beside itself, after the panel's names (it took o_proj's spot), top block first:
        # the one under the header has the least room, the lower ones can stack their names down the stack's side
        return 2.5 - 1e-3 * float(block.center[2])
    return 2


def _candidates(inp: OverlayInput) -> list[tuple]:
    """(priority, anchor world, name, shape, role, block id, where); focus blocks get priority -1."""
    lay, tr = inp.layout, inp.tr
    dims = lay.dims
    L = lay.layer + 1
    focus = set(inp.focus or ())
    cands = []
    for b in lay.blocks:
        if not b.label:
            continue
        if b.part == "bracket":
            anchor = np.array([b.lo[0] - 0.1, b.lo[1], b.center[2]])
            pri = -1 if b.id in focus else 3
            cands.append((pri, anchor, tr("scene.bracket", n=b.meta["index"]), b.k3_shape, "attnres", b.id, "left"))
            continue
        anchor = np.array([b.center[0], b.lo[1], b.hi[2] + 0.06])
        pri = -1 if b.id in focus else (1 if b.id in (inp.selected, inp.hovered) else _rank(b))
        name = tr(b.label_key) if b.label_key else b.kind
        cands.append((pri, anchor, name, b.k3_shape, b.role, b.id, "above"))
    # stack layer numbers + the selected layer marker
    for b in lay.blocks:
        if b.part == "slab" and (b.layer in (1, dims.n_layers) or b.layer % 12 == 0 or b.layer == L):
            anchor = np.array([b.hi[0] + 0.15, b.lo[1], b.center[2]])
            txt = f"▶ {b.layer}" if b.layer == L else str(b.layer)
            pri = -1 if b.id in focus else (0 if b.layer == L else 4)
            cands.append((pri, anchor, txt, "", b.role if b.layer == L else "text", b.id, "right"))
    for item in inp.extra_labels or []:
        cands.append((1, np.asarray(item[0]), item[1], "", item[2], "", "above"))
    cands += inp.lens_labels or []
    cands.sort(key=lambda c: c[0])
    return cands


def place_labels(inp: OverlayInput, width: float, height: float, scale: float = 1.0) -> Placement:
    """Where the header, the legend and every block label go for a width x height view (logical px)."""
    s = scale * inp.label_scale
    f = _fonts(s)
    header = _header_rect(inp, width, s, f)
    legend = _legend_layout(inp, width, height, s)["box"]
    taken = [header, legend]
    out = Placement(header, legend, [], taken)
    cands = _candidates(inp)
    if not cands:
        return out
    pts, ok = project(np.array([c[1] for c in cands]), inp.camera, width, height)
    fmn, fms = QFontMetricsF(f.name), QFontMetricsF(f.shape)
    by_id = inp.layout.by_id
    outlines = BlockOutlines(inp.layout, inp.camera, width, height)  # a label covers no block but its own
    # the cap's names stand beside the whole cap (the wide LM head under the narrow sampling block)
    cap_boxes = [outlines.screen_box(b.id) for b in inp.layout.blocks if _is_cap(b)]
    cap_boxes = [b for b in cap_boxes if b is not None]
    cap_x = (min((b.left() for b in cap_boxes), default=width), max((b.right() for b in cap_boxes), default=0.0))

    def size_of(name, shp):
        gap = 6 * s if shp else 0
        return (fmn.horizontalAdvance(name) + gap + (fms.horizontalAdvance(shp) if shp else 0) + 12 * s,
                fmn.height() + 3 * s)

    keys: list[QRectF] = []  # the key's entries placed so far (the strongest arcs, then the KDA conv note)

    def spots(px, py, where, name, shp, box, focus, beside=False, remote=False):
        """The label's possible rects, best first. `beside`: a thin block of the stack's cap (final AttnRes,
        final norm, LM head, sampling) is named beside itself, left or right, with a leader line (four caps in
        1.7 slab heights: above them only two names fit, and each covered the caps over it)."""
        w, h = size_of(name, shp)
        if where == "left":
            first = [QRectF(px - w - 4 * s, py - h / 2, w, h)]
            return first + ([first[0].translated(0, -h - 2 * s), first[0].translated(0, h + 2 * s)] if focus else [])
        if where == "key":  # a key's entry (the strongest attention arcs): from its spot, rows lower or higher,
            # or one width farther left (under the token wall the legend may leave no row)
            # The key reads as one row: an entry after the first goes right after the last entry, else a row under
            # or over the first (the KDA conv note stood one width away at 1280 x 720, far from its arcs)
            row = [QRectF(keys[-1].right() + 8 * s, keys[-1].top(), w, h),
                   QRectF(keys[0].left(), max(k.bottom() for k in keys) + 2 * s, w, h),
                   QRectF(keys[0].left(), min(k.top() for k in keys) - h - 2 * s, w, h)] if keys else []
            first = QRectF(px, py - h / 2, w, h)
            return row + [first.translated(dx, k * (h + 2 * s)) for k in (0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5)
                          for dx in (0.0, -w - 8 * s, w + 8 * s)]
        if where == "right":  # a layer number: a row lower or higher where its spot is taken (Final AttnRes
            # beside the top slab took the "93" spot at layer 37)
            first = [QRectF(px + 4 * s, py - h / 2, w, h)]
            return first + [first[0].translated(0, h + 2 * s), first[0].translated(0, -h - 2 * s)]
        top = py - h - 2 * s
        centred = QRectF(px - w / 2, top, w, h)
        if box is None:
            return [centred]
        left = QRectF(box.left(), top, w, h)
        right = QRectF(box.right() - w, top, w, h)
        found = [left, centred, right] if w > box.width() else [centred, left, right]
        if beside:  # beside its own block first: a name above it would cover the cap blocks over it; the caps
            # lie closer together than a label is high, so the names stack up beside them (leader lines)
            cy = box.center().y() - h / 2
            side = []
            for k in (0, -1, 1, 2, -2):
                for x in (min(box.left(), cap_x[0]) - w - 10 * s, max(box.right(), cap_x[1]) + 10 * s):
                    side.append(QRectF(x, cy + k * (h + 2 * s), w, h))
            found = side + found
        # over the top of its own block (where the gap above it holds the weight plate of the station over it),
        # then, for a step's own label, just below it
        found.append(QRectF(found[0].left(), box.top() + 2 * s, w, h))
        if focus:
            found.append(QRectF(found[0].left(), box.bottom() + 2 * s, w, h))
        if not beside:  # the last resorts before dropping the name: beside its block, below it, one row higher
            # (drawn with a leader line to its block; a 1600 x 900 export of an MLA layer lost W_qa and q norm
            # where only the spots above and over their blocks were tried)
            for y in (box.center().y() - h / 2, box.top(), box.bottom() - h):
                found += [QRectF(box.right() + 8 * s, y, w, h), QRectF(box.left() - w - 8 * s, y, w, h)]
            found += [r.translated(0, box.bottom() + 2 * s - top) for r in (centred, left, right)]
            found += [r.translated(0, -h - 4 * s) for r in (centred, left, right)]
            if remote:  # a cache's name goes farther (a leader line ties it) before it would cover a block
                for k in (1, -1, 2, -2, 3, -3, 4, -4):
                    y = box.center().y() - h / 2 + k * (h + 2 * s)
                    found += [QRectF(box.right() + 8 * s, y, w, h), QRectF(box.left() - w - 8 * s, y, w, h),
                              QRectF(centred.left(), top - k * (h + 2 * s) if k > 0 else box.bottom() + 2 * s
                                     - (k + 1) * (h + 2 * s), w, h)]
                for k in (0, 1, -1, 2, -2):  # a label's width farther out (a lowered 1600 x 900 MLA layer: every
                    y = box.center().y() - h / 2 + k * (h + 2 * s)  # spot by c_kv was over a block)
                    found += [QRectF(box.right() + w + 16 * s, y, w, h), QRectF(box.left() - 2 * w - 16 * s, y, w, h)]
        return found

    def inside(r: QRectF) -> QRectF | None:
        if r.right() < 0 or r.left() > width or r.bottom() < 0 or r.top() > height:
            return None
        r = QRectF(r)
        if r.left() < 2 * s:  # keep labels whole: slide them inside the view
            r.moveLeft(2 * s)
        if r.right() > width - 2 * s:
            r.moveRight(width - 2 * s)
        return r

    for cand, (px, py), vis in zip(cands, pts, ok):  # pass 1: names only, by priority
        pri, _, name, shape, role, bid, where = cand
        focus = pri == -1
        if not vis or not (-50 < px < width + 50 and -50 < py < height + 50):
            continue
        block = by_id.get(bid)
        box = outlines.screen_box(bid) if block is not None else None  # (block_screen_box, projected once)
        shown = shape if pri <= 0 else ""
        beside = block is not None and _is_cap(block)
        remote = block is not None and block.role == "state" and not focus
        options = [r for r in (inside(r) for r in spots(px, py, where, name, shown, box, focus, beside, remote))
                   if r is not None]
        if not options:
            continue
        chosen = next((r for r in options if _rect_free(r, taken) and outlines.clear(r, bid, GRAZE * s)), None)
        forced = False
        if chosen is None and remote and _short(name) != name:  # a cache's short name where the long one has
            # no clear spot (a 1280 x 720 window's MLA panel: "latent cache c_kv" covered W_qb's plate)
            name = _short(name)
            options = [r for r in (inside(r) for r in spots(px, py, where, name, "", box, focus, beside, remote))
                       if r is not None]
            chosen = next((r for r in options if _rect_free(r, taken) and outlines.clear(r, bid, GRAZE * s)), None)
        if chosen is None and remote:  # never over another block: the hover tooltip still names it
            continue
        if chosen is None and pri < 2:  # a step's, the selected or hovered block's label: clear of labels at least
            chosen = next((r for r in options if _rect_free(r, taken)), None)
        if chosen is None:
            if pri > 0:
                continue
            chosen, forced = options[0], focus
            # never under the header or the legend (a focus label, or the selected layer's "▶ 3" beside a slab
            # the legend covers: it was drawn over the legend's text at 1280 x 720)
            if chosen.intersects(header):
                chosen.moveTop(header.bottom() + 2 * s)
            if chosen.intersects(legend):
                chosen.moveBottom(legend.top() - 2 * s)
        taken.append(chosen)
        if where == "key":
            keys.append(chosen)
        placed = PlacedLabel(chosen, bid, name, shown, role, where, focus, forced)
        if beside and box is not None and (chosen.center().x() < box.left() or chosen.center().x() > box.right()):
            left_side = chosen.center().x() < box.left()  # (a name slid inside the view may reach over the edge)
            x0 = chosen.right() if left_side else chosen.left()
            x1 = box.left() if left_side else box.right()
            placed.where, placed.leader = "side", (x0, chosen.center().y(), x1, box.center().y())
        elif where == "above" and box is not None and not beside:
            placed.leader = _leader(chosen, box, 2 * s)
        out.labels.append(placed)
    for lb in out.labels:  # pass 2: add the K3 shape where there is room
        shape = next((c[3] for c in cands if c[5] == lb.block_id and c[2] == lb.name), "")
        if shape and not lb.shape and not lb.forced:
            w, h = size_of(lb.name, shape)
            wide = QRectF(lb.rect.left(), lb.rect.top(), w, h)
            if lb.where == "left" or (lb.where == "side" and lb.leader[0] <= lb.leader[2]):  # grows leftwards
                wide.moveRight(lb.rect.right())
            elif lb.where == "above":  # the name stays where it is; the shape goes after it
                pass
            others = [t for t in taken if t is not lb.rect]
            fits = lambda r: (_rect_free(r, others) and r.right() < width and r.left() > 0  # noqa: E731
                              and outlines.clear(r, lb.block_id, GRAZE * s))
            box = outlines.screen_box(lb.block_id) if lb.where == "side" else None
            if box is not None and not fits(wide):  # a cap's name may move to another of its side spots for its
                # shape (beside the cap at layer 4 the LM head's name had no room to grow where it stood)
                px, py = next(p for c, p in zip(cands, pts) if c[5] == lb.block_id and c[2] == lb.name)
                side = spots(px, py, "above", lb.name, shape, box, False, True)
                half = wide.height() / 2 + s  # then half a row up or down (a lowered stack's top at 1280 x 720:
                side += [r.translated(0, d) for r in list(side) for d in (-half, half)]  # a whole row hit a name)
                wide = next((r for r in side
                             if (r.center().x() < box.left() or r.center().x() > box.right()) and fits(r)), wide)
            if fits(wide):
                taken[next(i for i, t in enumerate(taken) if t is lb.rect)] = wide
                lb.rect, lb.shape = wide, shape
                if box is not None:  # the leader follows the name
                    left_side = wide.center().x() < box.left()
                    lb.leader = (wide.right() if left_side else wide.left(), wide.center().y(),
                                 box.left() if left_side else box.right(), box.center().y())
    return out


def paint_overlay(p: QPainter, inp: OverlayInput, width: float, height: float, scale: float = 1.0,
                  with_tokens: bool = True) -> Placement:
    """Draw every label and the legend for a width x height view (logical px; scale multiplies fonts) and return
    the Placement (what was drawn where). with_tokens=False leaves out the token names by the rows (the only
    labels that change when a knob changes the sampled tokens): draw_token_names adds them over such a picture."""
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    placement = place_labels(inp, width, height, scale)
    s = scale * inp.label_scale
    f = _fonts(s)
    theme = inp.theme
    _paint_header(p, inp, placement.header, s, f, width)
    _paint_legend(p, inp, _legend_layout(inp, width, height, s), s)
    fmn = QFontMetricsF(f.name)
    for lb in placement.labels:
        r = lb.rect
        emphasis = bool(lb.block_id) and lb.block_id in (inp.selected, inp.hovered)
        if lb.leader is not None:
            c = qcolor(lb.role if lb.role != "text" else "label_mark")
            p.setPen(QPen(c, 1.2 * s))
            x0, y0, x1, y1 = lb.leader
            p.drawLine(QPointF(x0, y0), QPointF(x1, y1))
        if lb.focus:
            p.setPen(QPen(theme_colour(theme, "note"), 1.4 * s))
        elif emphasis:
            p.setPen(QPen(theme_colour(theme, "label_edge"), 1.2 * s))
        else:
            p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(theme_colour(theme, "label_emph" if emphasis or lb.focus else "label"))
        p.drawRoundedRect(r, 4 * s, 4 * s)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(qcolor(lb.role if lb.role != "text" else "label_mark"))
        p.drawRoundedRect(QRectF(r.left(), r.top(), 3 * s, r.height()), 1.5 * s, 1.5 * s)
        base = r.top() + 1.5 * s + fmn.ascent()
        p.setFont(f.name)
        p.setPen(theme_colour(theme, "label_text_emph" if emphasis or lb.focus else "label_text"))
        p.drawText(QPointF(r.left() + 7 * s, base), lb.name)
        if lb.shape:
            p.setFont(f.shape)
            p.setPen(theme_colour(theme, "dim"))
            p.drawText(QPointF(r.left() + 7 * s + fmn.horizontalAdvance(lb.name) + 6 * s, base), lb.shape)
    if with_tokens:
        draw_token_names(p, inp, width, height, scale, placement.taken)
    return placement


def draw_token_names(p: QPainter, inp: OverlayInput, width: float, height: float, scale: float,
                     taken: list[QRectF]) -> None:
    """The token names beside the rows of the first block of the exploded layer, where nothing in taken is."""
    if not inp.tokens:
        return
    lay, cam, s = inp.layout, inp.camera, scale * inp.label_scale
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    f_small = make_font(10 * s)
    dim_c = theme_colour(inp.theme, "dim")
    first = first_token_wall(lay)
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
