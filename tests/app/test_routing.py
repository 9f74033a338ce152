"""RoutingDock in a real window: every tab draws something in both languages, clicks show what a layer or a
device adds, numbers are checked against hand computation, animations run only while visible."""
import math

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QLabel, QMainWindow

from app import i18n
from app.state import AppState


@pytest.fixture
def dock(qtbot):
    from app.docks.routing import RoutingDock

    i18n.set_language("en")
    state = AppState()
    win = QMainWindow()
    d = RoutingDock(state, win)
    win.addDockWidget(Qt.RightDockWidgetArea, d)
    win.resize(1100, 950)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    yield d
    i18n.set_language("en")


def image_stats(widget):
    """(fraction of pixels that differ from the most common colour, number of distinct colours)."""
    img = widget.grab().toImage().convertToFormat(widget.grab().toImage().Format.Format_RGB32)
    w, h = img.width(), img.height()
    buf = np.frombuffer(img.constBits(), dtype=np.uint32, count=img.bytesPerLine() * h // 4)
    px = buf.reshape(h, img.bytesPerLine() // 4)[:, :w].ravel()
    values, counts = np.unique(px, return_counts=True)
    return 1.0 - counts.max() / px.size, values.size


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_tab_renders_non_blank_in_both_languages(dock, qtbot, lang):
    i18n.set_language(lang)
    for i, page in enumerate(dock.pages.values()):
        dock.tabs.setCurrentIndex(i)
        assert dock.tabs.tabText(i) == i18n.tr(("routing.tab.meanings", "routing.tab.encap", "routing.tab.server",
                                                 "routing.tab.toy")[i], lang=lang)

        def drawn(i=i, page=page):
            ink, colours = image_stats(page)
            assert ink > 0.25 and colours > 60, f"tab {i} ({lang}) looks blank: ink {ink:.2f}, {colours} colours"

        qtbot.waitUntil(drawn, timeout=5000)
        for label in page.findChildren(QLabel):
            assert "[routing." not in label.text(), f"missing key shown in tab {i}: {label.text()}"
    if lang == "ko":
        assert "네트워크" in dock.meanings_tab.cards["net"].title.text()


def test_each_meaning_card_has_a_drawn_diagram_and_the_three_questions(dock, qtbot):
    for key, card in dock.meanings_tab.cards.items():
        ink, colours = image_stats(card.diagram)
        assert ink > 0.05 and colours > 20, key
        text = card.facts.text()
        for q in ("routing.what", "routing.who", "routing.rule"):
            assert i18n.tr(q) in text


def test_animation_timers_run_only_while_visible(dock, qtbot):
    meanings = [c.diagram for c in dock.meanings_tab.cards.values()]
    dock.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: all(d.timer.isActive() for d in meanings), timeout=5000)
    dock.tabs.setCurrentIndex(2)
    qtbot.waitUntil(lambda: not any(d.timer.isActive() for d in meanings), timeout=5000)
    qtbot.waitUntil(dock.server_tab.server.timer.isActive, timeout=5000)
    dock.hide()
    qtbot.waitUntil(lambda: not dock.server_tab.server.timer.isActive(), timeout=5000)


def test_moe_card_shows_the_engine_selection(dock, qtbot):
    from compute.engine import ToyK3

    state = dock.state
    state.set_trace(ToyK3(device="cpu").run("로봇이 컵을", max_new_tokens=1))
    state.select_layer(40)
    state.select_token(1)
    sel, caption = dock.meanings_tab.cards["moe"].diagram.selection()
    p = state.trace.passes[0]
    row = int(np.nonzero(np.asarray(p.positions) == 1)[0][0])
    assert sorted(int(e) for e in sel) == sorted(int(e) for e in p.layers[40].tensors["moe.topk_idx"][row])
    assert "41" in caption
    state.select_layer(0)  # dense layer: no router, the card says it is an illustration
    sel, caption = dock.meanings_tab.cards["moe"].diagram.selection()
    assert sel.size == 0


def test_clicking_a_layer_shows_what_it_adds(dock, qtbot):
    dock.show_tab("encap")
    stacks = dock.encap_tab.stacks
    qtbot.waitUntil(lambda: stacks.block_rect("ethercat", "ecat.frame").width() > 20, timeout=5000)  # painted
    rect = stacks.block_rect("ethercat", "ecat.frame")
    corner = QPoint(int(rect.left()) + 9, int(rect.top()) + 9)  # inside the block, away from its label
    before = stacks.grab().toImage().pixelColor(corner)
    qtbot.mouseClick(stacks, Qt.LeftButton, pos=rect.center().toPoint())
    assert stacks.selected == ("ethercat", "ecat.frame")
    assert "0x88A4" in dock.encap_tab.detail.text()
    assert dock.encap_tab.envelope.stack == "ethercat" and dock.encap_tab.envelope.key == "ecat.frame"
    after = stacks.grab().toImage().pixelColor(corner)
    assert after.lightness() > before.lightness(), "the chosen block is drawn brighter"
    rect = stacks.block_rect("https", "llm.tcp")
    qtbot.mouseClick(stacks, Qt.LeftButton, pos=rect.center().toPoint())
    assert "QUIC" in dock.encap_tab.detail.text()
    caveats = dock.encap_tab.caveats.text()
    assert "OSI" in caveats and "QUIC" in caveats and "GPU" in caveats


def test_server_devices_and_placements_with_hand_numbers(dock, qtbot):
    tab = dock.server_tab
    dock.show_tab("server")
    qtbot.waitUntil(lambda: tab.server.device_rect("hbm").width() > 0, timeout=5000)  # the devices are drawn
    qtbot.mouseClick(tab.server, Qt.LeftButton, pos=tab.server.device_rect("hbm").center().toPoint())
    assert tab.server.selected == "hbm" and "HBM" in tab.server_detail.text()
    text = tab.place_detail.text()  # tensor parallel by default
    assert "14,336" in text and "28,672" in text  # 7168 * 2 bytes, two AllReduces
    qtbot.mouseClick(tab.radios["pp"], Qt.LeftButton)
    text = tab.place_detail.text()
    assert "1–24, 25–47, 48–70, 71–93" in text  # 93 layers on 4 GPUs: 24 + 23 + 23 + 23
    qtbot.mouseClick(tab.radios["ep"], Qt.LeftButton)
    text = tab.place_detail.text()
    assert "224" in text and "114,688" in text and "229,376" in text  # 896/4; 16*3584*2; 16*7168*2
    assert tab.place.mode == "ep"


def test_logical_router_hand_computation_and_k3_bias(dock, qtbot):
    from app.docks.routing.model import H, W_ROUTER, k3_router, logical_router

    r, p, idx = logical_router(H["robot"], W_ROUTER)
    # by hand: r0 = 1.2 - 0.18 - 0.04 + 0 ; r1 = -0.2 + 0.66 - 0.02 + 0.03 ; r2 = 0.1 + 0.12 - 0.26 - 0.04 ;
    #          r3 = 0 + 0.24 + 0.06 + 0.1
    hand = [0.98, 0.47, -0.08, 0.40]
    np.testing.assert_allclose(r, hand, atol=1e-12)
    ex = [math.exp(v) for v in hand]
    np.testing.assert_allclose(p, [v / sum(ex) for v in ex], atol=1e-12)
    assert list(idx) == [0, 1]
    s, idx3, w3 = k3_router(r, np.array([0.0, -0.3, 0.0, 0.0]))
    s_hand = [1 / (1 + math.exp(-v)) for v in hand]
    assert list(idx3) == [0, 3]  # s1 - 0.3 = 0.315 falls below s3 = 0.599
    np.testing.assert_allclose(w3, [s_hand[0] / (s_hand[0] + s_hand[3]), s_hand[3] / (s_hand[0] + s_hand[3])])

    tab = dock.toy_tab
    dock.show_tab("toy")
    qtbot.waitUntil(lambda: "E0 (p=0.399), E1 (p=0.240)" in tab.result.text(), timeout=5000)
    spin = tab.bias_spins[1]
    spin.selectAll()
    qtbot.keyClicks(spin.lineEdit(), "-0.30")
    qtbot.keyClick(spin.lineEdit(), Qt.Key_Return)
    assert spin.value() == pytest.approx(-0.3)
    w0 = s_hand[0] / (s_hand[0] + s_hand[3])
    assert f"E0 (w={w0:.3f}), E3 (w={1 - w0:.3f})" in tab.result.text()
    # another condition through the keyboard changes the scores
    tab.condition.setFocus()
    qtbot.keyClick(tab.condition, Qt.Key_Down)
    assert tab.diagram.condition == "language"
    r2, p2, idx2 = logical_router(H["language"], W_ROUTER)
    assert f"E{idx2[0]} (p={p2[idx2[0]]:.3f})" in tab.result.text()
