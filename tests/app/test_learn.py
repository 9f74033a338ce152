"""Learn dock in a real window: serving arithmetic, harness/XTML, quality table, quiz scoring and links."""
from __future__ import annotations

import json
import re
import string

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMainWindow

from app import i18n
from app.docks.experiments import ExperimentsDock
from app.docks.learn import QUALITY_ROWS, TABS, LearnDock
from app.docks.learn.harness import CLOSE, OPEN, SEP
from app.docks.learn.model import QUESTIONS, QuizSession
from app.state import AppState
from assets import asset_path
from tests.app.learn_helpers import assert_rendered, click_slider_at, set_lang

HANGUL = re.compile(r"[\uac00-\ud7a3]")


@pytest.fixture
def win(qtbot):
    set_lang("en")
    state = AppState()
    w = QMainWindow()
    qtbot.addWidget(w)
    w.state = state
    w.learn = LearnDock(state, w)
    w.exp = ExperimentsDock(state, w)
    state.set_dock_opener(lambda name, tab: name == "ExperimentsDock" and (w.exp.show_tab(tab) or True))
    w.addDockWidget(Qt.RightDockWidgetArea, w.learn)
    w.addDockWidget(Qt.RightDockWidgetArea, w.exp)
    w.tabifyDockWidget(w.learn, w.exp)
    w.learn.raise_()
    w.resize(800, 950)
    w.show()
    qtbot.waitExposed(w)
    yield w
    set_lang("en")


def _money(text: str) -> float:
    return float(text.replace("−", "-"))


def _type_into(qtbot, spin, text):
    spin.setFocus()
    spin.selectAll()
    QTest.keyClick(spin.lineEdit(), Qt.Key_A, Qt.ControlModifier)
    qtbot.keyClicks(spin.lineEdit(), text)
    QTest.keyClick(spin.lineEdit(), Qt.Key_Return)


def test_cost_per_turn_live_from_edited_prices(win, qtbot):
    p = win.learn.pages["serving"]
    # seed numbers: 142,000 × $3/M + 444 × $15/M = 0.426 + 0.00666
    assert "$0.4327 per turn" in p.cost_result.text()
    assert "$28.12" in p.cost_result.text()  # × 65 turns = 28.1229
    _type_into(qtbot, p.price_in, "2.50")
    _type_into(qtbot, p.tok_out, "1000")
    assert p.price_in.value() == pytest.approx(2.5) and p.tok_out.value() == 1000
    expect = 142_000 * 2.5 / 1e6 + 1000 * 15 / 1e6  # 0.355 + 0.015
    assert f"${expect:.4f} per turn" in p.cost_result.text()
    assert f"${expect * 65:.2f}" in p.cost_result.text()


def test_kv_capacity_and_speculative(win, qtbot):
    p = win.learn.pages["serving"]
    assert "27,648 bytes per token" in p.kv_text.text()  # 24 × 576 × 2
    assert f"{3.25e6 * 27648 / 1e9:.1f} GB" in p.kv_text.text()
    assert f"{3.25e6 / 142000:.1f} sessions" in p.kv_text.text()
    click_slider_at(qtbot, p.acceptance, 0.8)
    a, g = p.acceptance.value(), int(p.draft.value())
    expect = sum(a ** i for i in range(g + 1))  # 1 + a + … + a^γ
    assert f"<b>{expect:.2f}</b>" in p.spec_result.text()


