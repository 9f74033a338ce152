"""What the trace player (app/docks/trace_player.py) prints of tokens and typed text: token chips in their
phase's colour, a piece with its invisible characters shown, a long text cut to what a wrapping label can show,
and the sampling step's candidate rows."""
from __future__ import annotations

import html
import re

from app.i18n import tr
from app.widgets.paint import css, css_rgba, mono_html

PHASE_COLOURS = {"A": css("phase_a"), "B": css("phase_b")}
# What the labels show of a text the user typed: a long one loses its middle, a long run without spaces
# gets break points, a long token list its tail; so no prompt can widen (or lengthen) the panel or the window.
MAX_SHOWN_CHARS = 240
MAX_PIECE_CHARS = 32
MAX_CHIPS = 64
BREAK_EVERY = 24
_LONG_RUN = re.compile(r"\S{%d,}" % (BREAK_EVERY + 1))


def candidate_rows(candidates) -> list[tuple[str, str]]:
    """(label, html) rows of the sampling step's top candidates: words with their probabilities before and
    after temperature / top-p, and what share of the probability they hold."""
    if not candidates:
        return []
    rows = [("", html.escape(tr("weights.sampling.title")))]
    for rank, (word, before, after) in enumerate(candidates, 1):
        text = tr("weights.sampling.row", rank=rank, word=repr(word), before=f"{before:.3f}", after=f"{after:.3f}")
        rows.append(("", mono_html(html.escape(text))))
    total = tr("weights.sampling.sum", n=len(candidates), before=f"{sum(c[1] for c in candidates):.3f}",
               after=f"{sum(c[2] for c in candidates):.3f}")
    rows.append(("", f"<i>{html.escape(total)}</i>"))
    return rows


def chip_piece(piece: str) -> str:
    """A piece as its chip prints it: a newline, tab and space made visible ('↵', '⇥', '·'), empty as '∅'."""
    return piece.replace("\n", "↵").replace("\t", "⇥").replace(" ", "·") or "∅"


def token_chip(piece: str, token_id: int, generated: bool, current: bool, unused: bool = False,
               struck: bool = False) -> str:
    """One token chip: the piece on a tinted box in its phase's colour, then its id. Qt's rich text draws no
    border on a span (the old chips were coloured text only, so '.' was a lone dot): the box is a background.
    unused: a piece the toy language never uses, marked with a '?' (the trained toy has not learned it);
    struck: knocked out by the Explain dock's active experiment (struck through)."""
    role = "phase_b" if generated else "phase_a"
    colour = PHASE_COLOURS["B" if generated else "A"]
    mark = f"<sup style='color:{css('caveat')}; font-weight:bold'>?</sup>" if unused else ""
    return (f"<span style='background-color:{css_rgba(role, 150 if current else 60)}; color:{colour};"
            f" font-weight:{'bold' if current else 'normal'}{'; text-decoration:line-through' if struck else ''}'>"
            f"&nbsp;{html.escape(shown_text(chip_piece(piece), MAX_PIECE_CHARS))}&nbsp;</span>{mark}"
            f"<sub style='color:gray'>{token_id}</sub>")


def _language_pieces(trace) -> frozenset | None:
    """The pieces the toy language uses, for a trace of the toy's own vocabulary (None for another model's
    trace: its vocabulary is not the language's)."""
    if not hasattr(trace, "prompt_in_language"):
        return None
    from compute.language.task import language_pieces

    return language_pieces()


def shown_text(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """`text` as a wrapping label may show it: the middle of a text longer than `limit` replaced by "…", and a
    zero-width space every BREAK_EVERY characters of a run without spaces (a line can break there)."""
    if len(text) > limit:
        tail = limit // 4
        text = text[: limit - tail - 1] + "…" + text[-tail:]
    return _LONG_RUN.sub(lambda m: "\u200b".join(m.group(0)[i:i + BREAK_EVERY]
                                                 for i in range(0, len(m.group(0)), BREAK_EVERY)), text)
