"""Small flaws, each checked where the user sees it."""

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def test_qb_at_update_0_reads_the_same_ratio_twice(main_window, qtbot):
    """Before any update the start and the current max-load/ideal are one number: printed alike (it read
    'start 7.32 → now 7.315')."""
    import re

    dock = main_window.docks["ExpertGridDock"]
    dock.show_tab("qb")
    qtbot.waitUntil(lambda: dock.qb_tab.sim is not None, timeout=10000)
    sim = dock.qb_tab.sim
    assert sim.current.update == 0
    text = dock.qb_tab.numbers.text()
    start, now = re.search(r"<b>([\d.]+)</b> → \S+ <b>([\d.]+)</b> ·", text).groups()
    assert start == now == f"{sim.before.max_over_ideal:.3f}"


def test_the_first_window_fills_a_large_screen_too():
    """A first window on an unscaled 3840 x 2160 screen is 92% of it (it opened at 1880 x 1040); common sizes
    are as before (92%, within the screen)."""
    from app.window.window_layout import window_size_for

    w, h = window_size_for(3840, 2112)
    assert w > 1880 * 1.5 and h > 1040 * 1.5 and w <= 3840 and h <= 2112
    assert window_size_for(1920, 1040) == (1766, 956)
    assert window_size_for(1366, 728) == (1256, 669)
