"""Silicon & memory dock, used as a person would: real clicks and typing under Xvfb, pixel checks on grabs."""
import json
import math

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage

from app import i18n
from app.i18n import tr
from assets import asset_path


@pytest.fixture
def dock(qtbot, monkeypatch):
    from app.docks.silicon import SiliconDock
    from app.state import AppState

    i18n.set_language("en")
    state = AppState()
    d = SiliconDock(state)
    d._test_state = state  # keep the state alive as long as the dock
    qtbot.addWidget(d)
    d.resize(1100, 820)
    d.show()
    qtbot.waitExposed(d)
    yield d
    i18n.set_language("en")


def click(qtbot, w):
    qtbot.mouseClick(w, Qt.LeftButton)


def colours(img: QImage, step: int = 3) -> int:
    img = img.convertToFormat(QImage.Format_RGB32)
    seen = set()
    for y in range(0, img.height(), step):
        for x in range(0, img.width(), step):
            seen.add(img.pixel(x, y))
    return len(seen)


def replace_text(qtbot, edit, text):
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key_Backspace)
    qtbot.keyClicks(edit, text)


# --- M1 DRAM ------------------------------------------------------------------------------------------
def test_dram_read_before_threshold_after_threshold_and_after_refresh(dock, qtbot):
    dock.show_tab("dram")
    t = dock.dram
    click(qtbot, t.btn_pause)  # freeze wall-clock time; the test moves model time itself
    assert t.btn_pause.isChecked()
    # threshold time for tau = 100 ms and V_th = 0.5 VDD: 100 ms × ln 2 = 69.3 ms
    assert "69.3 ms" in t.info.text()
    click(qtbot, t.btn_write1)
    t.advance(0.060)  # V = e^-0.6 = 0.549 > 0.5
    click(qtbot, t.btn_read)
    assert t.last_result == 1 and "Read → 1" in t.result.text() and "WRONG" not in t.result.text()

    click(qtbot, t.btn_write1)
    t.advance(0.080)  # V = e^-0.8 = 0.449 < 0.5
    click(qtbot, t.btn_read)
    assert t.last_result == 0 and "WRONG BIT" in t.result.text()

    click(qtbot, t.btn_write1)
    t.advance(0.050)
    click(qtbot, t.btn_refresh)  # sensed at e^-0.5 = 0.61: restored to 1
    t.advance(0.050)  # 100 ms after the write, 50 ms after the refresh
    click(qtbot, t.btn_read)
    assert t.last_result == 1


def test_dram_auto_refresh_and_visible_leak(dock, qtbot):
    dock.show_tab("dram")
    t = dock.dram
    click(qtbot, t.btn_pause)
    click(qtbot, t.auto)
    assert t.auto.isChecked() and t.cell.auto_refresh
    click(qtbot, t.btn_write1)
    full = t.canvas.grab().toImage()
    for _ in range(20):
        t.advance(0.025)  # 0.5 s: 7 auto-refreshes every 64 ms
    click(qtbot, t.btn_read)
    assert t.last_result == 1
    click(qtbot, t.auto)  # off: now the charge leaks away
    click(qtbot, t.btn_write1)
    t.advance(0.150)
    leaked = t.canvas.grab().toImage()
    assert t.cell.voltage() == pytest.approx(math.exp(-1.5))
    # the charge tank is drawn at x 360..420 of an 800×400 logical canvas: its fill must have changed
    s = min(full.width() / 800, full.height() / 400)
    ox, oy = (full.width() - 800 * s) / 2, (full.height() - 400 * s) / 2
    probe = QPoint(int(ox + 390 * s), int(oy + 150 * s))  # above the threshold line: filled when V ≈ 1
    assert full.pixel(probe) != leaked.pixel(probe)
    click(qtbot, t.btn_read)
    assert t.last_result == 0


def test_dram_timer_animates_model_time(dock, qtbot):
    dock.show_tab("dram")
    t = dock.dram
    click(qtbot, t.btn_write1)
    assert not t.btn_pause.isChecked() and t.timer.isActive()
    qtbot.waitUntil(lambda: t.cell.now > 0.001, timeout=5000)  # 20 ms of model time per wall second
    v = t.cell.voltage()
    assert 0 < v < 1
    click(qtbot, t.btn_pause)
    frozen = t.cell.now
    ticks = []
    t.timer.timeout.connect(lambda: ticks.append(1))
    qtbot.waitUntil(lambda: len(ticks) >= 3, timeout=5000)  # the animation timer ticked on, paused
    assert t.cell.now == frozen  # paused: only advance() moves time
    dock.show_tab("sram")
    assert not t.timer.isActive()  # hidden tabs do not animate


