"""Explanation texts (Markdown) for blocks, trace steps and docks, in both languages.

Files: assets/texts/{lang}/{group}/{key}.md with group in {"block", "step", "dock", "topic"};
e.g. assets/texts/ko/block/kda.state.md. Qt-free.
"""
from __future__ import annotations

from functools import lru_cache

from assets import asset_path

GROUPS = ("block", "step", "dock", "topic")


@lru_cache(maxsize=None)
def explanation(group: str, key: str, lang: str) -> str | None:
    """The Markdown text, or None when there is none (tests require one for every block kind and step)."""
    path = asset_path("texts", lang, group, f"{key}.md")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
