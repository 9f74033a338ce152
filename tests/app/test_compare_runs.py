"""Issue 41.3: the Compare dock's "Same prompt" page in a real window — the user clicks the page's tab, types a
prompt, clicks Run both; both models' answers, top-5, lens curves, patching maps and named figures appear side by
side, and each equals that model's own explanation (recomputed here with compute.explain, not read from the
page's code). A model without a trained toy says RANDOM WEIGHTS in its header."""
import numpy as np
import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QMainWindow

from app import i18n
from app.state import AppState
from compute import weights as wio

PROMPT = "아이가 상자를 집었다. 그리고"
PAIR = ("kimi-k3", "kimi-linear-48b")
# the page's engines come from the shared cache; the test's own ToyK3 may run the other kernel tier (compiled or
# numpy, whichever was ready when each was built): float32 rounding apart, the numbers must be the same
TOL = 1e-6


@pytest.fixture
def dock(qtbot):
    from app.docks.compare.dock import CompareDock

    i18n.set_language("en")
    state = AppState()
    state.prompt = "로봇이 컵을 집었다"
    win = QMainWindow()
    d = CompareDock(state, win)
    win.addDockWidget(Qt.RightDockWidgetArea, d)
    win.resize(1400, 1000)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    d.keep = win
    yield d
    i18n.set_language("en")


def pick(d, a: str, b: str) -> None:
    d.pick_a.setCurrentIndex(d.pick_a.findData(a))
    d.pick_b.setCurrentIndex(d.pick_b.findData(b))


def open_runs_page(qtbot, d) -> None:
    bar = d.tabs.tabBar()
    qtbot.mouseClick(bar, Qt.LeftButton, pos=bar.tabRect(1).center())
    assert d.tabs.currentIndex() == 1


def run_both(qtbot, d, prompt: str) -> None:
    edit = d.runs.prompt_edit
    edit.clear()
    qtbot.mouseClick(edit, Qt.LeftButton)
    for ch in prompt:  # key events carrying each character (QTest's keyClicks takes ASCII only)
        for kind in (QEvent.KeyPress, QEvent.KeyRelease):
            QApplication.sendEvent(edit, QKeyEvent(kind, 0, Qt.NoModifier, ch))
    assert edit.text() == prompt
    qtbot.mouseClick(d.runs.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: d.runs.results is not None and not d.runs.busy()  # this prompt's results, not the last
                    and d.runs.results_for is not None and d.runs.results_for[1] == prompt, timeout=600_000)


def own_explanation(name: str, prompt: str):
    from compute.engine import ToyK3
    from compute.explain import Explanation
    from compute.model_defaults import config_named

    m = ToyK3(config_named(name), device="cpu")
    return m, Explanation.of_prompt(m, prompt)


def test_run_both_shows_each_models_own_explanation(qtbot, dock):
    d = dock
    pick(d, *PAIR)
    open_runs_page(qtbot, d)
    run_both(qtbot, d, PROMPT)
    assert [r.model for r in d.runs.results] == list(PAIR)
    for i, (name, r) in enumerate(zip(PAIR, d.runs.results)):
        m, ex = own_explanation(name, PROMPT)
        assert r.word == ex.word and r.prob == pytest.approx(float(ex.probs[ex.index_of(ex.word)]), abs=TOL)
        assert [w for w, _ in r.top] == [w for w, _ in ex.top(5)]
        assert np.allclose([p for _, p in r.top], [p for _, p in ex.top(5)], atol=TOL)
        assert np.allclose(r.lens, ex.lens_prob(ex.word), atol=TOL) and len(r.lens) == m.config.num_hidden_layers + 1
        assert np.allclose(r.patch, ex.patch(sites="residual").scores, atol=TOL, equal_nan=True)
        trained = wio.shipped_toy(name) is not None
        assert r.trained == trained == (m.weights_name == "trained")
        col = d.runs.columns[i]
        head = col.header.text()
        assert head.startswith(m.config.display_name)
        assert ("RANDOM WEIGHTS" in head) != trained
        text = col.figures.text()
        assert f"Answer: {ex.word.strip()} ({100 * r.prob:.1f} %)" in text
        assert "Top-5: " in text and "Best KDA mixer" in text and "Heads whose knock-out" in text
        # the patching map is drawn: its plot shows more than one colour
        img = col.map.grab().toImage()
        colours = {img.pixel(x, y) for x in range(20, img.width() - 5, 7) for y in range(5, img.height() - 25, 7)}
        assert len(colours) > 3
        curve = d.runs.curves[i]
        xs, ys = curve.getData()
        assert np.allclose(ys, r.lens) and xs[-1] == pytest.approx(1.0)  # depth axis: layer / layers
    k3 = d.runs.results[0]
    assert k3.mixer_count == {"kda": 69, "mla": 24}


