"""The answer strip under the 3D view: the drawn word and the top-5 bars are on screen next to
the model whatever the dock layout, follow temperature at once, and a prompt outside the toy language says so.
Real window, real keys; pixel checks on the strip's own grab."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from app.i18n import tr
from app.player import sampling_candidates
from gui_helpers import image_array, wait_idle


def _amber_pixels(strip) -> int:
    px = image_array(strip.grab().toImage())[..., :3].astype(int)
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    return int(((r > 200) & (g > 130) & (g < 190) & (b < 90)).sum())  # the bars' fill (#f0a030)


def test_the_strip_sits_under_the_view_and_shows_the_drawn_word(main_window, qtbot):
    win = main_window
    strip = win.answer_strip
    wait_idle(qtbot, win)
    assert strip.isVisible() and strip.height() > 20
    # under the 3D view, as wide as it, whatever the docks do
    sg = win.scene.mapTo(win, win.scene.rect().bottomLeft())
    assert abs(strip.mapTo(win, strip.rect().topLeft()).y() - sg.y()) <= 2
    assert abs(strip.width() - win.scene.width()) <= 2
    trace = win.state.trace
    want = sampling_candidates(trace, 0, 5)
    assert strip.rows() == want
    drawn = trace.vocab[int(trace.passes[0].final["sampled"])][0]
    assert strip.word()[0] == drawn
    assert _amber_pixels(strip) > 50


def test_temperature_changes_the_bars_at_once(main_window, qtbot):
    win = main_window
    strip = win.answer_strip
    wait_idle(qtbot, win)
    slider = win.docks["ControlsDock"].slider("temperature")
    slider.setFocus()
    for _ in range(8):
        qtbot.keyClick(slider, Qt.Key_PageDown)  # towards 0: the top word takes all the mass
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: strip.rows() == sampling_candidates(win.state.trace, 0, 5), timeout=30000)
    cold = [a for _, _, a in strip.rows()]
    cold_px = _amber_pixels(strip)
    for _ in range(12):
        qtbot.keyClick(slider, Qt.Key_PageUp)  # hot: the mass spreads over the candidates
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: win.state.knobs.temperature > 1.0 and
                    strip.rows() == sampling_candidates(win.state.trace, 0, 5), timeout=30000)
    hot = [a for _, _, a in strip.rows()]
    assert cold[0] > hot[0] and sum(hot[1:]) > sum(cold[1:])
    assert _amber_pixels(strip) != cold_px  # the picture changed, not only the numbers


def test_a_prompt_outside_the_language_is_named_in_the_strip(main_window, qtbot):
    win = main_window
    strip = win.answer_strip
    box = win.docks["TracePlayerDock"].prompt
    h_inside = strip.height()
    box.setFocus()
    box.setText("hello world")
    qtbot.keyClick(box, Qt.Key_Return)
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: win.state.trace.text == "hello world", timeout=60000)
    qtbot.waitUntil(strip.outside_language, timeout=10000)
    qtbot.waitUntil(lambda: strip.height() > h_inside, timeout=10000)  # a second line for the note, laid out
    warn = image_array(strip.grab().toImage())[..., :3].astype(int)
    r, g, b = warn[..., 0], warn[..., 1], warn[..., 2]  # the note's #ffb454, not the bars' #f0a030
    rows = np.where(((r > 245) & (g > 170) & (b > 70) & (b < 110)).any(axis=1))[0]
    assert rows.size and rows.min() > strip.height() * 0.45  # the note's orange text on the second line
    box.setText("아이가 상자를 집었다. 그리고")
    qtbot.keyClick(box, Qt.Key_Return)
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: win.state.trace.text == "아이가 상자를 집었다. 그리고", timeout=60000)
    qtbot.waitUntil(lambda: not strip.outside_language(), timeout=10000)
