"""Untrusted text is plain text.

A model config's `name` / `display_name`, a view file's fields, the prompt, a token piece, a file path and an
error message quoting any of them are untrusted. Put into a rich-text widget unescaped, `<img src="/dev/zero">`
makes Qt read that file (abort), a FIFO hangs the UI, `<a href>` / `<style>` change what is shown. So:

- a widget that shows such text as a whole is plain (`plain(label, ...)`, `plain_message_box`);
- a rich text built from a catalogue template escapes every argument (`rich_tr`, `esc`); markup we build
  ourselves is marked `Html` and passes as it is;
- a tooltip (rich whenever it looks like markup) goes through `plain_tip`;
- a QTextBrowser / QTextDocument of ours refuses every resource (`NoResources`, `refused_resource`): nothing is
  ever read from disk or the network, even if a string slips through unescaped.
"""
from __future__ import annotations

import html
import numbers

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtGui import Qt as _GuiQt  # Qt.mightBeRichText lives in QtGui's namespace
from PySide6.QtWidgets import QMessageBox, QTextBrowser

from app.i18n import tr


def might_be_rich(text: str) -> bool:
    """Qt's guess (Qt::mightBeRichText) whether an AutoText label or a tooltip shows `text` as rich text."""
    return bool(_GuiQt.mightBeRichText(str(text)))


class Html(str):
    """Markup built by the app itself (from escaped parts): `rich_tr` passes it as it is."""


def esc(value) -> Html:
    """`value` as text, HTML-escaped: safe inside rich text."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=True))


def rich_tr(key: str, **args) -> Html:
    """The catalogue's (trusted, possibly rich) text for `key` with every argument escaped, except those
    marked `Html`. Numbers (numpy's too) are formatted by the template as they are."""
    safe = {k: (v if isinstance(v, (Html, numbers.Number)) else esc(v)) for k, v in args.items()}
    return Html(tr(key, **safe))


def plain_tip(text: str) -> str:
    """A tooltip for untrusted text. Qt shows a tooltip as rich text when it looks like markup
    (Qt.mightBeRichText): such a text is escaped inside a paragraph that keeps its spaces and line breaks,
    so it reads exactly as given; other text is returned unchanged (shown plain)."""
    text = str(text)
    if not might_be_rich(text) and "&" not in text:
        return text
    return "<p style='white-space:pre-wrap'>" + html.escape(text, quote=False) + "</p>"


def plain_message_box(icon, title: str, text: str, buttons=QMessageBox.StandardButton.Ok, parent=None) -> QMessageBox:
    """A QMessageBox whose text (which quotes values from files or error messages) is plain text."""
    box = QMessageBox(icon, str(title), "", buttons, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(str(text))
    return box


def warn(parent, title: str, text: str) -> None:
    """QMessageBox.warning with plain text (modal, as the static function)."""
    plain_message_box(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, parent).exec()


_BLANK: QImage | None = None


def refused_resource(kind: int, _url=None):
    """What a document of ours gets for any resource (image, style sheet, page): a 1x1 transparent image or
    an empty text — a valid answer, so Qt does not fall back to reading the URL itself (QTextImageHandler
    loads a file by name when the document's answer is not an image)."""
    global _BLANK
    if kind == int(QTextDocument.ResourceType.ImageResource.value):
        if _BLANK is None:
            _BLANK = QImage(1, 1, QImage.Format.Format_ARGB32)
            _BLANK.fill(0)
        return _BLANK
    return ""


def _kind(kind) -> int:
    return int(getattr(kind, "value", kind))


class NoResources:
    """Mixin for QTextBrowser / QTextEdit / QTextDocument subclasses: every resource request is refused."""

    def loadResource(self, kind, url):  # noqa: N802 - Qt override
        return refused_resource(_kind(kind), url)


class SafeTextDocument(NoResources, QTextDocument):
    """A QTextDocument that never loads a resource (for rich text built from untrusted parts)."""


def plain(*labels):
    """Make QLabels (or a QMessageBox) show their text as plain text; returns the first, for chaining."""
    for lab in labels:
        lab.setTextFormat(Qt.TextFormat.PlainText)
    return labels[0] if labels else None


_MD_SPECIAL_CHARS = "\\`*_{}[]()#+-.!<>|~&"
# one C-level pass (str.translate); re.sub with a group template ran a Python function per match: ~0.6 ms for
# the trace player's step texts, on every step while it plays
_MD_ESCAPES = str.maketrans({c: "\\" + c for c in _MD_SPECIAL_CHARS})


def md_escape(value) -> str:
    """`value` with every Markdown special character backslash-escaped: literal text inside Markdown (no
    image, link, emphasis or inline HTML)."""
    return str(value).translate(_MD_ESCAPES)


def md_args(args: dict) -> dict:
    """Format arguments for a Markdown template: strings escaped (md_escape), numbers as they are."""
    return {k: (v if isinstance(v, numbers.Number) else md_escape(v)) for k, v in args.items()}


class SafeTextBrowser(NoResources, QTextBrowser):
    """A QTextBrowser (Markdown explanations) that loads no resource: no image or style sheet is ever read."""
