"""Token chips of the trace player: a '.' or a newline piece is as visible as a word.

Qt's rich text draws no border around a span, so the chips were coloured text only and the '.' chip was a
single dot; '\\n' was an invisible line break. Pixels of the real label's rendering are counted here."""
import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QLabel

from app.docks.trace_player import chip_piece, token_chip


def inked_pixels(qtbot, rich: str) -> int:
    label = QLabel()
    label.setTextFormat(Qt.RichText)
    label.setAutoFillBackground(True)
    pal = label.palette(); pal.setColor(label.backgroundRole(), QColor("white")); label.setPalette(pal)
    label.setText(rich)
    qtbot.addWidget(label)
    label.resize(label.sizeHint())
    img = label.grab().toImage().convertToFormat(QImage.Format_RGB888)
    w, h = img.width(), img.height()
    arr = np.frombuffer(img.constBits(), np.uint8, img.sizeInBytes()).reshape(h, img.bytesPerLine())[:, :w * 3]
    return int((arr.reshape(h, w, 3).astype(int).sum(axis=-1) < 3 * 245).sum())


def test_a_full_stop_chip_inks_a_box_not_a_dot(qtbot):
    dot = inked_pixels(qtbot, token_chip(".", 7, False, False).split("<sub")[0])
    word = inked_pixels(qtbot, token_chip("상자", 7, False, False).split("<sub")[0])
    assert dot >= 60, dot  # a tinted box around the dot (a bare '.' inks ~4 px)
    assert dot >= 0.25 * word, (dot, word)


def test_whitespace_pieces_are_printed_visibly(qtbot):
    assert chip_piece("\n") == "↵" and chip_piece(" 상자") == "·상자" and chip_piece("\t") == "⇥"
    assert chip_piece("") == "∅"
    assert "<br" not in token_chip("\n", 3, True, True)
    assert inked_pixels(qtbot, token_chip("\n", 3, True, True).split("<sub")[0]) >= 60


def test_the_current_chip_stands_out(qtbot):
    now = inked_pixels(qtbot, token_chip("집었다", 9, True, True).split("<sub")[0])
    other = inked_pixels(qtbot, token_chip("집었다", 9, True, False).split("<sub")[0])
    assert now >= other
