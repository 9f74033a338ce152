"""Persistent state (QSettings): dock layout, window geometry, language, selected layer, slider values, camera.

A version key guards restored layouts: a file written by another layout version is ignored (the dock set
changed, so Qt's saved state would put docks in odd places). A saved window position that lies off every
screen is ignored too. Tests and the command line pass their own file path so the user's settings are never
touched.
"""
from __future__ import annotations

import json
import math

from PySide6.QtCore import QByteArray, QRect, QSettings
from PySide6.QtGui import QGuiApplication

from compute.trace import Knobs

SETTINGS_VERSION = 1
ORGANISATION = "K3Explorer"
APPLICATION = "K3 Explorer"


class Settings:
    def __init__(self, path: str | None = None):
        if path:
            self.q = QSettings(path, QSettings.IniFormat)
        else:
            self.q = QSettings(QSettings.IniFormat, QSettings.UserScope, ORGANISATION, APPLICATION)
        self.valid = self._int("version", 0) == SETTINGS_VERSION

    # --- helpers -----------------------------------------------------------------------------
    def _int(self, key: str, default: int) -> int:
        try:
            return int(self.q.value(key, default))
        except (TypeError, ValueError):
            return default

    def _float_or_none(self, key: str, default):
        raw = self.q.value(key, None)
        if raw is None:
            return default
        if raw in ("", "computed"):
            return None
        try:
            value = float(raw)
        except (TypeError, ValueError):
            return default
        return value if math.isfinite(value) else default

    # --- window ------------------------------------------------------------------------------
    def save_window(self, window) -> None:
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("window/geometry", window.saveGeometry())
        self.q.setValue("window/state", window.saveState(SETTINGS_VERSION))

    def restore_window(self, window, geometry: bool = True) -> bool:
        """Restore geometry (unless off-screen) and dock layout; False when nothing usable was saved.
        Docks created later can be placed by calling it again with geometry=False."""
        if not self.valid:
            return False
        state = self.q.value("window/state")
        restored = False
        geometry = self.q.value("window/geometry") if geometry else None
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            before = window.geometry()
            if window.restoreGeometry(geometry):
                if not on_some_screen(window.frameGeometry()):
                    window.setGeometry(before)
                else:
                    restored = True
        if isinstance(state, QByteArray) and not state.isEmpty():
            restored = window.restoreState(state, SETTINGS_VERSION) or restored
        return restored

    # --- values ------------------------------------------------------------------------------
    def language(self, default: str) -> str:
        value = self.q.value("language", default) if self.valid else default
        return value if value in ("en", "ko") else default

    def layer(self, default: int, n_layers: int) -> int:
        value = self._int("layer", default) if self.valid else default
        return value if 0 <= value < n_layers else default

    def knobs(self) -> Knobs:
        base = Knobs()
        if not self.valid:
            return base
        t = self._float_or_none("knobs/temperature", base.temperature)
        p = self._float_or_none("knobs/top_p", base.top_p)
        return Knobs(alpha=_clip(self._float_or_none("knobs/alpha", None), 0.0, 1.0),
                     beta=_clip(self._float_or_none("knobs/beta", None), 0.0, 1.0),
                     temperature=_clip(t, 0.0, 2.0) if t is not None else base.temperature,
                     top_p=_clip(p, 0.01, 1.0) if p is not None else base.top_p)

    def prompt(self, default: str) -> str:
        value = self.q.value("prompt", default) if self.valid else default
        return value if isinstance(value, str) and value.strip() else default

    def camera(self) -> dict | None:
        raw = self.q.value("camera", "") if self.valid else ""
        try:
            value = json.loads(raw) if raw else None
        except (TypeError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def save_values(self, *, language: str, layer: int, knobs: Knobs, prompt: str, camera: dict | None) -> None:
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("language", language)
        self.q.setValue("layer", int(layer))
        self.q.setValue("knobs/alpha", "computed" if knobs.alpha is None else float(knobs.alpha))
        self.q.setValue("knobs/beta", "computed" if knobs.beta is None else float(knobs.beta))
        self.q.setValue("knobs/temperature", float(knobs.temperature))
        self.q.setValue("knobs/top_p", float(knobs.top_p))
        self.q.setValue("prompt", prompt)
        if camera is not None:
            self.q.setValue("camera", json.dumps(camera, default=_jsonable))
        self.valid = True

    def sync(self) -> None:
        self.q.sync()


def _clip(value, lo, hi):
    if value is None:
        return None
    return min(max(value, lo), hi)


def _jsonable(obj):
    try:
        return obj.tolist()
    except AttributeError:
        return float(obj)


def on_some_screen(rect: QRect, min_visible: int = 48) -> bool:
    """True when at least a min_visible × min_visible corner of the title bar area is on some screen."""
    for screen in QGuiApplication.screens():
        visible = screen.availableGeometry().intersected(rect)
        if visible.width() >= min_visible and visible.height() >= min_visible:
            return True
    return False
