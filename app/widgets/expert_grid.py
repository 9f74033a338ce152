"""ExpertGridWidget: all routed experts (896 for K3) as a 32 x 28 grid of cells, plus the shared experts apart.

Self-contained and reusable: give it one token's router data with `set_scores(scores, bias, selected,
weights)` and it draws

    cell colour   the unbiased sigmoid score s_e (dark slate = lowest of this token, light steel = highest)
    lit cells     the selected top-k experts in gold; brightness and the bar at the cell's foot = mixing weight
    apart         the shared experts (always on, never routed)

Colours are computed for all cells at once (one numpy expression) and the grid, gaps included, is composed at
device resolution by two numpy gathers (a column index map and a row index map, cached per geometry) into one
RGB32 QImage, drawn unscaled with a single `drawImage`; the 16 weight-bar rectangles are cached with it. The
widget is opaque (no parent background is painted under it); a paint with new data takes about a millisecond.

Signals: `expert_clicked(int)`, `expert_hovered(int)` (-1 when the pointer leaves the grid).
Hover also shows a tooltip: id, score, bias, rank (by biased score), weight.
"""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QLineF, QPoint, QPointF, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QFont, QImage, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.i18n import tr
from app.widgets.paint import qcolor
from app.widgets.safe_text import plain_tip
from scene.palette import role_qcolor_tuple

COLS = 32
ROWS = 28

_BG = qcolor("background")
_TEXT = qcolor("text")
_GOLD = np.array(role_qcolor_tuple("expert")[:3], dtype=np.float64)
_SHARED = qcolor("shared")
# unselected cells: dark slate (lowest score of the token) -> light steel blue (highest)
_BG_PACKED = 0xFF000000 | (_BG.red() << 16) | (_BG.green() << 8) | _BG.blue()
_BAR = qcolor("expert_bar")
_LOW = np.array([34.0, 40.0, 52.0])
_HIGH = np.array([120.0, 150.0, 196.0])


