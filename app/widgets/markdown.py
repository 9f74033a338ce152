"""Markdown in the docks: explanation texts (assets/texts) shown as labels, headings demoted to fit a panel."""
from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel


def demote_headings(md: str, level: int = 4) -> str:
    """Markdown '# Title' -> '#### Title' so explanation texts sit inside panels without giant headings."""
    return re.sub(r"^#{1,3} ", "#" * level + " ", md, flags=re.M)


def markdown_label(md: str) -> QLabel:
    lab = QLabel()
    lab.setTextFormat(Qt.MarkdownText)
    lab.setWordWrap(True)
    lab.setText(demote_headings(md))
    return lab
