"""Screens a QSettings INI file before Qt reads it (no Qt here).

Qt turns a value written as `@Variant(…)` or `@DateTime(…)` into an object by QDataStream, and PySide6
unpickles a `PySide::PyObjectWrapper` in there: a crafted settings file would run Python at start-up. Qt
parses the whole file on the first access of any key, so refusing to call value() is not enough; the file must
never reach Qt as it is. `screen(raw)` returns a copy that keeps only entries whose every value can only be a
plain type (text, number, `@ByteArray(…)`, `@String(…)`, `@@…`, `@Invalid()`), and the keys it left out.

The scan follows Qt's INI reader (qsettings.cpp: readIniLine, iniUnescapedStringList) — quotes, backslash
escapes (\\x40 and \\100 make an '@' too), comma lists, ';' comments — and is stricter where Qt's reading
could span lines: a line that ends inside quotes or in a backslash is dropped whole (Qt never writes one).
"""
from __future__ import annotations

# the only '@' forms a value may take: Qt reads each as plain data, never through QDataStream
_PLAIN_AT = ("@@",)
_PLAIN_WRAPPED = ("@ByteArray(", "@String(")
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   '"': '"', "?": "?", "'": "'", "\\": "\\"}


def screen(raw: bytes) -> tuple[bytes, list[str]]:
    """(the INI text with every unsafe or malformed entry left out, the keys of the entries left out)."""
    kept: list[bytes] = []
    refused: list[str] = []
    section = ""
    for number, line in enumerate(raw.splitlines()):
        if number == 0 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        text = line.decode("latin-1").lstrip(" \t\f\v")
        logical = _logical_line(text)
        if logical is None:
            refused.append(_key_name(section, text))
            continue
        if not logical or logical.startswith(";"):
            continue
        if logical.startswith("["):
            end = logical.find("]")
            section = _unescape_key(logical[1:end if end > 0 else len(logical)])
            kept.append(logical.encode("latin-1"))
            continue
        equals = _unquoted_equals(logical)
        if equals < 0:
            continue  # Qt ignores a line without '=' too
        if all(_plain(element) for element in unescape_values(logical[equals + 1:])):
            kept.append(logical.encode("latin-1"))
        else:
            refused.append(_key_name(section, logical[:equals]))
    return b"\n".join(kept) + (b"\n" if kept else b""), refused


def _logical_line(text: str) -> str | None:
    """The line up to an unquoted ';' (a comment), or None when Qt would read on into the next line
    (an open quote, a trailing backslash)."""
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text):
                return None
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            return text[:i].rstrip(" \t")
        i += 1
    return None if quoted else text.rstrip(" \t")


def _unquoted_equals(text: str) -> int:
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == "=" and not quoted:
            return i
        i += 1
    return -1


def unescape_values(raw: str) -> list[str]:
    """The value text as Qt's iniUnescapedStringList reads it: one element, or several for a comma list.
    Bytes above 0x7F stay single characters (enough to judge a leading '@')."""
    elements: list[str] = []
    current: list[str] = []
    quoted = False
    i, n = 0, len(raw)
    i = _skip_spaces(raw, i)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            i, text = _escape(raw, i + 1)
            current.append(text)
        elif ch == '"':
            quoted = not quoted
            i += 1
            if not quoted:
                i = _skip_spaces(raw, i)
        elif ch == "," and not quoted:
            elements.append("".join(current).rstrip(" \t"))
            current = []
            i = _skip_spaces(raw, i + 1)
        else:
            current.append(ch)
            i += 1
    elements.append("".join(current))
    return elements


def _skip_spaces(raw: str, i: int) -> int:
    while i < len(raw) and raw[i] in " \t":
        i += 1
    return i


def _escape(raw: str, i: int) -> tuple[int, str]:
    """Decode the escape whose letter is at raw[i]; returns (next index, text). Qt keeps the low 16 bits
    of a long \\x or octal escape, so \\x10040 is an '@' as well."""
    if i >= len(raw):
        return i, ""
    ch = raw[i]
    if ch in _SIMPLE_ESCAPES:
        return i + 1, _SIMPLE_ESCAPES[ch]
    if ch == "x":
        j = i + 1
        while j < len(raw) and raw[j] in "0123456789abcdefABCDEF":
            j += 1
        if j == i + 1:
            return j, ""
        return j, chr(int(raw[i + 1:j], 16) & 0xFFFF)
    if ch in "01234567":
        j = i + 1
        while j < len(raw) and raw[j] in "01234567":
            j += 1
        return j, chr(int(raw[i:j], 8) & 0xFFFF)
    return i + 1, ""  # Qt skips an unknown escaped character


def _plain(element: str) -> bool:
    """True unless Qt would decode this element through QDataStream (or another '@' form we never write)."""
    probe = element.lstrip(" \t")
    if not probe.startswith("@"):
        return True
    if probe.startswith(_PLAIN_AT) or probe == "@Invalid()":
        return True
    return probe.startswith(_PLAIN_WRAPPED) and probe.endswith(")")


def _unescape_key(text: str) -> str:
    """Qt's key escaping: '\\' stands for '/', %XX and %UXXXX for other characters."""
    out, i = [], 0
    text = text.strip()
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            out.append("/")
            i += 1
            continue
        if ch == "%":
            width = 4 if text[i + 1:i + 2] == "U" else 2
            start = i + (2 if width == 4 else 1)
            digits = text[start:start + width]
            if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                out.append(chr(int(digits, 16)))
                i = start + width
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _key_name(section: str, raw_key: str) -> str:
    key = _unescape_key(raw_key.split("=", 1)[0])[:80]
    if section and section.lower() != "general":
        return f"{section}/{key}"
    return key
