"""Texts and series of the Explain dock shared by its parts (app/docks/explain/dock.py, knockouts.py,
attention.py): a piece and an AttnRes source as the dock names them, and the logit lens curve."""
from __future__ import annotations

import html

import numpy as np

from app.docks.explain.model import ExplainResult
from app.i18n import tr


def _esc(s: str) -> str:
    return html.escape(s, quote=False)


def source_text(c: int) -> str:
    """An AttnRes source as the knock-out lists name it: 0 = the embedding, j = block j's stored sum."""
    return tr("knockout.what.source0") if c == 0 else tr("knockout.what.source", n=c)


def piece_text(piece: str) -> str:
    """A piece as the dock shows it: quoted, a newline as \\n."""
    return "'" + piece.replace("\n", "\\n") + "'"


def lens_series(res: ExplainResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, probability, rank) of the lens curve: the embedding at 0, after layer ℓ's mixer at ℓ − ½, after the
    whole layer at ℓ (so a jump shows whether the mixer or the FFN made it)."""
    L = len(res.lens_mixer_prob)
    x = np.empty(2 * L + 1)
    prob = np.empty(2 * L + 1)
    rank = np.empty(2 * L + 1)
    x[0], prob[0], rank[0] = 0.0, res.lens_prob[0], res.lens_rank[0]
    x[1::2] = np.arange(1, L + 1) - 0.5
    x[2::2] = np.arange(1, L + 1)
    prob[1::2], rank[1::2] = res.lens_mixer_prob, res.lens_mixer_rank
    prob[2::2], rank[2::2] = res.lens_prob[1:], res.lens_rank[1:]
    return x, prob, rank
