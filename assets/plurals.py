"""Count phrases in both languages, written in the string catalogues' own text (assets/i18n/*.json): the app's
translator (app/i18n.py) and the scene's default one (scene/view.py) format every catalogue text through it,
so it lives beside the catalogues (scene/ may not import app/).

A placeholder whose format spec holds '|' is a count phrase:

    "{kept:|candidate|candidates} kept"   -> "1 candidate kept", "3 candidates kept"
    "{m:,|token|tokens}"                  -> "4,088 tokens" (the part before the first '|' formats the number)
    "후보 {kept:|개}"                      -> "후보 3개": one form is a counter, attached to the number

English takes the first form for exactly 1 and the second otherwise (0 tokens, 1.5 tokens, 2 tokens). Korean
has no plural: a noun reads the same for any count and a counter (개, 번, 줄, 장…) follows the number with no
space, so its phrases give a single form. Qt-free.
"""
from __future__ import annotations

import string

__all__ = ["count_phrase", "format_text"]


def count_phrase(n, one: str, other: str | None = None, number_spec: str = "") -> str:
    """`n` with its noun: two forms -> '1 candidate' / '2 candidates'; one form -> a counter, '2개'."""
    shown = format(n, number_spec)
    if other is None:
        return f"{shown}{one}"
    return f"{shown} {one if _is_one(n) else other}"


def _is_one(n) -> bool:
    try:
        return float(n) == 1.0 and float(n).is_integer() and not isinstance(n, float)
    except (TypeError, ValueError):
        return False


class _CountFormatter(string.Formatter):
    def format_field(self, value, format_spec):  # noqa: D401
        if "|" in format_spec:
            number_spec, *forms = format_spec.split("|")
            if not 1 <= len(forms) <= 2:
                raise ValueError(f"a count phrase takes one or two forms, got {format_spec!r}")
            return count_phrase(value, *forms, number_spec=number_spec)
        return super().format_field(value, format_spec)


_FORMATTER = _CountFormatter()


def format_text(template: str, /, **fmt) -> str:
    """template.format(**fmt), with the count phrases above (the plain str.format when it has none). The
    template is positional-only: a catalogue's placeholder may be called anything, `text` included."""
    if "|" not in template:
        return template.format(**fmt)
    return _FORMATTER.vformat(template, (), fmt)
