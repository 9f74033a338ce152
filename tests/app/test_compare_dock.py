"""B1 Compare dock: real events on the pickers and the context controls; the numbers shown are compute.teaching.compare's;
the exported PNG holds the plot's two curve colours."""
import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from compute.teaching.compare import crossover, summarize
from compute.config import ModelConfig, available_configs
from tests.app.gui_helpers import image_array


def _summary(stem):
    return summarize(ModelConfig.from_json(available_configs()[stem]))


@pytest.fixture
def dock(qtbot):
    from app.docks.compare import CompareDock
    from app.state import AppState

    d = CompareDock(AppState())
    qtbot.addWidget(d)
    d.resize(720, 900)
    d.show()
    qtbot.waitExposed(d)
    return d


def _col_texts(d, col):
    return [d.table.item(r, col).text() for r in range(d.table.rowCount())]


def _pick(qtbot, combo, stem):
    combo.setFocus()
    while combo.currentData() != stem:  # a real key event per step, as a user would
        qtbot.keyClick(combo, Qt.Key_Down)
        if combo.currentIndex() == combo.count() - 1 and combo.currentData() != stem:
            qtbot.keyClick(combo, Qt.Key_Home)


def test_defaults_and_numbers(dock):
    from app.docks.compare.dock import human_bytes

    assert (dock.pick_a.currentData(), dock.pick_b.currentData()) == ("kimi-k3", "deepseek-v3")
    a, b = _texts = _col_texts(dock, 0), _col_texts(dock, 1)
    assert a[0] == "93" and "69 KDA + 24 MLA" in a[1] and a[2] == "KKKM × 23 + M"
    assert dock.table.item(2, 0).toolTip() == "KKKM" * 23 + "M" and dock.table.item(2, 1).toolTip() == "M" * 61
    assert b[0] == "61" and b[2] == "M × 61" and "3 dense + 58 MoE" in b[3]
    assert a[5] == "16" and b[5] == "8"
    # 27,648 B/token and 434,110,464 B state (see tests/compute/test_compare.py)
    assert a[9] == human_bytes(27_648) == "27 KiB" and a[10] == human_bytes(434_110_464) == "414 MiB"
    assert a[11] == human_bytes(27_648 * dock.context + 434_110_464)
    assert dock.cross == pytest.approx(434_110_464 / 42_624)
    assert "10,185" in dock.crossover_label.text() and dock.cross_line.isVisible()


def test_pickers_and_context(dock, qtbot):
    from app.docks.compare.dock import human_bytes

    _pick(qtbot, dock.pick_b, "kimi-linear-48b")
    assert dock.table.horizontalHeaderItem(1).text() == "Kimi Linear 48B"
    kl, k3 = _summary("kimi-linear-48b"), _summary("kimi-k3")
    assert crossover(k3, kl) is None and "never cross" in dock.crossover_label.text()
    assert not dock.cross_line.isVisible()
    # the spin box: type a context
    dock.spin.setFocus()
    dock.spin.selectAll()
    qtbot.keyClicks(dock.spin, "1048576")
    qtbot.keyClick(dock.spin, Qt.Key_Return)
    assert dock.context == 1_048_576 and dock.slider.value() == dock.slider.maximum()
    assert _col_texts(dock, 1)[11] == human_bytes(kl.cache_at(1_048_576))
    assert "1,048,576" in dock.table.verticalHeaderItem(11).text()
    # the slider: Home key → 1k
    dock.slider.setFocus()
    qtbot.keyClick(dock.slider, Qt.Key_Home)
    assert dock.context == 1024 and dock.spin.value() == 1024
    assert _col_texts(dock, 0)[11] == human_bytes(k3.cache_at(1024))
    qtbot.keyClick(dock.slider, Qt.Key_PageUp)
    assert dock.context > 1024 and dock.spin.value() == dock.context


def test_export_png(dock, qtbot, tmp_path):
    from app.widgets.paint import qcolor

    qtbot.waitUntil(lambda: dock.page.width() > 300 and dock.page.height() > 400, timeout=5000)  # laid out
    path = tmp_path / "compare.png"
    assert dock.export_png(str(path))
    img = QImage(str(path))
    assert not img.isNull() and img.width() > 300 and img.height() > 400
    px = image_array(img)[..., :3].astype(int)
    for role in ("phase_a", "phase_b"):
        c = qcolor(role)
        near = (np.abs(px - np.array([c.red(), c.green(), c.blue()])).sum(axis=2) < 40).sum()
        assert near > 100, role
    assert "compare.png" in dock.status.text()
    bad = tmp_path / "missing" / "x.png"
    assert not dock.export_png(str(bad))
    assert dock.status.text() and "\n" not in dock.status.text()


def test_korean(dock):
    dock.state.set_language("ko")  # the dock follows state.language_changed itself
    try:
        assert dock.windowTitle() == "비교" and "교차" in dock.crossover_label.text()
        assert dock.table.verticalHeaderItem(0).text() == "레이어"
    finally:
        dock.state.set_language("en")
    assert dock.windowTitle() == "Compare"


def test_compare_dock_in_the_window(make_window, qtbot, tmp_path):
    win = make_window()
    dock = win.docks["CompareDock"]
    assert dock.windowTitle() == "Compare" and dock.toggleViewAction().text() == "Compare"
    win.state.show_dock("CompareDock", "")
    qtbot.waitUntil(lambda: dock.isVisible() and not dock.visibleRegion().isEmpty(), timeout=5000)
    assert dock.export_png(str(tmp_path / "win.png")) and (tmp_path / "win.png").stat().st_size > 1000
