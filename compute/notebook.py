"""Jupyter's rich display protocol for the API's results (issue 43.8): an Explanation shows its logit lens and
a summary table, a Patching its heat map and its strongest sites, a Trace a summary table.

`*_png` give the picture alone (`_repr_png_`); `*_html` the picture (embedded as a data: URI) and the table
(`_repr_html_`): a notebook shows the richest format it has, HTML, so one cell shows both. Every text that comes
from a prompt, a model config or the vocabulary is HTML-escaped: a hostile prompt or model name stays text.
"""
from __future__ import annotations

import base64
from html import escape

import numpy as np

from compute.notebook_charts import heatmap, lens_chart, png_bytes

__all__ = ["explanation_png", "explanation_html", "patching_panels", "patching_png", "patching_html",
           "trace_html"]

_STYLE = "border-collapse:collapse;text-align:left;font-size:90%"
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd;vertical-align:top"


def _q(text) -> str:
    """repr-like quoting of a piece or prompt, escaped (quotes make leading spaces visible)."""
    return escape(repr(str(text)), quote=True)


def _table(rows: list[tuple[str, str]], caption: str = "") -> str:
    """A two-column table; the values are HTML already (escaped by the caller)."""
    head = f"<caption style='text-align:left;font-weight:bold'>{escape(caption)}</caption>" if caption else ""
    body = "".join(f"<tr><th style='{_CELL}'>{escape(k)}</th><td style='{_CELL}'>{v}</td></tr>" for k, v in rows)
    return f"<table style='{_STYLE}'>{head}{body}</table>"


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f"<img src='data:image/png;base64,{data}' alt='{escape(alt, quote=True)}'/>"


# ---------------------------------------------------------------------------------------------- Explanation
def explanation_png(ex) -> bytes:
    """The logit lens: the answer's probability after the embedding and each layer, readable-from marked."""
    title = f"logit lens ({ex.lens_mode}) at position {ex.position}: p(answer) after each layer"
    return png_bytes(lens_chart(ex.lens_prob(ex.word), ex.readable_from, title))


def explanation_html(ex) -> str:
    pieces = " ".join(f"<b><u>{_q(p)}</u></b>" if i == ex.position else _q(p) for i, p in enumerate(ex.pieces))
    rows = [
        ("model", f"{escape(str(ex.model.config.name))} ({escape(str(ex.model.weights_name))} weights)"),
        ("prompt (tokens)", pieces),
        ("position", f"{ex.position} (0-based; it predicts the next token)"),
        ("answer", f"{_q(ex.word)}: p = {float(ex.probs[ex.word_index]):.3f}, logit {ex.logit:.3f}"),
        ("top 5", ", ".join(f"{_q(p)} {q:.3f}" for p, q in ex.top(5))),
    ]
    first = ex.readable_from
    rows.append(("logit lens", f"readable from layer {first} on (where it is decided: .patch().decided_at())"
                 if first is not None else "not the top piece at every later layer"))
    if ex.ablation is not None:
        before = ex.before
        change = (f"{_q(before.word)} → {_q(ex.word)}" if before is not None else _q(ex.word))
        rows.append(("knock-out", f"{escape(ex.ablation.describe())}: {change}"))
    big = sorted(ex.blocks, key=lambda c: -abs(c.value))[:5]
    rows.append(("largest direct effects (not causal)",
                 ", ".join(f"L{c.layer} {escape(str(c.part))} {c.value:+.3f}" for c in big)))
    return (f"<div>{_img(explanation_png(ex), 'logit lens')}"
            f"{_table(rows, f'Explanation: why {ex.word!r}')}</div>")


