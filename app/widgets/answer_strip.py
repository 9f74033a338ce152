"""The answer strip under the 3D view ("where the user looks"): the word the selected pass drew,
and the five most probable next words as bars (probability after temperature and top-p filled, before as an
outline), so a slider change shows its effect next to the model whatever the dock layout. A prompt outside the
toy language gets a one-line warning here too.

While a knock-out is active (the Explain dock's experiment), a line under the bars says "before → after" as the
3D header does: the word predicted, its probability and the explained word's logit, before and after (issue 40.1;
from the overlay the dock hands the 3D view, `state.explanation_shown`).

Every bar is numbered (its probability after temperature and top-p, as Transformer Explainer numbers its bars),
and a click on a bar's word asks to explain that word at that position instead of the answer (`word_clicked`;
the main window hands it to the Explain dock).

Painted with QPainter from the current trace (app.player.sampling_candidates): no computation of its own, a
repaint per new trace or pass."""
from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.i18n import tr
from app.player import sampled_token, sampling_candidates
from app.widgets.paint import qcolor

N_BARS = 5
ROW = 1.4  # the strip's line height in font lines (the 3D view keeps ≥ 55 % of a 1280×720 window)
BAR_FILL = qcolor("answer_bar")  # the scene's routed-expert amber: "what was chosen"
BAR_EDGE = qcolor("answer_edge")
TEXT = qcolor("answer_text")
MUTED = qcolor("answer_muted")
WARN = qcolor("answer_warn")
KNOCKOUT = qcolor("answer_knockout")


def shown_piece(piece: str) -> str:
    """A piece as the strip prints it: newline and tab visible, leading space as '·'."""
    return piece.replace("\n", "\\n").replace("\t", "\\t").replace(" ", "·") or "∅"


def _quoted(piece: str) -> str:
    """A piece in a sentence (the knock-out line): quoted, as the 3D header quotes it, a newline as \\n."""
    return "'" + piece.replace("\n", "\\n") + "'"


