"""Score a model on EVERY proper prefix of every document of the toy language (compute.language.task), by greedy
completion up to the first "\\n".

For each document and each cut c (1 ≤ c < len(pieces): the prompt is pieces[:c], it lacks at least the "\\n"),
the greedy completion is the model's argmax piece, appended, again and again until "\\n" (at most `max_new`
pieces). The completion is RIGHT when prompt + completion is one whole document of the language. For the
two-sentence patterns (K3, E3) the second mention of the object must repeat the first: a cut inside the
second sentence, at or before that slot (where every document with the prompt repeats its object: after
"그리고", "it"/"they", the verb) also scores whether the first object the completion names is the document's
object ("object right").

Greedy decoding depends on the prefix only, so the scorer memoises the argmax next piece per prefix. The
prefixes inside the language (every node of its prefix tree) get their argmax from ONE teacher-forced
forward per document (causal: the logits at position t are what the model says after pieces[:t+1]);
a completion that leaves the language is followed with real forwards of its off-language prefixes.

The model is a callable `argmax_pieces(pieces) -> list[str]`: the argmax next piece after each prefix
pieces[:t+1], for t = 0 … len(pieces)-1 — `engine_argmax(engine)` makes one from a ToyK3 (its forward, float32,
the app's code path). Qt-free, torch-free.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable

import numpy as np

from compute.language import task

ArgmaxFn = Callable[[tuple[str, ...]], list[str]]


def repeat_slot(doc: task.Document) -> int | None:
    """Index of the SECOND mention of the object in a two-sentence document (K3/E3), else None."""
    if doc.pattern not in ("K3", "E3"):
        return None
    idx = [i for i, p in enumerate(doc.pieces) if p == doc.obj]
    return idx[1] if len(idx) > 1 else None


def must_repeat(prefix: tuple[str, ...]) -> bool:
    """Whether every document with this prefix repeats its object (the prefix is inside the second sentence of
    K3/E3, e.g. "…집었다. 그리고", "…the cup. it"): the continuation MUST name the earlier object again."""
    return all(d.pattern in ("K3", "E3") for d in _documents_with(prefix))


def _documents_with(prefix: tuple[str, ...]) -> list[task.Document]:
    return _by_prefix().get(prefix, [])


_BY_PREFIX: dict[tuple[str, ...], list[task.Document]] = {}


def _by_prefix() -> dict[tuple[str, ...], list[task.Document]]:
    if not _BY_PREFIX:
        for d in task.all_documents():
            for c in range(1, len(d.pieces)):
                _BY_PREFIX.setdefault(d.pieces[:c], []).append(d)
    return _BY_PREFIX


class GreedyCompleter:
    """Memoised greedy completion over a model's argmax next piece."""

    def __init__(self, argmax_pieces: ArgmaxFn, max_new: int = 24):
        self._argmax = argmax_pieces
        self.max_new = max_new
        self._next: dict[tuple[str, ...], str] = {}
        self.forwards = 0

    def prime(self, docs: Iterable[task.Document]) -> None:
        """Fill the argmax of every prefix of the documents, one forward per document."""
        for d in docs:
            if d.pieces[:-1] in self._next:
                continue
            self.forwards += 1
            nxt = self._argmax(d.pieces[:-1])
            for t, piece in enumerate(nxt):
                self._next.setdefault(d.pieces[: t + 1], piece)

    def next_piece(self, prefix: tuple[str, ...]) -> str:
        if prefix not in self._next:
            self.forwards += 1
            self._next[prefix] = self._argmax(prefix)[-1]
        return self._next[prefix]

    def complete(self, prefix: tuple[str, ...]) -> tuple[str, ...]:
        """The greedy pieces after `prefix`, up to and including the first "\\n" (or max_new pieces)."""
        out: list[str] = []
        cur = tuple(prefix)
        for _ in range(self.max_new):
            p = self.next_piece(cur)
            out.append(p)
            if p == task.END:
                break
            cur = cur + (p,)
        return tuple(out)