def test_harness_xtml_structure_follows_switches(win, qtbot):
    win.learn.show_tab("harness")
    p = win.learn.pages["harness"]
    html = p.xtml.toPlainText()
    for tok in (OPEN, SEP, CLOSE):
        assert tok in html
    segs = p.segments()
    assert [c for c, _ in segs][0] == "think" and segs[-1][0] == "answer"
    assert any(c == "tool_call" for c, _ in segs)
    assert html.count(OPEN) == len(segs) == html.count(CLOSE)
    qtbot.mouseClick(p.tools, Qt.LeftButton, pos=QPoint(6, p.tools.height() // 2))
    assert not p.tools.isChecked()
    assert all(c != "tool_call" for c, _ in p.segments())
    assert "tool call" not in p.path.text()
    medium = p.segments()[0][1]
    p.effort.setCurrentIndex(2)  # high effort: a third reasoning sentence
    high = p.segments()[0][1]
    assert high.startswith(medium) and len(high) > len(medium)
    assert i18n.tr("learn.harness.x.think3") in p.xtml.toPlainText()
    assert p.xtml.toPlainText().count(OPEN) == len(p.segments())


def test_quality_table_has_the_seed_rows(win):
    p = win.learn.pages["quality"]
    assert p.table.rowCount() == QUALITY_ROWS == 8
    firsts = [p.table.item(r, 0).text() for r in range(8)]
    assert firsts[0] == "KDA + MLA" and "speculative" in firsts[6].lower() and "Fleet" in firsts[7]
    for r in range(8):
        for c in range(3):
            assert p.table.item(r, c).text() and "[learn." not in p.table.item(r, c).text()
    tint = [p.table.item(r, 0).background().color().name() for r in range(8)]
    assert len(set(tint[:5])) == 1 and len(set(tint[5:])) == 1 and tint[0] != tint[5]  # quality vs throughput


def test_quiz_scoring_with_real_clicks(win, qtbot):
    win.learn.show_tab("quiz")
    p = win.learn.pages["quiz"]
    assert len(QUESTIONS) >= 12
    q0 = QUESTIONS[0]
    right = p.options[q0.correct]
    qtbot.mouseClick(right, Qt.LeftButton, pos=QPoint(6, right.height() // 2))
    qtbot.mouseClick(p.check, Qt.LeftButton)
    assert p.session.score == 1 and p.session.answered == 1
    assert "Correct" in p.feedback.text() and p.link.isVisible()
    qtbot.mouseClick(p.next, Qt.LeftButton)
    assert p.index == 1
    wrong = (QUESTIONS[1].correct + 1) % 4
    qtbot.mouseClick(p.options[wrong], Qt.LeftButton, pos=QPoint(6, p.options[wrong].height() // 2))
    qtbot.mouseClick(p.check, Qt.LeftButton)
    assert p.session.score == 1 and p.session.answered == 2
    assert f"answer is {'ABCD'[QUESTIONS[1].correct]}" in p.feedback.text()
    # changing to the right answer afterwards does not change the first answer's score
    good = p.options[QUESTIONS[1].correct]
    qtbot.mouseClick(good, Qt.LeftButton, pos=QPoint(6, good.height() // 2))
    qtbot.mouseClick(p.check, Qt.LeftButton)
    assert p.session.score == 1
    assert "Score: 1 / 2" in p.score.text()
    # the progress dots jump to a question
    qtbot.mouseClick(p.dots[5], Qt.LeftButton)
    assert p.index == 5
    # no choice yet: Check is disabled, clicking it changes nothing
    assert not p.check.isEnabled()
    qtbot.mouseClick(p.check, Qt.LeftButton)
    assert p.session.answered == 2
    qtbot.mouseClick(p.restart, Qt.LeftButton)
    assert (p.session.score, p.session.answered, p.index) == (0, 0, 0)
    assert "Score: 0 / 0" in p.score.text()


def test_quiz_session_logic():
    s = QuizSession()
    assert s.answer(0, QUESTIONS[0].correct) is True
    assert s.answer(1, (QUESTIONS[1].correct + 1) % 4) is False
    assert s.answer(1, QUESTIONS[1].correct) is True  # right now, but the first answer counts
    assert (s.score, s.answered) == (1, 2)


def test_quiz_answers_agree_with_facts():
    """A few answers recomputed independently (so the key cannot silently drift from the math)."""
    def opt(key, i, lang="en"):
        return i18n.tr(f"learn.quiz.{key}.a{i}", lang=lang)
    by = {q.key: q for q in QUESTIONS}
    assert opt("kda_numbers", by["kda_numbers"].correct) == f"{0.9 * 0.3 + 0.5 * (1 - 0.9 * 0.3):.3f}"
    assert opt("row_bytes", by["row_bytes"].correct) == f"{7168 * 2:,}"
    assert f"{142000 * 3 / 1e6 + 444 * 15 / 1e6:.2f}" in opt("cost", by["cost"].correct)
    assert "16" in opt("experts", by["experts"].correct) and "2" in opt("experts", by["experts"].correct)
    assert "576" in opt("mla_cache", by["mla_cache"].correct)


@pytest.mark.parametrize("qi", range(len(QUESTIONS)))
def test_every_question_complete_and_link_works(win, qtbot, qi):
    q = QUESTIONS[qi]
    for lang in ("en", "ko"):
        for part in ["q", "why"] + [f"a{i}" for i in range(4)]:
            text = i18n.tr(f"learn.quiz.{q.key}.{part}", lang=lang)
            assert text and not text.startswith("[")
    assert HANGUL.search(i18n.tr(f"learn.quiz.{q.key}.q", lang="ko"))
    seen = []
    win.state.block_selected.connect(seen.append)
    p = win.learn.pages["quiz"]
    p.go(qi)
    b = p.options[q.correct]
    qtbot.mouseClick(b, Qt.LeftButton, pos=QPoint(6, b.height() // 2))
    qtbot.mouseClick(p.check, Qt.LeftButton)
    qtbot.mouseClick(p.link, Qt.LeftButton)
    kind, _, target = q.link.partition(":")
    if kind == "exp":
        assert win.exp.tabs.currentWidget() is win.exp.pages[target]
    elif kind == "learn":
        assert win.learn.tabs.currentWidget() is win.learn.pages[target]
    else:
        assert kind == "block" and seen[-1] == target
        assert win.state.layer == int(target[1:target.index("/")]) - 1


def test_catalogues_have_the_same_keys():
    en = json.loads(asset_path("i18n", "learn.en.json").read_text(encoding="utf-8"))
    ko = json.loads(asset_path("i18n", "learn.ko.json").read_text(encoding="utf-8"))
    assert en.keys() == ko.keys()
    assert all(k.startswith("learn.") for k in en)
    assert all(v.strip() for v in list(en.values()) + list(ko.values()))
    # placeholders agree between languages (whatever their format specs: English count phrases
    # "{n:|token|tokens}" beside Korean counters "{n}개", assets/plurals.py)
    def fields(text):
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}

    for k in en:
        assert fields(en[k]) == fields(ko[k]), k


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_all_learn_panels_render_in_both_languages(win, qtbot, lang):
    set_lang(lang)
    win.learn.retranslate()
    for i, key in enumerate(TABS):
        win.learn.tabs.setCurrentIndex(i)
        qtbot.waitUntil(lambda key=key: assert_rendered(win.learn.pages[key].widget()), timeout=5000)
    assert win.learn.windowTitle() == i18n.tr("learn.dock_title")
    if lang == "ko":
        assert HANGUL.search(win.learn.pages["serving"].cost_result.text())


def test_quiz_link_without_experiments_dock_says_so(qtbot):
    state = AppState()
    dock = LearnDock(state)  # alone: no Experiments dock anywhere
    qtbot.addWidget(dock)
    dock.show()
    p = dock.pages["quiz"]
    p.go(next(i for i, q in enumerate(QUESTIONS) if q.link.startswith("exp:")))
    qtbot.mouseClick(p.options[0], Qt.LeftButton, pos=QPoint(6, p.options[0].height() // 2))
    qtbot.mouseClick(p.check, Qt.LeftButton)
    qtbot.mouseClick(p.link, Qt.LeftButton)
    assert p.feedback.text() == i18n.tr("learn.quiz.no_panel")


def test_zero_input_tokens_gives_no_division_error(win, qtbot):
    p = win.learn.pages["serving"]
    _type_into(qtbot, p.tok_in, "0")
    assert p.tok_in.value() == 0
    assert "—" in p.kv_text.text() and "inf" not in p.kv_text.text()


def test_traffic_scenarios_light_the_right_parts(win, qtbot):
    p = win.learn.pages["serving"]
    d = p.diagram
    seen = {}
    for i in range(p.scenario.count()):
        p.scenario.setCurrentIndex(i)
        sc = p.scenario.currentData()
        assert d.scenario == sc and p.scenario_text.text() == i18n.tr(f"learn.serving.scenario.{sc}.text")
        seen[sc] = d.active()
        assert_rendered(d, min_colors=8)
    assert seen["decode"]["nvlink"] == set() and len(seen["decode"]["sm"]) == 8
    assert seen["all_to_all"]["nvlink"] and "3,584" in i18n.tr("learn.serving.scenario.all_to_all.text")
    assert seen["prefix"]["hbm"] == {"state", "kda"}  # MLA KV + KDA state reused
    assert seen["pd"]["pd"] is True
    # the pictures differ between scenarios (pixels, not just state)
    p.scenario.setCurrentIndex(0); a = d.grab().toImage()
    p.scenario.setCurrentIndex(1); b = d.grab().toImage()
    assert a != b
