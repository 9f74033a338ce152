"""The tokens control: a spin box in the Controls dock, 1-64 or 'until the end of the
sentence' (stop at '.' or a newline), used by the window's runs and remembered in the settings. Real key events
on the spin box; the traces the engine publishes are checked."""
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.i18n import tr
from app.engine.worker import SENTENCE_ENDS, cut_at_sentence_end
from tests.app.gui_helpers import wait_idle

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def _generated(trace) -> list[str]:
    return [piece for piece, _ in trace.tokens[trace.prompt_len:]]


def _type_value(qtbot, spin, text: str) -> None:
    spin.setFocus()
    spin.lineEdit().selectAll()
    QTest.keyClicks(spin, text)
    QTest.keyClick(spin, Qt.Key_Return)


def test_tokens_spin_box_drives_the_runs_and_is_remembered(make_window, qtbot):
    win = make_window("tokens.ini")
    wait_idle(qtbot, win)
    spin = win.docks["ControlsDock"].tokens.spin
    assert spin.value() == 4 and win.engine.max_new_tokens == 4
    assert len(_generated(win.state.trace)) == 4  # as before: 4 by default
    assert (spin.minimum(), spin.maximum()) == (0, 64)

    _type_value(qtbot, spin, "9")
    qtbot.waitUntil(lambda: len(_generated(win.state.trace)) == 9, timeout=60000)
    assert win.engine.max_new_tokens == 9 and win.settings.tokens() == 9

    # PageDown (ten steps down) from 9 reaches the lowest value: until the end of the sentence
    QTest.keyClick(spin, Qt.Key_PageDown)
    assert spin.value() == 0 and spin.text() == tr("usability.tokens.sentence")

    def ends_sentence():
        gen = _generated(win.state.trace)
        return gen and (gen[-1] in SENTENCE_ENDS or len(gen) == 64) and win.engine.max_new_tokens == 0
    qtbot.waitUntil(ends_sentence, timeout=60000)
    wait_idle(qtbot, win)
    gen = _generated(win.state.trace)
    assert not any(p in SENTENCE_ENDS for p in gen[:-1])  # stopped at the first end, not later
    assert len(win.state.trace.passes) == len(gen)
    assert win.settings.tokens() == 0
    win.close()

    again = make_window("tokens.ini")  # the same settings file: the choice is back
    wait_idle(qtbot, again)
    assert again.engine.max_new_tokens == 0
    assert again.docks["ControlsDock"].tokens.spin.value() == 0
    gen = _generated(again.state.trace)
    assert gen[-1] in SENTENCE_ENDS or len(gen) == 64


def test_cut_at_sentence_end_keeps_the_first_sentence():
    from compute.engine import ToyK3

    trace = ToyK3().run("The robot lifted a red cup", max_new_tokens=24)
    gen = _generated(trace)
    cut = cut_at_sentence_end(trace)
    first = next((k for k, p in enumerate(gen) if p in SENTENCE_ENDS), None)
    if first is None:
        assert cut is trace
    else:
        assert _generated(cut) == gen[:first + 1]
        assert len(cut.passes) == first + 1 and cut.passes[first] is trace.passes[first]
        assert cut.prompt_len == trace.prompt_len and cut.tokens[:cut.prompt_len] == trace.tokens[:trace.prompt_len]


def test_bad_saved_tokens_fall_back(tmp_path):
    from app.files.settings import Settings

    s = Settings(str(tmp_path / "s.ini"))
    s.set_tokens(12)
    assert s.tokens() == 12
    s.q.setValue("tokens", "999")
    assert s.tokens() == 4
    s.q.setValue("tokens", "many")
    assert s.tokens() == 4


def test_tokens_texts_in_both_languages():
    for lang in ("en", "ko"):
        for key in ("usability.tokens", "usability.tokens.sentence", "usability.tokens.tip"):
            assert not tr(key, lang=lang).startswith("[")
        assert "64" in tr("usability.tokens.hint", lang=lang, max=64)