# --- M2 SRAM ------------------------------------------------------------------------------------------
def test_sram_holds_without_refresh_and_power_off_loses(dock, qtbot):
    dock.show_tab("sram")
    t = dock.sram
    before = t.canvas.grab().toImage()
    click(qtbot, t.btn_write0)
    assert (t.cell.q, t.cell.q_bar) == (0, 1) and "flipped" in t.result.text()
    t.advance(3600.0)  # an hour, nothing refreshes it
    click(qtbot, t.btn_read)
    assert t.cell.q == 0 and "Read → 0" in t.result.text()
    after = t.canvas.grab().toImage()
    assert before != after  # Q node redrawn as 0
    click(qtbot, t.btn_power)
    assert not t.cell.powered and t.cell.q is None
    click(qtbot, t.btn_read)
    assert "No power" in t.result.text()
    click(qtbot, t.btn_write1)
    assert t.cell.q is None
    click(qtbot, t.btn_power)
    assert t.cell.powered and t.cell.q in (0, 1) and "not the old data" in t.result.text()


# --- M3 BF16 ------------------------------------------------------------------------------------------
def test_bf16_typing_toggling_and_specials(dock, qtbot):
    dock.show_tab("bf16")
    t = dock.bf16
    assert t.input.text() == "0.75"
    # 0.75 = 0 01111110 1000000
    assert "".join(b.text() for b in t.bit_buttons) == "0011111101000000"
    assert "= 0.75" in t.value.text()
    replace_text(qtbot, t.input, "0.1")
    # float32(0.1) = 0x3DCCCCCD, lower half 0xCCCD > 0x8000 -> rounds up to 0x3DCD = 0.10009765625
    assert t.pattern == 0x3DCD and "0.10009765625" in t.value.text()
    assert t.rounding["decision"] == "up" and t.rounding["lower"] == 0xCCCD
    click(qtbot, t.bit_buttons[0])  # the sign bit
    assert t.pattern == 0xBDCD and "-0.10009765625" in t.value.text() and t.input.text() == "-0.10009765625"
    click(qtbot, t.bit_buttons[15])  # lowest mantissa bit: 0xBDCC
    assert t.pattern == 0xBDCC
    replace_text(qtbot, t.input, "abc")
    assert t.error.isVisible() and "not a number" in t.error.text()
    assert t.pattern == 0xBDCC  # last valid value kept
    nan_btn = next(b for b, _v in t.specials if b.objectName() == "bf16_special_NaN")
    click(qtbot, nan_btn)
    assert "NaN" in t.value.text() and (t.pattern >> 7) & 0xFF == 0xFF and t.pattern & 0x7F
    assert not t.error.text()
    sub = next(b for b, _v in t.specials if b.objectName() == "bf16_special_min_sub")
    click(qtbot, sub)
    assert t.pattern == 0x0001 and "subnormal" in t.value.text()
    assert "14,336 bytes" in t.facts.text()  # 7,168 × 2 B


# --- M4 hierarchy ---------------------------------------------------------------------------------------
def test_hierarchy_selector_highlights_and_explains(dock, qtbot):
    dock.show_tab("hier")
    t = dock.hier
    lw = t.items
    img_weights = t.diagram.grab().toImage()
    row = next(i for i in range(lw.count()) if lw.item(i).data(Qt.UserRole) == "request_text")
    rect = lw.visualItemRect(lw.item(row))
    qtbot.mouseClick(lw.viewport(), Qt.LeftButton, pos=rect.center())
    assert t.item() == "request_text"
    assert "never sees the text" in t.explain.text()
    img_text = t.diagram.grab().toImage()
    assert img_weights != img_text  # HBM no longer lit, host lit instead
    t.select_item("mla_cache")
    assert "27,648 bytes per token" in t.explain.text() and "numbers, not text" in t.explain.text()
    t.gpu_combo.setCurrentIndex(t.gpu_combo.findData("B300"))
    assert "288 GB" in t.source.text() and "approximate" in t.source.text()


# --- M5 calculator -----------------------------------------------------------------------------------------
def test_seed_calculator_defaults(dock, qtbot):
    dock.show_tab("calc")
    o = dock.calc.seed.out_values
    assert [o[k].text() for k in ("weights_gb", "kv_gib", "total_gib", "per_gpu_gib")] == \
        ["14.00 GB", "0.50 GiB", "13.54 GiB", "13.54 GiB"]
    assert "536,870,912 B" in dock.calc.seed.formula.text()  # 2×32×4096×1×8×128×2


def test_seed_calculator_invalid_input_keeps_last_result(dock, qtbot):
    dock.show_tab("calc")
    s = dock.calc.seed
    tokens = s.fields["tokens"]
    replace_text(qtbot, tokens.edit, "-5")
    assert tokens.error.isVisible() and tokens.error.text() == tr("silicon.calc.err_range", lo="1", hi="100,000,000")
    assert s.out_values["kv_gib"].text() == "0.50 GiB"  # last good result stays
    assert s.stale.text()
    replace_text(qtbot, s.fields["d_model"].edit, "4010")
    assert "multiple of 32" in s.fields["d_model"].error.text()
    replace_text(qtbot, s.fields["d_model"].edit, "4096")
    replace_text(qtbot, tokens.edit, "8192")  # twice the tokens: KV 2 × 0.5 GiB
    assert not tokens.error.isVisible() and not s.stale.text()
    assert s.out_values["kv_gib"].text() == "1.00 GiB"
    replace_text(qtbot, s.fields["gpus"].edit, "two")
    assert s.fields["gpus"].error.text() == "Enter a number."
    assert s.out_values["kv_gib"].text() == "1.00 GiB"


