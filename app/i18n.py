"""Korean / English string catalogues, switchable at run time.

Catalogues are JSON files under assets/i18n/, one pair per area of the app: `<area>.en.json` and
`<area>.ko.json` (flat {key: text}). All areas are merged into one table per language; keys must be unique
across areas (a test checks both languages have the same keys). Qt-free: the Qt side listens to
`on_change` callbacks (app/state.py re-emits them as a signal). A bound method is held weakly: an object
that is gone stops being called without anyone having to unregister it.

    from app.i18n import tr, set_language
    tr("menu.file")            # -> "File" / "파일"
    tr("status.layer", n=37)   # str.format placeholders
    tr("x", kept=1)            # "{kept:|candidate|candidates} kept" -> "1 candidate kept" (assets/plurals.py)
"""
from __future__ import annotations

import json
import locale
import os
import weakref
from typing import Callable

from assets import asset_path, plurals

LANGUAGES = ("en", "ko")
_tables: dict[str, dict[str, str]] = {}
_lang = "en"
_listeners: list = []  # plain callables, or weakref.WeakMethod for bound methods


def load_catalogues(lang: str) -> dict[str, str]:
    """Merge every assets/i18n/*.{lang}.json into one dict; a key defined twice raises ValueError."""
    merged: dict[str, str] = {}
    folder = asset_path("i18n")
    for path in sorted(folder.glob(f"*.{lang}.json")):
        with open(path, encoding="utf-8") as fh:
            table = json.load(fh)
        for key, text in table.items():
            if key in merged:
                raise ValueError(f"i18n key {key!r} defined twice ({path.name})")
            merged[key] = text
    return merged


def table(lang: str | None = None) -> dict[str, str]:
    lang = lang or _lang
    if lang not in _tables:
        _tables[lang] = load_catalogues(lang)
    return _tables[lang]


def system_language() -> str:
    """'ko' when the system locale is Korean, else 'en'."""
    for var in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = os.environ.get(var, "")
        if value:
            return "ko" if value.lower().startswith("ko") else "en"
    loc = (locale.getlocale()[0] or "").lower()
    return "ko" if loc.startswith("ko") else "en"


def language() -> str:
    return _lang


def set_language(lang: str) -> None:
    global _lang
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; expected one of {LANGUAGES}")
    if lang == _lang:
        return
    _lang = lang
    for entry in list(_listeners):
        listener = entry() if isinstance(entry, weakref.WeakMethod) else entry
        if listener is None:  # its object is gone
            _forget(entry)
            continue
        try:
            listener(lang)
        except RuntimeError:  # its Qt owner was deleted ("Signal source has been deleted"): forget it
            _forget(entry)


def on_change(listener: Callable[[str], None]) -> None:
    """Call listener(lang) after each language switch; a bound method is held weakly."""
    _listeners.append(weakref.WeakMethod(listener) if hasattr(listener, "__self__") and
                      hasattr(listener, "__func__") else listener)


def off_change(listener: Callable[[str], None]) -> None:
    """Stop calling listener (no error when it was never registered)."""
    for entry in list(_listeners):
        target = entry() if isinstance(entry, weakref.WeakMethod) else entry
        if target == listener:
            _forget(entry)


def listener_count() -> int:
    """How many listeners are still alive (tests: a dropped state leaves none behind)."""
    return sum(1 for e in _listeners if not isinstance(e, weakref.WeakMethod) or e() is not None)


def _forget(entry) -> None:
    try:
        _listeners.remove(entry)
    except ValueError:
        pass


def tr(key: str, lang: str | None = None, **fmt) -> str:
    """Translated text for key in the current (or given) language. A missing key shows as the key itself in
    brackets so that it is visible (and tests fail on it), never as an empty label."""
    text = table(lang).get(key)
    if text is None:
        text = table("en").get(key, f"[{key}]")
    return plurals.format_text(text, **fmt) if fmt else text  # str.format, with count phrases
