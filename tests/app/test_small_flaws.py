"""Small flaws of issue 27.9, each checked where the user sees it."""


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