def test_k3_mode(dock, qtbot):
    dock.show_tab("calc")
    dock.calc.modes.setCurrentIndex(1)
    k = dock.calc.k3
    o = k.out_values
    # 2.8e12 × 0.53125 B = 1,487.5 GB; MLA 27,648 B × 2^20 tokens = 27 GiB; KDA 414 MiB = 0.404 GiB
    assert o["weights_gb"].text().startswith("1,487.5 GB")
    assert o["mla_gib"].text() == "27.00 GiB" and o["kda_gib"].text() == "0.404 GiB"
    assert o["hbm_gb"].text() == "2,304 GB" and o["max_sequences"].text() == "27"
    assert o["all_mla_gib"].text() == "104.62 GiB"  # 93 × 576 × 2 B × 2^20 / 2^30 = 104.625
    x, y = k.curves["kda_gib"].getData()
    assert len(x) > 10 and max(y) == pytest.approx(min(y))  # constant in context
    k.fmt.setCurrentIndex(k.fmt.findData("bf16"))  # 5,600 GB > 2,304 GB
    assert "Does not fit" in k.fits.text() and o["max_sequences"].text() == "0"
    replace_text(qtbot, k.fields["context"].edit, "2000000")  # beyond K3's 1,048,576 window
    assert k.fields["context"].error.isVisible() and k.stale.text()
    # typed key by key: the last valid value was 200,000 tokens -> 200,000 × 27,648 B / 2^30 = 5.15 GiB
    assert o["mla_gib"].text() == "5.15 GiB"


# --- M6 + all tabs in both languages ---------------------------------------------------------------------------
def test_analogy_table_has_the_seed_rows(dock):
    dock.show_tab("analogy")
    tab = dock.analogy
    cells = tab.cells()
    assert len(cells) == 4 and all(len(r) == 3 for r in cells)
    assert "not a database of natural-language text" in cells[1][2] and cells[1][2] in tab.table.text()
    i18n.set_language("ko")
    assert tab.cells()[1][2] == "캐시는 토큰의 K/V 숫자 텐서, 자연어 원문 DB가 아님"  # the seed's wording
    assert tab.cells()[1][2] in tab.table.text()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_tab_renders_non_blank_with_all_strings_translated(dock, qtbot, lang, monkeypatch):
    import app.docks.tabbed as m0
    import app.docks.silicon.analogy as m6
    import app.docks.silicon.bf16 as m3
    import app.docks.silicon.calc as m5
    import app.docks.silicon.dram as m1
    import app.docks.silicon.hierarchy as m4
    import app.docks.silicon.sram as m2

    missing = []

    def checked_tr(key, lang=None, **fmt):
        if key not in i18n.table(lang):
            missing.append(key)
        return tr(key, lang, **fmt)

    for mod in (m0, m1, m2, m3, m4, m5, m6):
        monkeypatch.setattr(mod, "tr", checked_tr)
    i18n.set_language(lang)
    dock.retranslate()
    from app.docks.silicon import TAB_KEYS

    for key in TAB_KEYS:
        dock.show_tab(key)
        page = dock.pages[key]
        qtbot.waitUntil(lambda page=page: colours(page.grab().toImage()) > 40, timeout=5000)
        drawn = {"dram": "canvas", "sram": "canvas", "bf16": "strip", "hier": "diagram"}.get(key)
        if drawn:  # the QPainter drawings themselves
            assert colours(getattr(page, drawn).grab().toImage()) > 40, key
    assert missing == []
    assert dock.tabs.tabText(0) == tr("silicon.tab.dram", lang)
    assert dock.windowTitle() == tr("silicon.dock.title", lang)


def test_catalogues_have_the_same_keys():
    en = json.loads(asset_path("i18n", "silicon.en.json").read_text(encoding="utf-8"))
    ko = json.loads(asset_path("i18n", "silicon.ko.json").read_text(encoding="utf-8"))
    assert set(en) == set(ko) and all(k.startswith("silicon.") for k in en)
    assert all(v.strip() for v in list(en.values()) + list(ko.values()))


def test_every_literal_key_in_the_dock_code_exists():
    import re
    from pathlib import Path

    en = json.loads(asset_path("i18n", "silicon.en.json").read_text(encoding="utf-8"))
    root = Path(__file__).resolve().parents[2] / "app" / "docks"
    used = set()
    for path in root.glob("silicon/*.py"):
        used |= set(re.findall(r'"(silicon\.[a-z0-9_.]+[a-z0-9])"', path.read_text(encoding="utf-8")))
    assert len(used) > 100
    assert sorted(k for k in used if k not in en) == []