def test_the_page_follows_the_language_and_an_empty_box_takes_the_windows_prompt(qtbot, dock):
    d = dock
    pick(d, "kimi-linear-48b", "kimi-k2")
    open_runs_page(qtbot, d)
    d.runs.prompt_edit.clear()
    qtbot.mouseClick(d.runs.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: d.runs.results is not None and not d.runs.busy(), timeout=600_000)
    assert d.runs.prompt_edit.text() == "로봇이 컵을 집었다"
    assert "".join(d.runs.results[0].pieces) == "로봇이 컵을 집었다"
    i18n.set_language("ko")
    d.retranslate()
    assert d.tabs.tabText(1) == "같은 프롬프트" and d.runs.run_button.text() == "두 모델 실행"
    for r, col in zip(d.runs.results, d.runs.columns):
        assert "답: " in col.figures.text()
        assert ("무작위 가중치" in col.header.text()) != r.trained


def test_a_prompt_outside_the_toy_language_runs_without_a_patching_map_and_says_why(qtbot, dock):
    d = dock
    pick(d, "kimi-linear-48b", "deepseek-v3")
    open_runs_page(qtbot, d)
    run_both(qtbot, d, "zzz qqq")
    for r, col in zip(d.runs.results, d.runs.columns):
        assert r.patch is None and r.copy_arrives is None
        assert "outside the toy language" in col.figures.text()
        assert "outside the toy language" in col.note.toPlainText()  # said on the empty plot too
        assert col.note.isVisible() and col.note.mapRectToScene(col.note.boundingRect()).intersects(
            col.map.plotItem.vb.sceneBoundingRect())  # inside the plot, not off its edge
    # an in-language prompt afterwards: the maps are back, the notes gone, positions named by their tokens
    run_both(qtbot, d, "아이가 상자를 집었다. 그리고")
    for r, col in zip(d.runs.results, d.runs.columns):
        assert r.patch is not None and col.note.toPlainText() == ""
        labels = [text for _, text in col.map.getAxis("bottom")._tickLevels[0]]
        assert labels[2].endswith("상자") or "상자" in labels[2]


def test_a_model_whose_toy_is_missing_says_random_weights_in_its_column(qtbot, dock, monkeypatch):
    """Every bundled model ships a toy now; a column on random weights still says so, in the caveat colour,
    when a model's toy is missing (an install without it): the other column stays trained."""
    from app.engine import explain_service
    from app.widgets.paint import qcolor

    monkeypatch.delitem(wio.SHIPPED_TOYS, PAIR[1])
    monkeypatch.setattr(explain_service, "ENGINES", {})  # no engine cached with the toy loaded
    d = dock
    pick(d, *PAIR)
    open_runs_page(qtbot, d)
    run_both(qtbot, d, "로봇이 공을 집었다")
    qtbot.waitUntil(lambda: d.runs.results is not None and not d.runs.busy(), timeout=600_000)
    a, b = d.runs.results
    assert a.trained and not b.trained
    heads = [c.header for c in d.runs.columns]
    assert "RANDOM WEIGHTS" not in heads[0].text() and "RANDOM WEIGHTS" in heads[1].text()
    assert qcolor("caveat").name().lower() in heads[1].styleSheet().lower()
    assert qcolor("caveat").name().lower() not in heads[0].styleSheet().lower()
