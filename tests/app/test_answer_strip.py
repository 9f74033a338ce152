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


def test_every_bar_is_numbered_and_a_click_explains_that_word(main_window, qtbot):
    """Each of the five bars has its probability (after temperature / top-p: the trace's own 'probs') printed
    beside it (text pixels in each number's box); a real click on the second bar's word makes the Explain dock
    explain that word at the drawn word's position: its logit is the engine's lm_head entry for it."""
    win = main_window
    strip = win.answer_strip
    wait_idle(qtbot, win)
    trace = win.state.trace
    final = trace.passes[0].final
    logits = np.asarray(final["lm_head"][-1], dtype=np.float64)
    order = np.argsort(-logits, kind="stable")[:5]
    want = [f"{float(np.asarray(final['probs']).ravel()[j]):.2f}" for j in order]
    img = image_array(strip.grab().toImage())[..., :3].astype(int)
    assert [t for _, t in strip.numbers] == want
    bg = img[1, 1]
    for box, _t in strip.numbers:
        patch = img[int(box.top()):int(box.bottom()), int(box.left()):int(box.right())]
        assert (np.abs(patch - bg).sum(-1) > 120).sum() >= 8, _t  # glyphs drawn there
    # click the second bar's word
    second = order[1]
    rect = next(r for r, j in strip._hits if j == second)
    qtbot.mouseClick(strip, Qt.LeftButton, pos=rect.center().toPoint())
    dock = win.docks["ExplainDock"]
    position = trace.prompt_len - 1
    qtbot.waitUntil(lambda: dock.result is not None and not dock.busy and dock.result.word == trace.vocab[second][0]
                    and dock.result.position == position, timeout=60000)
    assert abs(dock.result.logit - logits[second]) < 1e-2 * max(1.0, abs(logits[second]))
    assert dock.result.word != trace.vocab[order[0]][0]
    # back to the answer: explain the top word again (the shared window's later tests expect it)
    first = next(r for r, j in strip._hits if j == order[0])
    qtbot.mouseClick(strip, Qt.LeftButton, pos=first.center().toPoint())
    qtbot.waitUntil(lambda: not dock.busy and dock.result.word == trace.vocab[order[0]][0], timeout=60000)


def test_a_knockout_says_before_and_after_in_the_strip(main_window, qtbot):
    """Issue 40.1: knock a source token out as a person does (select its row on the Answer page, click "Knock
    out"): the strip grows a line that says the word, its probability and logit before -> after, the numbers
    being compute.explain's own knock-out of that token (app.api, not the dock's result); red text pixels are drawn
    in that line; it follows a language switch; Restore takes the line away and the strip back to one row."""
    from app import api
    from app.docks.explain.pages import PAGES
    from test_explain_dock import open_page, wait_for

    win = main_window
    strip, dock = win.answer_strip, win.docks["ExplainDock"]
    wait_idle(qtbot, win)
    h_before = strip.height()
    assert strip.knockout_line() == ""
    win.state.show_dock("ExplainDock", "")
    wait_for(lambda: dock.result is not None and not dock.busy and dock.result.sources, dock=dock)
    open_page(dock, "answer")
    row = 1  # the second token (an earlier one than the explained position)
    p = dock.result.sources[row][0]
    rect = dock.sources.visualItemRect(dock.sources.item(row, 1))
    qtbot.mouseClick(dock.sources.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseClick(dock.knock, Qt.LeftButton)
    wait_for(lambda: not dock.busy and dock.result.knockout is not None, dock=dock)
    assert dock.pages.currentIndex() == PAGES.index("experiments")
    qtbot.waitUntil(lambda: strip.knockout_line() != "" and strip.height() > h_before, timeout=10000)
    trace = win.state.trace
    text = "".join(pc for pc, _ in trace.tokens[:trace.prompt_len])
    ex = api.explain(text, weights=trace.weights_name, position=dock.explained_position())
    after = ex.knockout(tokens=[p])
    line = strip.knockout_line()
    w = ex.word_index
    want = [f"p {float(ex.probs[w]):.2f}", f"logit {ex.logit:.2f}", f"p {float(after.probs[after.word_index]):.2f}",
            f"logit {float(after.logits[w]):.2f}", f"'{ex.word}'", f"'{after.word}'", "→"]
    assert all(s in line for s in want), (line, want)
    img = image_array(strip.grab().toImage())[..., :3].astype(int)
    band = img[int(strip.knockout_rect.top()):int(strip.knockout_rect.bottom())]
    r, g, b = band[..., 0], band[..., 1], band[..., 2]
    assert ((r > 220) & (g > 80) & (g < 150) & (b > 80) & (b < 150)).sum() > 40  # the red line's glyphs
    try:
        win.state.set_language("ko")
        qtbot.waitUntil(lambda: "녹아웃" in strip.knockout_line() and "로짓" in strip.knockout_line(), timeout=5000)
        assert "녹아웃" in strip.toolTip()
    finally:
        win.state.set_language("en")
    qtbot.mouseClick(dock.restore, Qt.LeftButton)
    qtbot.waitUntil(lambda: strip.knockout_line() == "" and strip.height() == h_before, timeout=30000)
    wait_for(lambda: not dock.busy and dock.result.knockout is None, dock=dock)
