"""The caption of an animation frame (app/export/animate.py): the step's title line and its explanation, wrapped, in a
band below the picture whose height fits the longest caption of the video."""
from __future__ import annotations

import math
from typing import Sequence

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QImage, QPainter, QTextLayout, QTextOption

from app.widgets.paint import qcolor

_BAND = qcolor("caption_band")  # the caption band below the picture
MAX_BAND_SHARE = 0.3  # of the frame's height: a small video keeps most of its frame for the model


def _font(px: float, bold: bool) -> QFont:
    font = QFont()
    font.setFamilies(["Noto Sans", "Noto Sans CJK KR", "DejaVu Sans"])
    font.setPixelSize(max(7, int(px)))
    font.setBold(bold)
    return font


def _wrapped_height(text: str, font: QFont, width: float) -> float:
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WordWrap)
    layout.setTextOption(option)
    layout.beginLayout()
    height = 0.0
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        height += line.height()
    layout.endLayout()
    return height


def _caption_geometry(w: int, h: int) -> tuple[float, float, QFont, QFont]:
    unit = max(7.0, min(w / 1920, h / 1080) * 30)  # scales with the frame
    return unit, unit * 0.8, _font(unit, True), _font(unit * 0.8, False)


def caption_band_height(w: int, h: int, captions: Sequence[tuple[str, str]]) -> int:
    """Height in pixels of a caption band below the picture that holds the longest of `captions` (title
    line, wrapped explanation); at most MAX_BAND_SHARE of the frame (the explanation is cut there)."""
    unit, margin, head_font, body_font = _caption_geometry(w, h)
    head_h = QFontMetricsF(head_font).height()
    text_w = w - 2 * margin
    body_h = max((_wrapped_height(body, body_font, text_w) if body else 0.0) for _, body in captions) \
        if captions else 0.0
    return int(math.ceil(min(h * MAX_BAND_SHARE, head_h + body_h + 2 * margin + unit * 0.3)))


def compose_frame(picture: QImage, w: int, h: int, head: str, body: str) -> QImage:
    """A w x h frame: the scene's picture (labels and colour legend included) above a caption band of the
    remaining height, so the band never covers the legend along the picture's bottom."""
    frame = QImage(w, h, QImage.Format.Format_RGB32)
    frame.fill(_BAND)
    p = QPainter(frame)
    try:
        p.drawImage(0, 0, picture)
    finally:
        p.end()
    burn_caption(frame, head, body, band_h=h - picture.height())
    return frame


def burn_caption(image: QImage, head: str, body: str, band_h: float | None = None) -> None:
    """A dark band along the bottom (its height fitted to the text, or `band_h`) with the step's title line
    and its explanation, wrapped."""
    w, h = image.width(), image.height()
    unit, margin, head_font, body_font = _caption_geometry(w, h)
    text_w = w - 2 * margin
    head_h = QFontMetricsF(head_font).height()
    body_h = _wrapped_height(body, body_font, text_w) if body else 0.0
    if band_h is None:
        band_h = min(h * MAX_BAND_SHARE, head_h + body_h + 2 * margin + unit * 0.3)
    top = h - band_h
    p = QPainter(image)
    try:
        p.setRenderHint(QPainter.Antialiasing)
        p.setRenderHint(QPainter.TextAntialiasing)
        p.fillRect(QRectF(0, top, w, band_h), _BAND)
        p.setClipRect(QRectF(0, top, w, band_h))  # an explanation longer than the band is cut at its edge
        p.setPen(qcolor("caption_title"))
        p.setFont(head_font)
        p.drawText(QRectF(margin, top + margin * 0.7, text_w, head_h), Qt.AlignLeft | Qt.AlignVCenter, head)
        if body:
            p.setPen(qcolor("caption_text"))
            p.setFont(body_font)
            p.drawText(QRectF(margin, top + margin * 0.7 + head_h + unit * 0.3, text_w, body_h + unit),
                       Qt.AlignLeft | Qt.AlignTop | Qt.TextWordWrap, body)
    finally:
        p.end()


# ------------------------------------------------------------------------------------------- encoding
