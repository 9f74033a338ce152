"""One step numbering everywhere: a step's number is its place in the whole trace, 1..N. The trace
player's list and counter, the CLI's --step, the API's render(step=...) and the animation captions all count it;
the 17-step pipeline stage is a second label ("Step 16 of 33 · stage 12 of 17 · decode token 2")."""
import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.export import animate
from app import api, cli, i18n

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


class _Picked(Exception):
    pass


def _row_number(text: str) -> int:
    return int(re.match(r"\s*(\d+)\s", text).group(1))


def test_clicking_row_k_shows_step_k_and_the_list_counts_1_to_n(main_window, qtbot):
    win = main_window
    dock, player = win.docks["TracePlayerDock"], win.state.player
    n = len(player.steps)
    numbers = [_row_number(dock.list.item(i).text()) for i in range(dock.list.count())]
    assert numbers == list(range(1, n + 1))  # strictly increasing, no restart at 12 after the prefill
    try:
        for k in (3, 16, 18, n):
            item = dock.list.item(k - 1)
            dock.list.scrollToItem(item)
            rect = dock.list.visualItemRect(item)
            QTest.mouseClick(dock.list.viewport(), Qt.LeftButton, Qt.NoModifier, rect.center())
            qtbot.waitUntil(lambda: win.state.step == k - 1, timeout=3000)
            step = player.steps[k - 1]
            assert dock.counter.text().startswith(f"Step {k} of {n} · stage {step.number} of 17 · ")
            assert _row_number(dock.title.text()) == k
            assert win.status.step_label.text().startswith(f"Step {k} of {n} · ")
        first_decode_lm = next(s for s in player.steps if s.kind == "lm_head" and s.phase == "B")
        player.seek(first_decode_lm.index)
        k = first_decode_lm.index + 1
        assert dock.counter.text() == f"Step {k} of {n} · stage 12 of 17 · decode token 2"
        win.registry.actions["lang_ko"].trigger()
        assert dock.counter.text() == f"{n}단계 중 {k}단계 · 파이프라인 17단계 중 12 · 디코드 토큰 2"
        assert _row_number(dock.list.item(k - 1).text()) == k
    finally:
        i18n.set_language("en")
        player.seek(0)


def _picked_by(monkeypatch, call):
    """The player.Step that `call` hands to build_scene (then stopped: nothing is rendered)."""
    seen = []

    def build_scene(app, config, trace, view, step, *rest, **kw):
        seen.append(step)
        raise _Picked

    monkeypatch.setattr(api, "build_scene", build_scene)
    try:
        call()
    except _Picked:
        pass
    finally:
        i18n.set_language("en")
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("k", [16, 18, 33])
def test_cli_step_and_api_step_pick_the_players_row_k(main_window, monkeypatch, tmp_path, k):
    player = main_window.state.player
    row = player.steps[k - 1]  # the window runs 4 tokens, as the CLI and the API do by default
    by_cli = _picked_by(monkeypatch, lambda: cli._main(["--step", str(k), "--size", "160x90",
                                                          "--out", str(tmp_path / "x.png")]))
    by_api = _picked_by(monkeypatch, lambda: api.render(step=k, size=(160, 90)))
    for picked in (by_cli, by_api):
        assert (picked.kind, picked.phase, picked.pass_index, picked.index) == \
            (row.kind, row.phase, row.pass_index, row.index)


def test_animation_caption_at_step_k_carries_k(main_window):
    win = main_window
    dock, steps = win.docks["TracePlayerDock"], win.state.player.steps
    for k in (1, 16, 18, len(steps)):
        head, _ = animate.caption_text(steps, k - 1, animate.AnimationSpec(), win.config)
        assert head.startswith(f"{k} / {len(steps)} · ")
        assert _row_number(dock.list.item(k - 1).text()) == k


def test_a_saved_view_stores_the_number_of_the_row_it_shows(main_window, tmp_path):
    """A view saved at row k stores step k (the number the list shows) and reading it back gives row k."""
    from app.files import viewfile

    win = main_window
    dock, player = win.docks["TracePlayerDock"], win.state.player
    k = next(s.index for s in player.steps if s.kind == "lm_head" and s.phase == "B") + 1
    try:
        player.seek(k - 1)
        path = tmp_path / "v.k3view"
        assert win.views.save_to(str(path))
        saved = viewfile.load(str(path))
        assert saved.step == k == _row_number(dock.list.item(k - 1).text())
    finally:
        player.seek(0)
