"""Persistent state (QSettings): dock layout, window geometry, language, selected layer, slider values, camera.

A version key guards restored layouts: a file written by another layout version is ignored (the dock set
changed, so Qt's saved state would put docks in odd places). A saved window position that lies off every
screen is ignored too. Tests and the command line pass their own file path so the user's settings are never
touched.

The settings file is untrusted input (`--settings FILE`): Qt would unpickle a stored Python object while
parsing it. So Qt never reads the file itself: app/files/ini_guard.py screens the raw text and Qt works on the
screened copy in a private folder (entries that could run code are left out, with a note). Only plain values
are stored and read: text, numbers, and QByteArray for Qt's own window state. `sync()` writes that copy back
atomically (app/files/atomic_io.py), so a full disk never leaves a half-written settings file.
"""
from __future__ import annotations

import json
import logging
import math
import os

from PySide6.QtCore import QByteArray, QRect, QSettings
from PySide6.QtGui import QGuiApplication

from app.files import atomic_io, ini_guard, settings_workdir
from app.i18n import tr
from compute.guards import guarded_io
from compute.language.tokenizer import ToyTokenizer
from compute.trace import Knobs

SETTINGS_VERSION = 1
ORGANISATION = "K3Explorer"
APPLICATION = "K3 Explorer"
# compute.engine.MAX_PROMPT_TOKENS (that module loads torch, which starts later); a test keeps them equal
PROMPT_TOKEN_LIMIT = 256
PROMPT_CHAR_LIMIT = 32767  # what the prompt box (a QLineEdit) holds
CAMERA_TEXT_LIMIT = 4096
RECENT_VIEWS_MAX = 8
RECENT_PATH_LIMIT = 4096
MAX_BYTES = 4 << 20  # a settings file is a few kB (Qt's window state is the largest value)
log = logging.getLogger(__name__)


