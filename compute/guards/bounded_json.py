"""Bounded JSON reading for untrusted documents (model configs, view files), without Qt or torch.

A document is refused, with one line saying why, when it is larger than its caller's byte limit, not UTF-8,
nested deeper than its depth limit (checked on the text before parsing, so deep nesting never reaches
json.loads' recursion), holds an integer literal longer than `MAX_INT_DIGITS` (well inside Python's
4,300-digit conversion limit), NaN / Infinity or a number out of float range, or is not a JSON object.
Callers turn `JSONLimitError` into their own error type (compute.config.ConfigError, app.files.viewfile.ViewError).
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from compute.guards import guarded_io

MAX_INT_DIGITS = 18

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|"')


class JSONLimitError(ValueError):
    """A document that cannot be read. `kind`: "read" (the file), "size", "encoding" or "json"; `problem`:
    one line without the file's name."""

    def __init__(self, kind: str, problem: str):
        self.kind, self.problem = kind, problem
        super().__init__(problem)


def read_text(path: str | os.PathLike, max_bytes: int) -> str:
    """The file's text: at most `max_bytes` bytes of UTF-8, read through compute.guards.guarded_io (a regular file
    only: a FIFO, device, directory or socket is refused, kind "read", without reading a byte)."""
    try:
        data = guarded_io.read_bytes(path, max_bytes)
    except guarded_io.UnsafeFileError as exc:
        if exc.kind == "size":
            raise JSONLimitError("size", f"larger than {max_bytes} bytes") from exc
        raise JSONLimitError("read", exc.problem) from exc
    except OSError as exc:
        raise JSONLimitError("read", f"cannot read: {exc.strerror or exc}") from exc
    except (TypeError, ValueError) as exc:  # a path that is not a path (None, an int, a NUL byte)
        raise JSONLimitError("read", f"not a file path: {exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONLimitError("encoding", "not UTF-8 text") from exc


def load_object(text: str, max_bytes: int, max_depth: int) -> dict:
    """json.loads of a document whose top level is an object, within the limits above."""
    if len(text) > max_bytes:
        raise JSONLimitError("size", f"larger than {max_bytes} bytes")
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JSONLimitError("json", f"nested {depth} levels deep (at most {max_depth})")
    try:
        raw = json.loads(text, parse_int=_int_literal, parse_float=_float_literal, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise JSONLimitError("json", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:  # the depth scan above should make this unreachable
        raise JSONLimitError("json", "nested too deeply") from exc
    bad = _first_refused(raw)
    if bad is not None:
        path, literal = bad
        raise JSONLimitError("json", f"{path}: {literal.problem}" if path else literal.problem)
    if not isinstance(raw, dict):
        raise JSONLimitError("json", "top level must be a JSON object")
    return raw


class _Refused:
    """A number json.loads read but the limits refuse: kept in place so the error can name its field."""
    __slots__ = ("problem",)

    def __init__(self, problem: str):
        self.problem = problem


def _first_refused(raw: Any) -> tuple[str, _Refused] | None:
    """(dotted path such as 'knobs.sample_seed' or 'layers[3]', the refused number) of the first refused
    literal in document order, or None. Iterative: the depth limit already holds, but no recursion is needed."""
    stack: list[tuple[str, Any]] = [("", raw)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, _Refused):
            return path, node
        if isinstance(node, dict):
            items = [(f"{path}.{_key_text(k)}" if path else _key_text(k), v) for k, v in node.items()]
        elif isinstance(node, list):
            items = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
        else:
            continue
        stack.extend(reversed(items))
    return None


def _key_text(key: Any, limit: int = 40) -> str:
    """A JSON key as an error message may quote it: control characters escaped (a key "\n" made the one-line
    message two lines), cut to `limit` characters."""
    text = str(key)
    if not text.isprintable():
        text = json.dumps(text, ensure_ascii=False)[1:-1]
    return text if len(text) <= limit else text[:limit - 1] + "…"


def nesting_depth(text: str) -> int:
    """Deepest nesting of arrays / objects in a JSON text (brackets inside strings not counted). Linear time:
    an unterminated string ends the scan (json.loads reports it)."""
    deepest = depth = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif tok in "]}":
            depth -= 1
        elif len(tok) == 1:  # a lone quote: the string never ends
            break
    return deepest


def _int_literal(s: str) -> int | _Refused:
    digits = len(s.lstrip("-"))
    if digits > MAX_INT_DIGITS:  # never converted: int() of a long literal is quadratic
        return _Refused(f"integer literal with {digits} digits (at most {MAX_INT_DIGITS})")
    return int(s)


def _float_literal(s: str) -> float | _Refused:
    v = float(s)
    if not math.isfinite(v):
        text = repr(s)
        return _Refused(f"number {text if len(text) <= 60 else text[:57] + '...'} is out of range")
    return v


def _constant(s: str) -> Any:
    raise JSONLimitError("json", f"{s} is not a number in JSON (NaN and Infinity are not allowed)")
