"""Helpers shared by the learning-layer GUI tests: real mouse clicks on sliders, blank-render checks."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QWidget


def click_slider_at(qtbot, fslider, fraction: float) -> None:
    """Left-click a FloatSlider's groove at `fraction` of its width (a real mouse event)."""
    s = fslider.slider
    x = int(round(fraction * (s.width() - 1)))
    qtbot.mouseClick(s, Qt.LeftButton, pos=QPoint(x, s.height() // 2))


def drag_slider(qtbot, fslider, from_fraction: float, to_fraction: float) -> None:
    s = fslider.slider
    y = s.height() // 2
    a = QPoint(int(from_fraction * (s.width() - 1)), y)
    b = QPoint(int(to_fraction * (s.width() - 1)), y)
    QTest.mousePress(s, Qt.LeftButton, Qt.NoModifier, a)
    for t in np.linspace(0, 1, 6)[1:]:
        QTest.mouseMove(s, QPoint(int(a.x() + t * (b.x() - a.x())), y))
    QTest.mouseRelease(s, Qt.LeftButton, Qt.NoModifier, b)


def key_to_value(qtbot, fslider, value: float) -> None:
    """Drive a FloatSlider to an exact value with the keyboard: Home, then Right-arrow presses."""
    s = fslider.slider
    s.setFocus()
    QTest.keyClick(s, Qt.Key_Home)
    steps = int(round((value - fslider.lo) / fslider.step))
    for _ in range(steps // s.pageStep()):
        QTest.keyClick(s, Qt.Key_PageUp)
    for _ in range(steps % s.pageStep()):
        QTest.keyClick(s, Qt.Key_Right)
    assert abs(fslider.value() - value) < 1e-9, (fslider.value(), value)


def set_lang(lang: str) -> None:
    """i18n.set_language, tolerating listeners of AppState objects that earlier tests destroyed (AppState
    registers with i18n.on_change and never unregisters; i18n sets the language before calling listeners)."""
    from app import i18n

    try:
        i18n.set_language(lang)
    except RuntimeError:
        pass
    assert i18n.language() == lang


def type_text(widget: QWidget, text: str) -> None:
    """Type text with real key events, one per character (QTest.keyClicks aborts on non-ASCII characters, so
    Korean characters are sent as key events carrying their text, as an input method commits them)."""
    widget.setFocus()
    for ch in text:
        for kind in (QEvent.KeyPress, QEvent.KeyRelease):
            QApplication.sendEvent(widget, QKeyEvent(kind, Qt.Key_unknown if not ch.isascii() else ord(ch.upper()),
                                                     Qt.NoModifier, ch))


def assert_rendered(widget: QWidget, min_colors: int = 12) -> None:
    """The widget grabs to a non-blank image and shows no missing i18n key."""
    img = widget.grab().toImage()
    assert img.width() > 100 and img.height() > 100
    ptr = img.constBits()
    arr = np.frombuffer(ptr, dtype=np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    px = arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4)[..., :3].reshape(-1, 3)
    colours = np.unique(px[:: max(1, len(px) // 40000)], axis=0)
    assert len(colours) >= min_colors, f"looks blank: {len(colours)} colours"
    for w in widget.findChildren(QLabel) + widget.findChildren(QAbstractButton):
        assert "[learn." not in w.text(), f"missing i18n key in {w.objectName()}: {w.text()}"
