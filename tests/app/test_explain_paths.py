"""Path patching in the window (issue 39): the Route page's view box offers "Blocks: direct paths (path
patching)". Chosen with the keyboard, its table lists the blocks whose direct path to the answer restores most
(compute.explain.path_patching: the block's clean output sent only to the final readout, every other block at its
corrupted output), each also sent along every path (to every later block too), both named; the numbers equal what
the Python API computes on a fresh engine in the test, the note names the corrupted prompt and the metric, and
Korean headers follow a language switch. A prompt outside the toy language says why in one line."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app import api, i18n
from test_explain_dock import PROMPT, dock, open_page, wait_for  # noqa: F401 - the dock fixture


def _choose_paths(dock) -> None:
    open_page(dock, "route")
    view = dock.effects_view.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key_End)  # the last choice: the direct paths
    assert dock.effects_view.current() == "paths" and dock.effects_view.paths.isVisible()


def test_the_direct_paths_table_equals_the_apis_path_patching(dock):
    _choose_paths(dock)
    wait_for(lambda: "paths" in dock.result.effects and not dock.busy, timeout_s=600, dock=dock)
    ex = api.explain(PROMPT, position=dock.result.position)
    grid = ex.direct_paths()
    L = grid.scores.shape[0]
    want = sorted(((li + 1, part, float(grid.scores[li, j])) for li in range(L)
                   for j, part in enumerate(("mixer", "ffn"))), key=lambda r: -abs(r[2]))[:10]
    t = dock.effects_view.paths
    assert t.rowCount() == len(want) == 10
    for r, (ly, part, direct) in enumerate(want):
        assert t.item(r, 0).text() == str(ly) and t.item(r, 1).text() == {"mixer": "mixer", "ffn": "FFN"}[part]
        assert t.item(r, 2).text() == f"{100 * direct:+.0f} %"
    # the top block along every path: the API's path patching through every later block and the readout
    ly, part, direct = want[0]
    later = ([(ly, "ffn")] if part == "mixer" else []) + [(k, p) for k in range(ly + 1, L + 1) for p in ("mixer", "ffn")]
    every = ex.path_patch(grid.corrupted, sender=(ly, part), receivers=later + ["logits"]).score
    assert t.item(0, 3).text() == f"{100 * every:+.0f} %"
    if (ly, part) == (L, "ffn"):  # the last block has no later block: both paths are one
        assert np.isclose(every, direct)
    note = dock.effects_view.note
    assert grid.corrupted in note.text() and "Direct" in note.text()
    assert "Path patching" in note.toolTip() and "restored fraction" in note.toolTip()
    head = lambda c: " ".join(t.horizontalHeaderItem(c).text().split())  # noqa: E731 - headers wrap to fit
    assert head(2) == "Direct path to the answer" and head(3) == "Every path (activation patching)"
    i18n.set_language("ko")
    dock.state.language_changed.emit("ko")
    assert head(2) == "답으로 가는 직접 경로" and "경로 패칭" in dock.effects_view.view.currentText()
    i18n.set_language("en")
    dock.state.language_changed.emit("en")
    QTest.keyClick(dock.effects_view.view, Qt.Key_Home)  # back to the patching map
    assert dock.effects_view.current() == "patching" and dock.patch_map.isVisible()


def test_a_prompt_outside_the_language_says_why_in_one_line(dock):
    from compute.trace import Knobs

    dock.state.set_trace(dock.engine.run("zzz qqq xxx", 2, Knobs(temperature=0.0)))  # as the engine thread sends it
    _choose_paths(dock)
    wait_for(lambda: dock.result is not None and not dock.busy
             and ("paths_error" in dock.result.effects or "paths" in dock.result.effects),
             timeout_s=300, dock=dock)
    assert "paths" not in dock.result.effects
    text = dock.effects_view.note.text()
    assert text.startswith("Could not compute these effects:") and "\n" not in text
    assert dock.effects_view.paths.rowCount() == 0


def test_the_paths_table_has_its_random_block_control(dock):
    """Under the table, a named line: the listed blocks' direct paths patched together, as many random blocks
    (numpy seed 0, drawn here from all blocks) patched together, and one block's median |direct path| — the
    numbers the Python API gives, in English and in Korean; the line goes with the table."""
    _choose_paths(dock)
    wait_for(lambda: "paths" in dock.result.effects and not dock.busy, timeout_s=600, dock=dock)
    ex = api.explain(PROMPT, position=dock.result.position)
    grid = ex.direct_paths()
    L = grid.scores.shape[0]
    listed = [(int(dock.effects_view.paths.item(r, 0).text()),
               {"mixer": "mixer", "FFN": "ffn"}[dock.effects_view.paths.item(r, 1).text()]) for r in range(10)]
    every = [(ly, part) for ly in range(1, L + 1) for part in ("mixer", "ffn")]
    drawn = sorted(np.random.default_rng(0).choice(len(every), 10, replace=False).tolist())
    together = ex.path_patch(sender=listed).score
    rnd = ex.path_patch(sender=[every[i] for i in drawn]).score
    median = float(np.median(np.abs(grid.scores)))
    assert together > 0.3 and abs(rnd) < together / 3  # the listed blocks are far above chance on this prompt
    line = dock.effects_view.control
    assert line.isVisible() and line.objectName() == "explain_paths_control" and "\n" not in line.text()
    assert line.text() == (f"Control, direct paths patched together: these 10 {100 * together:+.0f} %, 10 random "
                           f"blocks (seed 0) {100 * rnd:+.0f} %; median |direct path| of a block {100 * median:.1f} %.")
    assert "Random-block control" in line.toolTip() and f"all {L * 2}" in line.toolTip()
    assert line.geometry().top() >= dock.effects_view.stack.geometry().bottom()  # under the table
    i18n.set_language("ko")
    dock.state.language_changed.emit("ko")
    assert line.text().startswith("대조군, 직접 경로를 함께 패칭: 위 10개 ")
    assert f"{100 * together:+.0f} %" in line.text() and f"{100 * rnd:+.0f} %" in line.text()
    assert "무작위 블록 대조군" in line.toolTip()
    i18n.set_language("en")
    dock.state.language_changed.emit("en")
    QTest.keyClick(dock.effects_view.view, Qt.Key_Home)  # the patching map: no control line
    assert not line.isVisible()