def cell_colors(scores: np.ndarray, selected: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """RGBA uint8 [E, 4] for every cell. scores [E]; selected [k] expert ids; weights [k] mixing weights."""
    s = np.asarray(scores, dtype=np.float64)
    lo, hi = float(np.min(s)), float(np.max(s))
    t = (s - lo) / (hi - lo) if hi > lo else np.full_like(s, 0.5)
    rgb = _LOW + t[:, None] * (_HIGH - _LOW)
    sel = np.asarray(selected, dtype=np.int64)
    if sel.size:
        w = np.asarray(weights, dtype=np.float64)
        wmax = float(np.max(w)) if w.size and np.max(w) > 0 else 1.0
        # gold, from 70 % brightness (smallest weight) towards a paler gold (largest weight)
        share = np.clip(w / wmax, 0.0, 1.0)[:, None]
        rgb[sel] = np.clip(_GOLD * (0.70 + 0.30 * share) + share * 0.35 * (255.0 - _GOLD), 0, 255)
    out = np.empty((s.size, 4), dtype=np.uint8)
    out[:, :3] = np.round(rgb).astype(np.uint8)
    out[:, 3] = 255
    return out


def ranks_desc(values: np.ndarray) -> np.ndarray:
    """1-based rank of every entry when sorted descending (rank 1 = largest). values [E] -> [E] int."""
    order = np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(1, order.size + 1)
    return rank


class ExpertGridWidget(QWidget):
    expert_clicked = Signal(int)
    expert_hovered = Signal(int)

    def __init__(self, parent=None, n_experts: int = COLS * ROWS, n_shared: int = 2, cols: int = COLS):
        """n_experts / cols: the grid's shape (K3: 896 = 32 × 28); it adapts when scores of another size come."""
        super().__init__(parent)
        self.setObjectName("ExpertGridWidget")
        self.setMouseTracking(True)
        policy = QSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        policy.setHeightForWidth(True)  # square cells: as tall as the width needs
        self.setSizePolicy(policy)
        self.setMinimumSize(300, 240)
        self.setAttribute(Qt.WA_OpaquePaintEvent)  # paintEvent covers every pixel: no background under it
        self._n = n_experts
        self._cols = cols
        self._rows = -(-n_experts // cols)
        self._n_shared = n_shared
        self._scores: np.ndarray | None = None
        self._bias: np.ndarray | None = None
        self._selected = np.zeros(0, dtype=np.int64)
        self._weights = np.zeros(0)
        self._weight_of = np.full(n_experts, np.nan)
        self._rank: np.ndarray | None = None
        self._colors = np.zeros((n_experts, 4), dtype=np.uint8)
        # one 0xAARRGGBB pixel per cell, [rows + 1, cols + 1]: the last row / column is the gap colour
        # (None: a message instead of the grid)
        self._packed: np.ndarray | None = None
        self._maps_key = None  # geometry the pixel index maps were built for
        self._frame_key = None  # (data serial, geometry) of the composed frame
        self._serial = 0
        self._shared_texts: dict = {}  # (i, text, width, point size) -> the label that fits
        self._message = ""
        self._focus = -1  # outlined expert (e.g. the bias slider's expert)
        self._hover = -1

    # --- data ---------------------------------------------------------------------------------------
    def set_scores(self, scores, bias, selected, weights) -> None:
        """scores [E] unbiased sigmoid scores; bias [E] selection bias; selected [k] ids; weights [k]."""
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        if s.size == 0:
            raise ValueError("no router scores")
        if s.size != self._n:  # another model (e.g. 256 or 384 experts): reshape the grid
            self.set_shape(s.size, self._n_shared)
        b = np.zeros(self._n) if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1)
        sel = np.asarray(selected, dtype=np.int64).reshape(-1)
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if b.size != s.size or sel.size != w.size or (sel.size and not (0 <= sel.min() and sel.max() < s.size)):
            raise ValueError(f"inconsistent router data: {s.size} scores, {b.size} biases, "
                             f"{sel.size} selected ids, {w.size} weights")
        self._scores, self._bias, self._selected, self._weights = s, b, sel, w
        self._weight_of = np.full(self._n, np.nan)
        self._weight_of[sel] = w
        self._rank = None  # computed on first hover (only the tooltip needs it)
        self._colors = cell_colors(s, sel, w)
        c = self._colors.astype(np.uint32)
        cells = np.full(self._rows * self._cols, _BG_PACKED, dtype=np.uint32)  # the last row may be short
        cells[: self._n] = 0xFF000000 | (c[:, 0] << 16) | (c[:, 1] << 8) | c[:, 2]
        packed = np.full((self._rows + 1, self._cols + 1), _BG_PACKED, dtype=np.uint32)
        packed[: self._rows, : self._cols] = cells.reshape(self._rows, self._cols)
        self._packed = packed
        self._serial += 1
        self._message = ""
        self.update()

    def set_shape(self, n_experts: int, n_shared: int = 2) -> None:
        """Grid for n routed experts: 32 columns from 512 experts up (K3: 32 × 28), else 16."""
        self._n = int(n_experts)
        self._cols = COLS if self._n >= 512 else 16
        self._rows = -(-self._n // self._cols)
        self._n_shared = int(n_shared)
        self._maps_key = None
        self._frame_key = None
        self._colors = np.zeros((self._n, 4), dtype=np.uint8)
        self._packed = self._scores = None  # the old data has the old shape
        self.updateGeometry()
        self.update()

    def n_experts(self) -> int:
        return self._n

    def set_message(self, text: str) -> None:
        """Show a message instead of the grid (e.g. 'layer 1 is dense: no router')."""
        self._message = text
        self._packed = None
        self._scores = None
        self.update()

    def set_focus_expert(self, expert: int) -> None:
        self._focus = int(expert)
        self.update()

    def selected(self) -> np.ndarray:
        return self._selected.copy()

    def colors(self) -> np.ndarray:
        """RGBA uint8 [E, 4] of the cells as last computed."""
        return self._colors.copy()

    def has_data(self) -> bool:
        return self._scores is not None

    # --- geometry -----------------------------------------------------------------------------------
    def _layout(self) -> tuple[float, QRectF, QRectF]:
        """(cell size, grid rect, shared rect) for the current widget size."""
        margin = 6.0
        shared_w_cells = 3.2  # the shared column is ~3 cells wide, after a 1-cell gap
        w = self.width() - 2 * margin
        h = self.height() - 2 * margin
        cell = max(2.0, min(w / (self._cols + 1 + shared_w_cells), h / self._rows))
        left = margin + max(0.0, (w - cell * (self._cols + 1 + shared_w_cells)) / 2)
        grid = QRectF(left, margin, cell * self._cols, cell * self._rows)
        shared = QRectF(grid.right() + cell, margin, cell * shared_w_cells, cell * self._rows)
        return cell, grid, shared

    @staticmethod
    def _index_map(start: float, cell: float, n: int, gap: float, origin: int, count: int, dpr: float,
                   rows: bool) -> np.ndarray:
        """For `count` device pixels from device pixel `origin` along one axis (x, or y when `rows`): the index
        (0..n-1) of the cell whose area holds each pixel's centre (what a nearest-neighbour scaled image shows),
        or n for the gaps and outside the grid. The gaps are lines of width `gap` (logical) on every cell edge,
        rasterised by QPainter itself in widget coordinates (a 1-pixel strip along the axis), so they fall on
        exactly the pixels that drawing them across the grid covers."""
        x = (origin + np.arange(count) + 0.5) / dpr - start  # pixel centres, logical, relative to the grid edge
        idx = np.floor(x / cell).astype(np.int64)
        length = origin + count
        strip = QImage(1 if rows else length, length if rows else 1, QImage.Format_RGB32)
        strip.setDevicePixelRatio(dpr)
        strip.fill(0)
        p = QPainter(strip)
        pen = QPen(qcolor("highlight"))
        pen.setWidthF(gap)
        p.setPen(pen)
        at = [start + i * cell for i in range(n + 1)]
        p.drawLines([QLineF(-4.0, v, 4.0, v) if rows else QLineF(v, -4.0, v, 4.0) for v in at])
        p.end()
        line = np.frombuffer(strip.constBits(), dtype=np.uint32, count=strip.bytesPerLine() * strip.height() // 4)
        if rows:
            line = line[:: strip.bytesPerLine() // 4]
        covered = line[origin:length] & 0xFFFFFF != 0
        idx[(idx < 0) | (idx >= n) | covered] = n
        return idx

    def _frame(self, cell: float, grid: QRectF) -> tuple[QPointF, QImage]:
        """The grid with its gaps at device resolution: rebuilt only when the data or the geometry changed."""
        dpr = self.devicePixelRatioF()
        x0, y0 = math.floor(grid.left() * dpr), math.floor(grid.top() * dpr)  # device pixels
        w_px = math.ceil(grid.right() * dpr) - x0
        h_px = math.ceil(grid.bottom() * dpr) - y0
        geo = (cell, grid.left(), grid.top(), dpr, self._cols, self._rows)
        if self._maps_key != geo:
            gap = max(1.0, cell * 0.12)
            self._col_map = self._index_map(grid.left(), cell, self._cols, gap, x0, w_px, dpr, rows=False)
            self._row_map = self._index_map(grid.top(), cell, self._rows, gap, y0, h_px, dpr, rows=True)
            # the frame's pixels live in this buffer; the QImage wraps it (no copy) and is refilled in place
            self._frame_buf = np.empty((h_px, w_px), dtype=np.uint32)
            self._frame_img = QImage(self._frame_buf.data, w_px, h_px, w_px * 4, QImage.Format_RGB32)
            self._frame_img.setDevicePixelRatio(dpr)
            self._maps_key = geo
        if self._frame_key != (self._serial, geo):
            # two gathers: cells -> pixel columns (tiny), then those rows -> pixel rows (one copy per row)
            np.take(self._packed[:, self._col_map], self._row_map, axis=0, out=self._frame_buf, mode="clip")
            self._bars = self._bar_rects(cell, grid)
            self._frame_key = (self._serial, geo)
        return QPointF(x0 / dpr, y0 / dpr), self._frame_img

    def _bar_rects(self, cell: float, grid: QRectF) -> list[QRectF]:
        """Weight bars at the foot of the lit cells (width = weight / largest weight)."""
        if not self._selected.size:
            return []
        wmax = float(np.max(self._weights)) if np.max(self._weights) > 0 else 1.0
        out = []
        for e, w in zip(self._selected.tolist(), self._weights.tolist()):
            rc = QRectF(self._cell_rect(e, cell, grid))
            bar_h = max(1.5, rc.height() * 0.22)
            out.append(QRectF(rc.left(), rc.bottom() - bar_h + 1, rc.width() * w / wmax, bar_h))
        return out

    def _cell_rect(self, expert: int, cell: float, grid: QRectF) -> QRect:
        r, c = divmod(int(expert), self._cols)
        return QRectF(grid.left() + c * cell + 1, grid.top() + r * cell + 1, cell - 2, cell - 2).toRect()

    def cell_rect(self, expert: int) -> QRect:
        """Widget-pixel rectangle of a routed expert's cell (inside the 1-px gaps)."""
        cell, grid, _ = self._layout()
        return self._cell_rect(expert, cell, grid)

    def shared_rect(self, i: int) -> QRect:
        _, _, shared = self._layout()
        h = min(shared.height() / max(self._n_shared, 1), shared.width() * 1.6)
        return QRectF(shared.left(), shared.top() + i * (h + 6), shared.width(), h).toRect()

    def expert_at(self, pos: QPoint) -> int:
        """Routed expert id under a widget position, or -1."""
        cell, grid, _ = self._layout()
        x, y = pos.x() - grid.left(), pos.y() - grid.top()
        if x < 0 or y < 0 or x >= grid.width() or y >= grid.height():
            return -1
        e = int(y // cell) * self._cols + int(x // cell)
        return e if e < self._n else -1

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        cell = (width - 12.0) / (self._cols + 1 + 3.2)
        return max(240, int(cell * self._rows + 12))

    def sizeHint(self) -> QSize:
        return QSize(620, 480)

    # --- painting -----------------------------------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        p = QPainter(self)
        if self._packed is None:
            p.fillRect(self.rect(), _BG)
            p.setPen(_TEXT)
            p.drawText(self.rect().adjusted(12, 12, -12, -12), Qt.AlignCenter | Qt.TextWordWrap,
                       self._message or tr("experts.grid.empty"))
            p.end()
            return
        cell, grid, shared = self._layout()
        origin, frame = self._frame(cell, grid)
        # background around the frame only (the frame is opaque and carries the gaps); the strips reach one
        # pixel into the frame's area, which the frame then covers, so no seam is left at fractional scales
        fx0, fy0 = origin.x(), origin.y()
        fx1 = fx0 + frame.width() / frame.devicePixelRatio()
        fy1 = fy0 + frame.height() / frame.devicePixelRatio()
        w, h = float(self.width()), float(self.height())
        for rect in (QRectF(0, 0, w, fy0 + 1), QRectF(0, fy1 - 1, w, h - fy1 + 1),
                     QRectF(0, fy0, fx0 + 1, fy1 - fy0), QRectF(fx1 - 1, fy0, w - fx1 + 1, fy1 - fy0)):
            if rect.width() > 0 and rect.height() > 0:
                p.fillRect(rect, _BG)
        p.drawImage(origin, frame)
        # weight bars at the foot of lit cells (cached with the frame)
        for rect in self._bars:
            p.fillRect(rect, _BAR)
        for e, color, width in ((self._focus, qcolor("focus"), 2.0), (self._hover, qcolor("highlight"), 1.5)):
            if 0 <= e < self._n:
                pen = QPen(color)
                pen.setWidthF(width)
                p.setPen(pen)
                p.setBrush(Qt.NoBrush)
                p.drawRect(QRectF(self._cell_rect(e, cell, grid)).adjusted(-1, -1, 1, 1))
        # shared experts, apart, always on
        font = QFont(self.font())
        font.setPointSizeF(max(6.0, min(9.0, cell * 0.45)))
        p.setFont(font)
        for i in range(self._n_shared):
            rc = self.shared_rect(i)
            p.setPen(Qt.NoPen)
            p.setBrush(_SHARED)
            p.drawRoundedRect(rc, 4, 4)
            p.setPen(qcolor("ink"))
            p.drawText(rc.adjusted(2, 2, -2, -2), Qt.AlignCenter | Qt.TextWordWrap, self._shared_text(p, i, rc))
        p.end()

    def _shared_text(self, p: QPainter, i: int, rc: QRect) -> str:
        """The shared expert's label, or its short form when the long one does not fit (cached per width,
        font size and language)."""
        text = tr("experts.grid.shared_cell", n=i + 1)
        key = (i, text, rc.width(), p.font().pointSizeF())
        cache = self._shared_texts
        if key not in cache:
            if len(cache) > 64:  # many resizes: start again
                cache.clear()
            widest = max(p.fontMetrics().horizontalAdvance(part) for part in text.split("\n"))
            cache[key] = tr("experts.grid.shared_short", n=i + 1) if widest > rc.width() - 4 else text
        return cache[key]

    # --- mouse --------------------------------------------------------------------------------------
    def hover_text(self, e: int) -> str:
        """Tooltip for a routed expert: id, score, bias, rank, weight."""
        if self._scores is None or not 0 <= e < self._n:
            return ""
        if self._rank is None:
            self._rank = ranks_desc(self._scores + self._bias)
        w = self._weight_of[e]
        weight = tr("experts.grid.tip_weight", w=w) if np.isfinite(w) else tr("experts.grid.tip_unselected")
        return tr("experts.grid.tip", e=e, s=self._scores[e], b=self._bias[e], sb=self._scores[e] + self._bias[e],
                  rank=int(self._rank[e]), n=self._n, weight=weight)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        e = self.expert_at(event.position().toPoint())
        if e != self._hover:
            self._hover = e
            self.update()
            self.expert_hovered.emit(e)
        if e >= 0 and self._scores is not None:
            QToolTip.showText(event.globalPosition().toPoint(), plain_tip(self.hover_text(e)), self, self.cell_rect(e))
        else:
            shared = [i for i in range(self._n_shared) if self.shared_rect(i).contains(event.position().toPoint())]
            if shared and self._packed is not None:
                QToolTip.showText(event.globalPosition().toPoint(), tr("experts.grid.shared_tip", n=shared[0] + 1),
                                  self)
            else:
                QToolTip.hideText()

    def leaveEvent(self, event) -> None:  # noqa: N802
        if self._hover != -1:
            self._hover = -1
            self.update()
            self.expert_hovered.emit(-1)

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() == Qt.LeftButton and self._scores is not None:
            e = self.expert_at(event.position().toPoint())
            if e >= 0:
                self.expert_clicked.emit(e)