# ---------------------------------------------------------------------------------------------- Patching
def patching_panels(p, most: int = 32) -> tuple[list[tuple[str, np.ndarray, list]], list[int], str, str]:
    """(panels (name, rows x columns, row labels), column labels, row axis, column axis) of a Patching's scores:
    layers (or MoE layers) along the columns, positions / heads / experts along the rows. "experts": only the
    `most` experts with the largest |score| (the others were not measured or matter less), by id."""
    s = np.asarray(p.scores, dtype=np.float64)
    n = s.shape[0]
    if p.sites == "residual":
        return [("", s.T, list(range(s.shape[1])))], list(range(n)), "position", "layer (0 = the embedding)"
    if p.sites == "blocks":
        rows = list(range(s.shape[2]))
        return ([("mixer", s[:, 0, :].T, rows), ("FFN", s[:, 1, :].T, rows)], list(range(1, n + 1)), "position",
                "layer")
    if p.sites == "experts":
        size = np.nanmax(np.abs(np.where(np.isfinite(s), s, np.nan)), axis=0, initial=-1.0)
        keep = sorted(int(e) for e in np.argsort(-size, kind="stable")[:most] if size[e] >= 0)
        return [("", s[:, keep].T, keep)], list(p.moe_layers), "expert", "MoE layer"
    if p.sites == "sources":
        return [("", s[None, :], [""])], list(range(n)), "", "AttnRes source (0 = the embedding)"
    return [("", s.T, list(range(s.shape[1])))], list(range(1, n + 1)), p.axes[-1], "layer"  # heads, kda_state


def patching_png(p) -> bytes:
    panels, labels, row_name, col_name = patching_panels(p)
    title = f"activation patching ({p.sites}): restored fraction (1 = the clean answer's difference)"
    if p.sites == "experts":
        title = f"activation patching (experts, the {len(panels[0][2])} strongest): restored fraction"
    return png_bytes(heatmap(panels, labels, row_name, col_name, title))


def patching_html(p) -> str:
    rows = [
        ("clean", f"{_q(p.clean)} → {_q(p.clean_word)}"),
        ("corrupted", f"{_q(p.corrupted)} → {_q(p.corrupted_word)}"),
    ]
    if p.swap:
        rows.append(("swap", escape(p.swap)))
    rows.append(("metric", escape(p.metric)))
    if p.sites == "residual":
        at = p.decided_at()
        rows.append(("decided at", f"layer {at}" if at is not None else "no layer (patching the explained position never restores ≥ 0.5 at every later layer)"))
    axes = ", ".join(escape(a) for a in p.axes)
    rows.append((f"strongest sites ({axes})", ", ".join(f"{idx} {v:+.2f}" for idx, v in p.top(5))))
    return (f"<div>{_img(patching_png(p), 'patching heat map')}"
            f"{_table(rows, f'Patching ({p.sites})')}</div>")


# ---------------------------------------------------------------------------------------------- Trace
def trace_html(trace, max_passes: int = 12) -> str:
    """The summary() as tables: the run, then one row per pass (kind, positions, sampled token, top 3)."""
    rows = [
        ("model", f"{escape(str(trace.config_name))} ({escape(str(trace.weights_name))} weights) on "
                  f"{escape(str(trace.device))}"),
        ("prompt", f"{_q(trace.text)} ({trace.prompt_len} tokens)"),
        ("generated", f"{_q(trace.generated_text)} ({len(trace.tokens) - trace.prompt_len} tokens)"),
        ("tokens", " ".join(_q(p) for p, _ in trace.tokens)),
        ("knobs", escape(trace.knobs_line())),
        ("layers", escape(trace.layers_line())),
    ]
    if not trace.prompt_in_language:
        rows.append(("note", "outside the toy language: the answer is not meaningful"))
    head = "".join(f"<th style='{_CELL}'>{h}</th>" for h in ("pass", "kind", "positions", "sampled (p); top 3"))
    body = []
    for i, ps in enumerate(trace.passes[:max_passes]):
        cells = (str(i), escape(ps.kind), *(escape(text) for text in trace.pass_line(i, 3)))
        body.append("<tr>" + "".join(f"<td style='{_CELL}'>{c}</td>" for c in cells) + "</tr>")
    more = len(trace.passes) - max_passes
    if more > 0:
        body.append(f"<tr><td colspan='4' style='{_CELL}'>… {more} more passes</td></tr>")
    passes = f"<table style='{_STYLE}'><tr>{head}</tr>{''.join(body)}</table>"
    return f"<div>{_table(rows, 'Trace')}{passes}</div>"