def score_prefixes(argmax_pieces: ArgmaxFn, docs: Iterable[task.Document] | None = None,
                   held_out: frozenset | None = None, max_new: int = 24) -> dict:
    """The table of greedy completions over every proper prefix of `docs` (default: every document).

    Returns {"rows": [{"lang", "pattern", "cut", "n", "right", "object_n", "object_right"}, …] (one row per
    language × pattern × cut position, training and held-out pairs together), "by_lang": {lang: {...}},
    "held_out": {...} (held-out pairs only), "total": {...}, "failures": [a few (prompt, completion)]}.
    A prefix shared by several documents is scored once per document (a cut position is a document's)."""
    docs = tuple(task.all_documents() if docs is None else docs)
    held_out = task.held_out_pairs() if held_out is None else held_out
    full = {d.pieces for d in task.all_documents()}
    g = GreedyCompleter(argmax_pieces, max_new)
    g.prime(docs)
    cells: dict[tuple[str, str, int], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    agg: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    failures: list[tuple[str, str]] = []
    for d in docs:
        slot = repeat_slot(d)
        first = d.pieces.index(d.obj)
        groups = [d.lang, "total"] + (["held_out"] if (d.subject, d.obj) in held_out else [])
        for c in range(1, len(d.pieces)):
            prompt = d.pieces[:c]
            comp = g.complete(prompt)
            right = int(prompt + comp in full)
            obj_n = obj_right = 0
            if slot is not None and first < c <= slot and must_repeat(prompt):
                obj_n = 1
                said = [p for p in comp if task.piece_type(p) == "object"]
                obj_right = int(bool(said) and said[0] == d.obj)
            for acc in [cells[(d.lang, d.pattern, c)]] + [agg[name] for name in groups]:
                for i, v in enumerate((1, right, obj_n, obj_right)):
                    acc[i] += v
            if not right and len(failures) < 40:
                failures.append(("".join(prompt), "".join(comp)))

    def summary(v):
        n, r, on, orr = v
        return {"n": n, "right": r, "rate": round(r / n, 4) if n else None,
                "object_n": on, "object_right": orr, "object_rate": round(orr / on, 4) if on else None}

    rows = [{"lang": k[0], "pattern": k[1], "cut": k[2], **summary(v)} for k, v in sorted(cells.items())]
    return {"rows": rows, "by_lang": {lang: summary(agg[lang]) for lang in ("ko", "en") if lang in agg},
            "held_out": summary(agg["held_out"]), "total": summary(agg["total"]),
            "forwards": g.forwards, "failures": failures}


def engine_argmax(engine) -> ArgmaxFn:
    """A ToyK3's argmax next piece after every prefix of `pieces` (one forward of the whole sequence)."""
    from compute.trace import Knobs

    rows = {p: r for r, (p, _) in enumerate(engine.vocab)}
    knobs = Knobs()

    def argmax_pieces(pieces: tuple[str, ...]) -> list[str]:
        ids = [engine.vocab[rows[p]][1] for p in pieces]
        _, _, logits = engine.forward(ids, 0, knobs)
        return [engine.vocab[int(i)][0] for i in np.asarray(logits).argmax(-1)]

    return argmax_pieces


def format_table(result: dict) -> str:
    """The language × pattern × cut table as aligned text (rate, and the object rate where it applies)."""
    lines = ["lang pattern  cut    n  right%  object%"]
    for r in result["rows"]:
        obj = f"{100 * r['object_rate']:6.1f}" if r["object_rate"] is not None else "     -"
        lines.append(f"{r['lang']:>4} {r['pattern']:>7} {r['cut']:>4} {r['n']:>4}  {100 * r['rate']:6.1f}  {obj}")
    for name, s in [*result["by_lang"].items(), ("held_out", result["held_out"]), ("total", result["total"])]:
        obj = f"{100 * s['object_rate']:6.1f}" if s["object_rate"] is not None else "     -"
        lines.append(f"{name:>12} {s['n']:>9}  {100 * s['rate']:6.1f}  {obj}")
    return "\n".join(lines)
