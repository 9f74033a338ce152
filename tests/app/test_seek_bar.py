"""The trace player's seek bar behaves like a media player's: a click on the groove jumps to the clicked step
(QSlider's default moved one page towards it) and the same press drags on from there."""
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QStyle, QStyleOptionSlider

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def _x_of(slider, value: int) -> int:
    """The x at which a person clicks to reach `value`: the handle's centre there (Qt's value -> pixel mapping,
    the inverse of the one the slider uses for a click)."""
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    style = slider.style()
    groove = style.subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderGroove, slider)
    handle = style.subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderHandle, slider)
    span = groove.width() - handle.width()
    return groove.x() + handle.width() // 2 + QStyle.sliderPositionFromValue(
        slider.minimum(), slider.maximum(), value, span, opt.upsideDown)


def test_a_click_on_the_seek_bar_jumps_there_and_a_drag_follows(main_window, qtbot):
    win = main_window
    dock = win.docks["TracePlayerDock"]
    slider = dock.seek_slider
    last = len(win.state.player.steps) - 1
    assert last > 12 and slider.maximum() == last  # enough steps that one page (10) is not the target
    win.state.player.seek(0)
    y = slider.height() // 2
    try:
        target = (3 * last) // 4
        QTest.mouseClick(slider, Qt.LeftButton, Qt.NoModifier, QPoint(_x_of(slider, target), y))
        qtbot.waitUntil(lambda: win.state.step == target, timeout=3000)
        assert slider.value() == target

        back = last // 5  # a click to the left of the handle jumps back the same way
        QTest.mouseClick(slider, Qt.LeftButton, Qt.NoModifier, QPoint(_x_of(slider, back), y))
        qtbot.waitUntil(lambda: win.state.step == back, timeout=3000)

        start, end = last // 2, last - 1  # press on the groove, drag with the button down, release
        QTest.mousePress(slider, Qt.LeftButton, Qt.NoModifier, QPoint(_x_of(slider, start), y))
        qtbot.waitUntil(lambda: win.state.step == start, timeout=3000)
        assert slider.isSliderDown()  # the press that jumped also grabbed the handle
        QTest.mouseMove(slider, QPoint(_x_of(slider, end), y))
        qtbot.waitUntil(lambda: win.state.step == end, timeout=3000)
        QTest.mouseRelease(slider, Qt.LeftButton, Qt.NoModifier, QPoint(_x_of(slider, end), y))
        assert not slider.isSliderDown() and win.state.step == end
    finally:
        win.state.player.seek(0)
