"""Teaching models of one memory bit: a DRAM/HBM 1T1C cell and an SRAM 6T cell. Pure Python, no Qt.

Both are SIMPLIFIED MODELS, labelled as such in the UI:
- DRAM: the capacitor voltage decays exponentially, V(t) = V0 · exp(-(t - t0) / tau), towards 0 V. The sense
  amplifier compares V with a threshold (a fraction of VDD); a read is destructive and restores (writes back)
  what it sensed, a refresh is a read without output. A 1 left alone longer than tau · ln(V_DD / V_th) is
  read back as 0. Real cells leak with a spread of time constants, depend on temperature, and sense against
  a precharged bit line at VDD/2; the numbers here are illustrative, not a device model.
- SRAM 6T: two cross-coupled inverters hold Q and Q̅ (= not Q) with no refresh for as long as power is on;
  writing drives the bit lines BL / BL̅ through the two access transistors and flips the loop; power off loses
  the bit; at power-up the loop settles to an unpredictable state (modelled with a seeded random generator).

Time is model time in seconds and advances only through `advance(dt)`, so tests are deterministic; the Qt
side calls `advance` from a timer, scaled by a time-compression factor.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


def dram_voltage(v0: float, elapsed: float, tau: float) -> float:
    """V(t) = V0 · exp(-elapsed / tau); elapsed >= 0, tau > 0 (seconds)."""
    if tau <= 0:
        raise ValueError("tau must be > 0")
    return v0 * math.exp(-max(0.0, elapsed) / tau)


def sense(voltage: float, threshold: float) -> int:
    """Sense amplifier decision: 1 when the cell voltage is at or above the threshold, else 0."""
    return 1 if voltage >= threshold else 0


def threshold_time(tau: float, threshold: float, v_high: float = 1.0) -> float:
    """How long a freshly written 1 stays readable: tau · ln(V_high / V_th)."""
    if not 0 < threshold < v_high:
        raise ValueError("threshold must lie between 0 and V_high")
    return tau * math.log(v_high / threshold)


@dataclass
class DRAMCell:
    """One 1T1C cell. Voltages are fractions of VDD (1.0 = fully charged)."""

    tau: float = 0.100  # leakage time constant, model seconds (illustrative)
    threshold: float = 0.5  # sense threshold, fraction of VDD
    refresh_interval: float = 0.064  # auto-refresh period (JEDEC DDR: every row within 64 ms)
    now: float = 0.0
    t_set: float = 0.0  # when the capacitor was last written / restored
    v_set: float = 0.0  # its voltage then
    auto_refresh: bool = False
    next_refresh: float = math.inf
    events: list = field(default_factory=list)  # (time, kind, bit) for the UI log

    # --- pure views ---
    def voltage(self, t: float | None = None) -> float:
        t = self.now if t is None else t
        return dram_voltage(self.v_set, t - self.t_set, self.tau)

    def sensed_bit(self, t: float | None = None) -> int:
        return sense(self.voltage(t), self.threshold)

    def threshold_time(self) -> float:
        return threshold_time(self.tau, self.threshold)

    def time_since_write(self) -> float:
        return self.now - self.t_set

    # --- operations (at the current model time) ---
    def write(self, bit: int) -> None:
        if bit not in (0, 1):
            raise ValueError("bit must be 0 or 1")
        self.t_set, self.v_set = self.now, float(bit)
        self.events.append((self.now, "write", bit))

    def _restore(self, kind: str, t: float) -> int:
        bit = self.sensed_bit(t)
        self.t_set, self.v_set = t, float(bit)
        self.events.append((t, kind, bit))
        return bit

    def read(self) -> int:
        """Sense (destructive), write back what was sensed, return it."""
        return self._restore("read", self.now)

    def refresh(self) -> int:
        """Sense and restore without output; a 1 that already decayed below the threshold is 'refreshed' as 0."""
        return self._restore("refresh", self.now)

    def set_auto_refresh(self, on: bool) -> None:
        self.auto_refresh = on
        self.next_refresh = self.now + self.refresh_interval if on else math.inf

    def advance(self, dt: float) -> None:
        """Move model time forward by dt seconds, applying scheduled auto-refreshes at their exact times."""
        if dt < 0:
            raise ValueError("time only moves forward")
        end = self.now + dt
        while self.auto_refresh and self.next_refresh <= end:
            self._restore("auto_refresh", self.next_refresh)
            self.next_refresh += self.refresh_interval
        self.now = end


@dataclass
class SRAMCell:
    """One 6T cell: inverters (PU1, PD1) drive Q from Q̅; (PU2, PD2) drive Q̅ from Q; AX1 / AX2 connect Q / Q̅
    to BL / BL̅ while the word line is high."""

    powered: bool = True
    q: int | None = 0  # None = no defined state (power off)
    seed: int = 0
    now: float = 0.0
    word_line: bool = False
    bit_lines: tuple[float, float] | None = None  # (BL, BL̅) driven by the write driver, or None
    events: list = field(default_factory=list)
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self):
        self._rng.seed(self.seed)

    @property
    def q_bar(self) -> int | None:
        return None if self.q is None else 1 - self.q

    def write(self, bit: int) -> None:
        """Drive BL = bit, BL̅ = not bit, raise the word line: the stronger write driver overpowers the loop."""
        if bit not in (0, 1):
            raise ValueError("bit must be 0 or 1")
        if not self.powered:
            raise RuntimeError("the cell has no power")
        self.word_line, self.bit_lines = True, (float(bit), float(1 - bit))
        self.q = bit
        self.events.append((self.now, "write", bit))

    def read(self) -> int | None:
        """Non-destructive: the loop keeps its state. None without power."""
        if not self.powered:
            return None
        self.events.append((self.now, "read", self.q))
        return self.q

    def release(self) -> None:
        """End of an access: word line low, bit lines floating; the loop holds Q on its own."""
        self.word_line, self.bit_lines = False, None

    def advance(self, dt: float) -> None:
        """Time passes; a powered loop keeps its state (no refresh needed), an unpowered one has none."""
        if dt < 0:
            raise ValueError("time only moves forward")
        self.now += dt

    def power_off(self) -> None:
        self.powered, self.q = False, None
        self.release()
        self.events.append((self.now, "power_off", None))

    def power_on(self) -> int:
        """Power returns; the loop falls into one of its two stable states at random (not the old data)."""
        self.powered = True
        self.q = self._rng.randint(0, 1)
        self.events.append((self.now, "power_on", self.q))
        return self.q

    def transistors(self) -> dict[str, bool]:
        """Which of the six transistors conduct (True) in the current state."""
        q, on = self.q, self.powered
        return {
            "PU1": bool(on and q == 1), "PD1": bool(on and q == 0),  # inverter 1 output = Q (input Q̅)
            "PU2": bool(on and q == 0), "PD2": bool(on and q == 1),  # inverter 2 output = Q̅ (input Q)
            "AX1": self.word_line, "AX2": self.word_line,
        }