class Settings:
    def __init__(self, path: str | None = None):
        if not path:  # constructing QSettings only computes the path; nothing is read
            path = QSettings(QSettings.IniFormat, QSettings.UserScope, ORGANISATION, APPLICATION).fileName()
        self.path = os.path.abspath(os.path.expanduser(path))
        self.refused: list[str] = []  # keys left out because their value could run code
        self.notes: list[tuple[str, dict]] = []  # (i18n key, values) for the status bar
        self._read_failed = False
        self._workdir = settings_workdir.make()  # locked while this process lives; a killed one's are swept
        working = os.path.join(self._workdir.name, "settings.ini")
        with open(working, "wb") as fh:
            fh.write(self._screened())
        self.q = QSettings(working, QSettings.IniFormat)
        self.valid = self._int("version", 0) == SETTINGS_VERSION

    def _screened(self) -> bytes:
        """The file's screened text. Read through compute.guards.guarded_io: a FIFO, device, directory or socket (or a
        link to one), or a file over MAX_BYTES, is not read (no hang, no MemoryError on /dev/zero): the
        defaults are used, one note says why, and sync() leaves the file alone."""
        try:
            raw = guarded_io.read_bytes(self.path, MAX_BYTES)
        except FileNotFoundError:
            return b""
        except guarded_io.UnsafeFileError as exc:
            self._read_failed = True
            if exc.kind == "special":
                note = ("guard.settings.special", {"path": guarded_io.show_path(self.path),
                                                   "what": tr(f"guard.what.{exc.what}")})
            else:
                note = ("guard.settings.too_big", {"path": guarded_io.show_path(self.path), "max": MAX_BYTES})
            self.notes.append(note)
            log.warning("%s", tr(note[0], **note[1]))
            return b""
        except OSError as exc:
            self._read_failed = True
            self.notes.append(("files.settings.unreadable", {"path": self.path, "reason": exc.strerror or exc}))
            return b""
        clean, self.refused = ini_guard.screen(raw)
        if self.refused:
            self.notes.append(("files.settings.refused", {"keys": ", ".join(self.refused[:8])}))
        return clean

    def note_texts(self) -> list[str]:
        """The notes about this file (refused values, a cut prompt), translated into the current language."""
        return [tr(key, **values) for key, values in self.notes]

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

    def tokens(self, default: int = 4) -> int:
        """Tokens the window generates: 1-64, or 0 = until the end of the sentence (app/engine/worker.py)."""
        value = self._int("tokens", default) if self.valid else default
        return value if 0 <= value <= 64 else default

    def set_tokens(self, n: int) -> None:
        """Remember the tokens choice (written with the other settings by sync())."""
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("tokens", int(n) if 0 <= int(n) <= 64 else 4)
        self.valid = True

    def explain_3d(self, default: tuple[bool, bool, int, bool]) -> tuple[bool, bool, int, bool]:
        """(lens column on, route on, route threshold percent 0-100, arcs on) of the Explain dock's 3D view
        controls; a value the file does not hold, or holds wrong, is the default's."""
        if not self.valid:
            return default

        def flag(key, d):
            v = self._int(f"explain/{key}", int(d))
            return v == 1 if v in (0, 1) else d

        pct = self._int("explain/route_percent", default[2])
        return (flag("lens3d", default[0]), flag("route3d", default[1]), pct if 0 <= pct <= 100 else default[2],
                flag("arcs3d", default[3]))

    def set_explain_3d(self, lens: bool, route: bool, percent: int, arcs: bool) -> None:
        """Remember the Explain dock's 3D view controls (written with the other settings by sync())."""
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("explain/lens3d", int(bool(lens)))
        self.q.setValue("explain/route3d", int(bool(route)))
        self.q.setValue("explain/route_percent", min(100, max(0, int(percent))))
        self.q.setValue("explain/arcs3d", int(bool(arcs)))
        self.valid = True

    def tour_seen(self) -> tuple[str, ...]:
        """The guided tour's chapters seen (app/window/tour.py), in the order they were first seen."""
        raw = self.q.value("tour/seen", "") if self.valid else ""
        if not isinstance(raw, str):
            return ()
        return tuple(c for c in raw.split(",") if c.isidentifier())[:32]

    def set_tour_seen(self, chapters) -> None:
        """Remember the tour's chapters seen (added to those seen before; written by sync())."""
        seen = list(self.tour_seen())
        seen += [c for c in chapters if c not in seen and str(c).isidentifier()]
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("tour/seen", ",".join(seen[:32]))
        self.valid = True

    def prompt(self, default: str) -> str:
        value = self.q.value("prompt", default) if self.valid else default
        if not isinstance(value, str) or not value.strip():
            return default
        cut = fit_prompt(value)
        if cut != value:
            self.notes.append(("files.settings.prompt_cut", {"n": PROMPT_TOKEN_LIMIT}))
        return cut if cut.strip() else default

    def camera(self) -> dict | None:
        """The saved camera's usable values (numbers only, finite, fov in (0, 180), distance > 0); None when
        nothing usable was saved. A bad value falls back to the scene's default for that value."""
        raw = self.q.value("camera", "") if self.valid else ""
        if not isinstance(raw, str) or not raw or len(raw) > CAMERA_TEXT_LIMIT:
            return None
        try:
            value = json.loads(raw)
        except (TypeError, ValueError, RecursionError):
            return None
        return camera_values(value)

    def weights(self) -> str:
        """The weights chosen in the Model menu: "trained" (default) or "random"."""
        value = self.q.value("weights", "trained") if self.valid else "trained"
        return value if value in ("trained", "random") else "trained"

    def set_weights(self, name: str) -> None:
        """Remember the weights choice (written with the other settings by sync())."""
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("weights", name if name in ("trained", "random") else "trained")
        self.valid = True

    def side_by_side(self) -> bool:
        """Whether the compared model's stack stands beside the window's (View -> Side by side; off by default)."""
        return self.valid and self._int("side_by_side", 0) == 1

    def set_side_by_side(self, on: bool) -> None:
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("side_by_side", int(bool(on)))
        self.valid = True

    def recent_views(self) -> list[str]:
        """The recently saved or opened view files (paths, newest first, at most RECENT_VIEWS_MAX)."""
        raw = self.q.value("views/recent", "") if self.valid else ""
        if not isinstance(raw, str) or not raw or len(raw) > RECENT_VIEWS_MAX * (RECENT_PATH_LIMIT + 8):
            return []
        try:
            value = json.loads(raw)
        except (TypeError, ValueError, RecursionError):
            return []
        if not isinstance(value, list):
            return []
        paths = [p for p in value if isinstance(p, str) and 0 < len(p) <= RECENT_PATH_LIMIT and "\0" not in p
                 and os.path.isabs(p)]
        return list(dict.fromkeys(paths))[:RECENT_VIEWS_MAX]

    def set_recent_views(self, paths: list[str]) -> None:
        """Remember the recent view files (written with the other settings by sync())."""
        self.q.setValue("version", SETTINGS_VERSION)
        self.q.setValue("views/recent", json.dumps([str(p) for p in paths][:RECENT_VIEWS_MAX]))
        self.valid = True

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

    def sync(self) -> str | None:
        """Write the settings to their file atomically; returns a translated message when that failed (the
        old file is then unchanged). A file that exists but could not be read is left alone."""
        if self._read_failed:
            return tr("files.settings.left_alone", path=self.path)
        self.q.sync()
        if self.q.status() != QSettings.NoError:
            return tr("files.settings.not_saved", message=self.q.fileName())
        try:
            with open(self.q.fileName(), "rb") as fh:
                data = fh.read()
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            atomic_io.write_bytes(self.path, data)
        except atomic_io.WriteError as exc:
            return tr("files.settings.not_saved", message=atomic_io.message(exc))
        except OSError as exc:
            return tr("files.settings.not_saved", message=atomic_io.message(atomic_io.WriteError(self.path, exc)))
        return None


def fit_prompt(text: str) -> str:
    """text, or its longest start that the engine takes (PROMPT_TOKEN_LIMIT toy tokens, PROMPT_CHAR_LIMIT
    characters)."""
    text = text[:PROMPT_CHAR_LIMIT]
    tokenizer = ToyTokenizer()
    if len(tokenizer.split(text)) <= PROMPT_TOKEN_LIMIT:
        return text
    lo, hi = 0, len(text)  # text[:lo] fits, text[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if len(tokenizer.split(text[:mid])) <= PROMPT_TOKEN_LIMIT:
            lo = mid
        else:
            hi = mid
    return text[:lo]


def camera_values(value) -> dict | None:
    """The usable entries of a saved camera dict (see Settings.camera)."""
    if not isinstance(value, dict):
        return None
    checks = {"distance": lambda v: v > 0, "fov": lambda v: 0 < v < 180,
              "azimuth": lambda v: True, "elevation": lambda v: True}
    out = {}
    for key, ok in checks.items():
        number = _finite(value.get(key))
        if number is not None and ok(number):
            out[key] = number
    center = value.get("center")
    if isinstance(center, list) and len(center) == 3:
        numbers = [_finite(v) for v in center]
        if all(v is not None for v in numbers):
            out["center"] = numbers
    return out or None


def _finite(value) -> float | None:
    """value as a float when it is a plain finite number (not a bool, a string or a nested value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


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
