"""Pictures for Jupyter's rich display (issue 43.8): the logit lens of an Explanation as a line chart and a
Patching's scores as a heat map, drawn with Pillow (no Qt, no display: they work in any headless kernel).

Labels are ASCII only (numbers, axis names), so no font with Hangul is needed: the words themselves are in the
HTML table beside the picture (compute/notebook_html.py), where the browser's fonts draw them.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

__all__ = ["png_bytes", "lens_chart", "heatmap", "HeatmapLayout", "heatmap_layout", "cell_colour", "LENS_SIZE"]

LENS_SIZE = (720, 300)
_MARGIN = (56, 34, 24, 44)  # left, top, right, bottom
_INK, _GRID, _LINE, _MARK = (40, 40, 40), (225, 225, 225), (31, 119, 180), (230, 120, 20)
_NAN = (200, 200, 200)
_RED, _BLUE = (178, 24, 43), (33, 102, 172)


def png_bytes(image) -> bytes:
    """A PIL image, or an HxWx3 / HxWx4 uint8 array, as PNG bytes."""
    from PIL import Image

    if isinstance(image, np.ndarray):
        image = Image.fromarray(np.ascontiguousarray(image), "RGBA" if image.shape[2] == 4 else "RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)  # Pillow >= 10.1: a scalable font
    except TypeError:  # older Pillow: the fixed bitmap font
        return ImageFont.load_default()


def _ticks(last: int, count: int = 10) -> list[int]:
    step = max(1, int(np.ceil(last / count)))
    for nice in (1, 2, 5, 10, 20, 25, 50, 100, 200, 500):
        if nice >= step:
            step = nice
            break
    return list(range(0, last + 1, step))


def lens_chart(probs, readable_from: int | None, title: str):
    """The answer's probability after each lens entry (0 = the embedding, then each layer) as a line on a
    LENS_SIZE white canvas, with a dashed mark at `readable_from` (None: no mark). A PIL RGB image."""
    from PIL import Image, ImageDraw

    probs = np.clip(np.nan_to_num(np.asarray(probs, dtype=np.float64), nan=0.0), 0.0, 1.0)
    w, h = LENS_SIZE
    left, top, right, bottom = _MARGIN
    x0, x1, y0, y1 = left, w - right, top, h - bottom
    last = max(1, len(probs) - 1)
    image = Image.new("RGB", LENS_SIZE, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    small, big = _font(11), _font(13)

    def x_of(i):
        return x0 + (x1 - x0) * i / last

    def y_of(p):
        return y1 - (y1 - y0) * p

    for p in (0.0, 0.25, 0.5, 0.75, 1.0):
        draw.line([(x0, y_of(p)), (x1, y_of(p))], fill=_GRID)
        draw.text((x0 - 6, y_of(p)), f"{p:g}", fill=_INK, font=small, anchor="rm")
    for i in _ticks(last):
        draw.line([(x_of(i), y1), (x_of(i), y1 + 4)], fill=_INK)
        draw.text((x_of(i), y1 + 6), str(i), fill=_INK, font=small, anchor="mt")
    draw.rectangle([x0, y0, x1, y1], outline=_INK)
    if readable_from is not None:
        x = x_of(readable_from)
        for y in range(int(y0), int(y1), 8):
            draw.line([(x, y), (x, min(y + 4, y1))], fill=_MARK, width=2)
        left_half = x < (x0 + x1) / 2
        draw.text((x + 5 if left_half else x - 5, y0 + 4), f"readable from layer {readable_from}", fill=_MARK,
                  font=small, anchor="la" if left_half else "ra")
    draw.line([(x_of(i), y_of(p)) for i, p in enumerate(probs)], fill=_LINE, width=2)
    draw.text((w / 2, 8), title, fill=_INK, font=big, anchor="mt")
    draw.text(((x0 + x1) / 2, h - 6), "layer (0 = the embedding)", fill=_INK, font=small, anchor="mb")
    draw.text((6, (y0 + y1) / 2), "p", fill=_INK, font=big, anchor="lm")
    return image


def cell_colour(value: float) -> tuple[int, int, int]:
    """A restored fraction's colour: white at 0, red towards 1, blue towards -1 (clipped), grey for NaN."""
    if not np.isfinite(value):
        return _NAN
    v = float(np.clip(value, -1.0, 1.0))
    end = _RED if v >= 0 else _BLUE
    a = abs(v)
    return tuple(int(round(255 + (c - 255) * a)) for c in end)


