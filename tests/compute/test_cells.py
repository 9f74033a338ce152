"""DRAM 1T1C and SRAM 6T teaching models: deterministic time, hand-computed thresholds."""
import math

import pytest

from compute.teaching.cells import DRAMCell, SRAMCell, dram_voltage, sense, threshold_time


def test_voltage_and_threshold_time_by_hand():
    assert dram_voltage(1.0, 0.1, 0.1) == pytest.approx(math.exp(-1))  # 0.3679
    # V = 0.5 when exp(-t/0.1) = 0.5 -> t = 0.1 · ln 2 = 0.069315 s
    assert threshold_time(0.1, 0.5) == pytest.approx(0.0693147, abs=1e-6)
    assert sense(0.51, 0.5) == 1 and sense(0.49, 0.5) == 0


def test_one_read_before_threshold_is_one_after_is_zero():
    c = DRAMCell(tau=0.1, threshold=0.5)
    c.write(1)
    c.advance(0.060)  # V = exp(-0.6) = 0.549 > 0.5
    assert c.voltage() == pytest.approx(0.5488, abs=1e-4)
    assert c.read() == 1
    assert c.voltage() == 1.0  # the read restored the charge
    c.advance(0.080)  # V = exp(-0.8) = 0.449 < 0.5
    assert c.read() == 0  # the 1 is lost: the read returns the wrong bit ...
    c.advance(0.001)
    assert c.voltage() == 0.0 and c.read() == 0  # ... and wrote 0 back


def test_refresh_in_time_keeps_the_one():
    c = DRAMCell(tau=0.1, threshold=0.5)
    c.write(1)
    c.advance(0.050)
    assert c.refresh() == 1
    c.advance(0.050)  # 0.100 s after the write, but only 0.050 after the refresh
    assert c.read() == 1


def test_auto_refresh_applies_at_exact_times():
    c = DRAMCell(tau=0.1, threshold=0.5, refresh_interval=0.064)
    c.write(1)
    c.set_auto_refresh(True)
    c.advance(1.0)  # 15 refreshes at 0.064 k; each happens at V = exp(-0.64) = 0.527 > 0.5
    assert [e[0] for e in c.events if e[1] == "auto_refresh"] == pytest.approx([0.064 * k for k in range(1, 16)])
    assert c.read() == 1
    slow = DRAMCell(tau=0.1, threshold=0.5, refresh_interval=0.080)  # too slow: exp(-0.8) < 0.5
    slow.write(1)
    slow.set_auto_refresh(True)
    slow.advance(0.2)
    assert slow.read() == 0


def test_zero_stays_zero_and_bad_input():
    c = DRAMCell()
    c.write(0)
    c.advance(10)
    assert c.read() == 0
    with pytest.raises(ValueError):
        c.write(2)
    with pytest.raises(ValueError):
        c.advance(-1)


def test_sram_holds_without_refresh_and_flips_on_write():
    s = SRAMCell()
    s.write(1)
    s.release()
    assert (s.q, s.q_bar) == (1, 0)
    s.advance(3600.0)  # an hour, no refresh
    assert s.read() == 1 and s.read() == 1  # reads are not destructive
    t = s.transistors()
    assert t["PU1"] and t["PD2"] and not t["PD1"] and not t["PU2"] and not t["AX1"]
    s.write(0)
    assert (s.q, s.q_bar) == (0, 1) and s.transistors()["AX1"]


def test_sram_power_off_loses_the_bit():
    s = SRAMCell(seed=3)
    s.write(1)
    s.power_off()
    assert s.read() is None and s.q_bar is None
    with pytest.raises(RuntimeError):
        s.write(1)
    q = s.power_on()
    assert q in (0, 1) and s.read() == q
    values = set()
    for seed in range(16):  # power-up state is not the old data: both states occur
        x = SRAMCell(seed=seed)
        x.power_off()
        values.add(x.power_on())
    assert values == {0, 1}