class AnswerStrip(QWidget):
    """A one-line strip: 'Next word (token k): ' 상자' p 0.78' then five bars. `rows()` gives what is drawn
    (for tests and for the tooltip); `word_clicked(position, vocabulary index)` when a bar's word is clicked."""

    word_clicked = Signal(int, int)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("answer_strip")
        self.state = state
        self._hits: list[tuple[QRectF, int]] = []  # each bar's slot on screen and its vocabulary index
        self.numbers: list[tuple[QRectF, str]] = []  # where each bar's probability was printed (tests)
        self._position = -1  # the position whose next word the shown pass drew
        self._index: dict[str, int] = {}  # piece -> vocabulary index of the shown rows
        self.setMouseTracking(True)
        self._rows: list[tuple[str, float, float]] = []
        self._word: tuple[str, float] | None = None
        self._outside = False
        self._pass = 0
        self.knockout_rect: QRectF | None = None  # where the knock-out line was drawn (tests)
        self._ko = None  # the shown explanation overlay while a knock-out is active (its `after`), else None
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.setAutoFillBackground(True)
        pal = self.palette()
        pal.setColor(self.backgroundRole(), qcolor("answer_fill"))
        self.setPalette(pal)
        state.trace_changed.connect(self._update)
        state.pass_changed.connect(lambda _i: self._update(state.trace))
        state.language_changed.connect(lambda _l: self._update(state.trace))
        state.explanation_shown.connect(self._on_explanation)
        self._update(state.trace)

    # ------------------------------------------------------------------ data
    def rows(self) -> list[tuple[str, float, float]]:
        """[(piece, probability before, after temperature/top-p)] of the shown pass, most probable first."""
        return list(self._rows)

    def word(self) -> tuple[str, float] | None:
        """(the drawn piece, its probability after temperature/top-p) of the shown pass."""
        return self._word

    def outside_language(self) -> bool:
        return self._outside

    def knockout_line(self) -> str:
        """The knock-out's "before → after" line as drawn ("" when no knock-out is active)."""
        ov = self._ko
        if ov is None:
            return ""
        mode, after, p_after, p_word_after, logit_after, p_before = ov.after
        return tr("strip.knockout", mode=tr(f"explain.mode.{mode}"), position=ov.position,
                  piece=_quoted(ov.piece), word=_quoted(ov.word), p=f"{p_before:.2f}", logit=f"{ov.logit:.2f}",
                  after=_quoted(after), p_after=f"{p_after:.2f}", p_word_after=f"{p_word_after:.2f}",
                  logit_after=f"{logit_after:.2f}")

    def _lines(self) -> int:
        return 1 + int(self._outside) + int(self._ko is not None)

    def _on_explanation(self, ov) -> None:
        ko = ov if ov is not None and getattr(ov, "after", ()) else None
        if ko is self._ko:
            return
        grow = (ko is None) != (self._ko is None)
        self._ko = ko
        self.setToolTip(self._tooltip())
        if grow:
            self.updateGeometry()
        self.update()

    def _update(self, trace) -> None:
        if trace is None or not getattr(trace, "passes", None):
            self._rows, self._word, self._outside = [], None, False
        else:
            p = min(max(int(getattr(self.state, "pass_index", 0)), 0), len(trace.passes) - 1)
            self._pass = p
            self._rows = sampling_candidates(trace, p, N_BARS)
            wanted = {r[0] for r in self._rows}
            self._index = {}
            for j, (pc, _tid) in enumerate(trace.vocab):
                if pc in wanted and pc not in self._index:
                    self._index[pc] = j
            positions = getattr(trace.passes[p], "positions", None)
            self._position = (int(positions.ravel()[-1]) if positions is not None and len(positions.ravel())
                              else int(getattr(trace, "prompt_len", 1)) - 1 + p)
            piece, _tid, prob = sampled_token(trace, p)
            self._word = (piece, prob)
            self._outside = getattr(trace, "prompt_in_language", None) is False
        self.setToolTip(self._tooltip())
        self.updateGeometry()
        self.update()

    def _tooltip(self) -> str:
        if not self._rows:
            return ""
        lines = [tr("strip.tip.title")]
        lines += [tr("strip.tip.row", word=shown_piece(p), before=f"{b:.3f}", after=f"{a:.3f}")
                  for p, b, a in self._rows]
        lines.append(tr("strip.tip.click"))
        if self._ko is not None:  # the whole line (an elided one is cut at the strip's edge)
            lines += ["", self.knockout_line(), tr("strip.knockout.tip")]
        return "\n".join(lines)

    # ------------------------------------------------------------------ clicks
    def word_at(self, x: float, y: float) -> int | None:
        """The vocabulary index of the bar under (x, y), None elsewhere."""
        return next((j for r, j in self._hits if r.contains(x, y)), None)

    def mouseMoveEvent(self, event) -> None:
        on = self.word_at(event.position().x(), event.position().y()) is not None
        self.setCursor(Qt.PointingHandCursor if on else Qt.ArrowCursor)
        super().mouseMoveEvent(event)

    def mousePressEvent(self, event) -> None:
        j = self.word_at(event.position().x(), event.position().y())
        if event.button() == Qt.LeftButton and j is not None and self._position >= 0:
            self.word_clicked.emit(self._position, j)
            event.accept()
            return
        super().mousePressEvent(event)

    # ------------------------------------------------------------------ drawing
    def _fonts(self) -> tuple[QFont, QFont]:
        base = QFont(self.font())
        bold = QFont(base)
        bold.setBold(True)
        bold.setPointSizeF(base.pointSizeF() * 1.3)  # the drawn word stands out
        return base, bold

    def sizeHint(self) -> QSize:
        base, _ = self._fonts()
        h = QFontMetrics(base).height()
        return QSize(600, int(h * (ROW + 1.2 * (self._lines() - 1))) + 4)

    def minimumSizeHint(self) -> QSize:
        return QSize(200, self.sizeHint().height())

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        base, bold = self._fonts()
        fm = QFontMetrics(base)
        line_h = fm.height()
        x, y = 10.0, 2.0
        if self._word is None:
            p.setPen(MUTED)
            p.setFont(base)
            p.drawText(QRectF(x, y, self.width() - 20, line_h * ROW), Qt.AlignVCenter, tr("strip.empty"))
            return
        row_h = line_h * ROW
        piece, prob = self._word
        label = tr("strip.word", n=self._pass + 1)
        p.setFont(base)
        p.setPen(MUTED)
        w = fm.horizontalAdvance(label) + 6
        p.drawText(QRectF(x, y, w, row_h), Qt.AlignVCenter, label)
        x += w
        p.setFont(bold)
        p.setPen(TEXT)
        word = shown_piece(piece)
        w = QFontMetrics(bold).horizontalAdvance(word) + 8
        p.drawText(QRectF(x, y, w, row_h), Qt.AlignVCenter, word)
        x += w
        p.setFont(base)
        p.setPen(MUTED)
        ptxt = f"p {prob:.3f}"
        w = fm.horizontalAdvance(ptxt) + 18
        p.drawText(QRectF(x, y, w, row_h), Qt.AlignVCenter, ptxt)
        x += w
        # five bars side by side in what is left: piece name, a bar of 0..1, its probability
        self._hits, self.numbers = [], []
        if self._rows:
            slot = max(60.0, (self.width() - x - 10) / len(self._rows))
            num_w = fm.horizontalAdvance("0.00") + 6
            for piece_i, before, after in self._rows:
                name = shown_piece(piece_i)
                name_w = min(fm.horizontalAdvance(name) + 6, slot * 0.4)
                if piece_i in self._index:
                    self._hits.append((QRectF(x, y, slot, row_h), self._index[piece_i]))
                p.setPen(TEXT if piece_i == piece else MUTED)
                p.drawText(QRectF(x, y, name_w, row_h), Qt.AlignVCenter | Qt.AlignRight,
                           fm.elidedText(name, Qt.ElideRight, int(name_w)))
                bx, bw = x + name_w + 4, max(10.0, slot - name_w - 14 - num_w)
                p.setPen(TEXT if piece_i == piece else MUTED)
                num = QRectF(bx + bw + 3, y, num_w, row_h)
                p.drawText(num, Qt.AlignVCenter | Qt.AlignLeft, f"{after:.2f}")
                self.numbers.append((num, f"{after:.2f}"))
                bar = QRectF(bx, y + row_h * 0.3, bw, row_h * 0.4)
                p.setPen(Qt.NoPen)
                p.setBrush(BAR_FILL)
                p.drawRect(QRectF(bar.x(), bar.y(), bar.width() * max(0.0, min(1.0, after)), bar.height()))
                p.setBrush(Qt.NoBrush)
                p.setPen(QPen(BAR_EDGE, 1))
                p.drawRect(QRectF(bar.x(), bar.y(), bar.width() * max(0.0, min(1.0, before)), bar.height()))
                x += slot
        y += row_h
        p.setFont(base)
        self.knockout_rect = None
        if self._ko is not None:
            p.setPen(KNOCKOUT)
            self.knockout_rect = QRectF(10, y, self.width() - 20, line_h * 1.2)
            p.drawText(self.knockout_rect, Qt.AlignVCenter,
                       fm.elidedText(self.knockout_line(), Qt.ElideRight, int(self.width() - 20)))
            y += line_h * 1.2
        if self._outside:
            p.setPen(WARN)
            p.drawText(QRectF(10, y, self.width() - 20, line_h * 1.2), Qt.AlignVCenter, tr("strip.outside"))
        p.end()