@dataclass(frozen=True)
class HeatmapLayout:
    """Where heat-map panel `k`'s cell (row r, column c) lies: x0 + c*cell_w, panel_y[k] + r*cell_h."""

    size: tuple[int, int]
    x0: int
    cell_w: int
    cell_h: int
    panel_y: tuple[int, ...]

    def cell(self, panel: int, row: int, col: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) pixel box of a cell, right and bottom exclusive."""
        x = self.x0 + col * self.cell_w
        y = self.panel_y[panel] + row * self.cell_h
        return x, y, x + self.cell_w, y + self.cell_h


def heatmap_layout(panels: list[tuple[str, np.ndarray, list]]) -> HeatmapLayout:
    """The layout `heatmap` draws `panels` ((name, rows x columns, row labels)) with; all panels have the same
    columns."""
    cols = panels[0][1].shape[1]
    rows = max(p[1].shape[0] for p in panels)
    cell_w = int(np.clip(640 // max(cols, 1), 3, 40))
    cell_h = int(np.clip(220 // max(rows * len(panels), 1), 4, 28))
    left, top = 72, 40
    panel_y, y = [], top
    for name, grid, _ in panels:
        y += 16 if name else 0
        panel_y.append(y)
        y += grid.shape[0] * cell_h + 8
    width = left + cols * cell_w + 96
    return HeatmapLayout((max(width, 600), y + 36), left, cell_w, cell_h, tuple(panel_y))


def heatmap(panels: list[tuple[str, np.ndarray, list]], col_labels: list[int], row_name: str, col_name: str,
            title: str):
    """Each panel (name, rows x columns of restored fractions, row labels) as coloured cells, the columns
    labelled by `col_labels` (e.g. layers), a colour bar from -1 to 1. A PIL RGB image."""
    from PIL import Image, ImageDraw

    lay = heatmap_layout(panels)
    image = Image.new("RGB", lay.size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    small, big = _font(11), _font(13)
    draw.text((lay.size[0] / 2, 8), title, fill=_INK, font=big, anchor="mt")
    for k, (name, grid, row_labels) in enumerate(panels):
        if name:
            draw.text((lay.x0, lay.panel_y[k] - 3), name, fill=_INK, font=small, anchor="lb")
        for r in range(grid.shape[0]):
            for c in range(grid.shape[1]):
                left, top, right, bottom = lay.cell(k, r, c)
                draw.rectangle([left, top, right - 1, bottom - 1], fill=cell_colour(grid[r, c]))
            if lay.cell_h >= 10 or r % max(1, int(np.ceil(10 / lay.cell_h))) == 0:
                y = (lay.cell(k, r, 0)[1] + lay.cell(k, r, 0)[3]) / 2
                draw.text((lay.x0 - 4, y), str(row_labels[r]), fill=_INK, font=small, anchor="rm")
        draw.text((6, (lay.panel_y[k] + lay.cell(k, grid.shape[0] - 1, 0)[3]) / 2), row_name, fill=_INK,
                  font=small, anchor="lm")
    bottom = lay.cell(len(panels) - 1, panels[-1][1].shape[0] - 1, 0)[3]
    cols = len(col_labels)
    for c in _ticks(cols - 1, max(2, cols * lay.cell_w // 40)):
        x = (lay.cell(0, 0, c)[0] + lay.cell(0, 0, c)[2]) / 2
        draw.line([(x, bottom), (x, bottom + 3)], fill=_INK)
        draw.text((x, bottom + 5), str(col_labels[c]), fill=_INK, font=small, anchor="mt")
    draw.text((lay.x0 + cols * lay.cell_w / 2, lay.size[1] - 4), col_name, fill=_INK, font=small, anchor="mb")
    bar_x = lay.x0 + cols * lay.cell_w + 24
    top, height = lay.panel_y[0], max(60, bottom - lay.panel_y[0])
    for i in range(height):
        draw.line([(bar_x, top + i), (bar_x + 12, top + i)], fill=cell_colour(1 - 2 * i / (height - 1)))
    for v, y in ((1, top), (0, top + height / 2), (-1, top + height)):
        draw.text((bar_x + 16, y), f"{v:+d}" if v else "0", fill=_INK, font=small, anchor="lm")
    return image
