"""Score a model's SAMPLED answers on every proper prefix of every document of the toy language (compute.language.task):
how often an answer drawn at given knobs (temperature, top-p) is a whole document, and how varied the answers are.

For each document, each cut c (1 ≤ c < len(pieces)) and each sample seed s, the answer is drawn as the app draws
it: the engine's next-piece logits after the text so far, compute.ops.sampling.top_p_probs at the knobs, the n-th new
piece with the n-th of compute.ops.sampling.pass_uniforms(s, …), until "\\n" (at most `max_new` pieces). The answer is
RIGHT when prompt + answer is one whole document of the language.

The logits depend on the prefix only, so they are memoised per prefix, and each document's prefixes come from ONE
teacher-forced forward (causal: the logits at position t are the model's after pieces[:t+1]). A draw that leaves
the language (the text so far is no prefix of any document) can no longer become a document: it is counted wrong
there and not followed, so no forward outside the language is ever needed.

The model is a callable `logits_of(pieces) -> array [len(pieces), V]`, rows in the vocabulary order `vocab`
(`engine_logits(engine)` makes one from a ToyK3: its forward, float32, the app's code path). Qt-free, torch-free.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Sequence

import numpy as np

from compute.language import task
from compute.ops.sampling import pass_uniforms, sample_index, top_p_probs

LogitsFn = Callable[[tuple[str, ...]], np.ndarray]


class SampledCompleter:
    """Memoised sampled completion over a model's next-piece logits, inside the language only."""

    def __init__(self, logits_of: LogitsFn, vocab: Sequence[str], max_new: int = 24):
        self._logits_of = logits_of
        self.vocab = list(vocab)
        self.max_new = max_new
        self._logits: dict[tuple[str, ...], np.ndarray] = {}
        self._probs: dict[tuple[tuple[str, ...], float, float], np.ndarray] = {}
        self._prefixes = _language_prefixes()
        self._whole = {d.pieces for d in task.all_documents()}
        self.forwards = 0

    def prime(self, docs: Iterable[task.Document]) -> None:
        """The logits of every prefix of each document, one forward per document."""
        for d in docs:
            if d.pieces[:-1] in self._logits:
                continue
            self.forwards += 1
            rows = np.asarray(self._logits_of(d.pieces[:-1]), dtype=np.float64)
            for t in range(len(d.pieces) - 1):
                self._logits.setdefault(d.pieces[: t + 1], rows[t])

    def probs(self, prefix: tuple[str, ...], temperature: float, top_p: float) -> np.ndarray:
        key = (prefix, temperature, top_p)
        if key not in self._probs:
            if prefix not in self._logits:
                self.forwards += 1
                self._logits[prefix] = np.asarray(self._logits_of(prefix), dtype=np.float64)[-1]
            self._probs[key] = top_p_probs(self._logits[prefix], temperature, top_p)
        return self._probs[key]

    def sample(self, prompt: tuple[str, ...], temperature: float, top_p: float, seed: int
               ) -> tuple[bool, tuple[str, ...]]:
        """(whether prompt + answer is a whole document, the answer drawn so far: whole, or cut where it left the
        language)."""
        us = pass_uniforms(seed, self.max_new)
        cur = tuple(prompt)
        out: list[str] = []
        for n in range(self.max_new):
            piece = self.vocab[sample_index(self.probs(cur, temperature, top_p), float(us[n]))]
            out.append(piece)
            cur = cur + (piece,)
            if piece == task.END:
                return cur in self._whole, tuple(out)
            if cur not in self._prefixes:
                return False, tuple(out)
        return False, tuple(out)


def _language_prefixes() -> frozenset[tuple[str, ...]]:
    return frozenset(d.pieces[:c] for d in task.all_documents() for c in range(len(d.pieces)))


def score_sampled(logits_of: LogitsFn, vocab: Sequence[str], knobs: Sequence[tuple[float, float]],
                  seeds: Sequence[int] = tuple(range(10)), docs: Iterable[task.Document] | None = None,
                  max_new: int = 24) -> dict:
    """For each (temperature, top_p) in `knobs`: over every proper prefix of `docs` (default: every document) ×
    `seeds`, the share of answers that are whole documents ("rate", by language too) and the variety: the mean number
    of different whole answers a prefix gets from the seeds ("distinct_right", 0 … len(seeds)) and of different
    answers at all ("distinct", whole or not, each cut where it left the language).

    Returns {"T=…,top_p=…": {"n", "right", "rate", "by_lang": {lang: rate}, "distinct_right", "distinct"}, …}."""
    docs = tuple(task.all_documents() if docs is None else docs)
    c = SampledCompleter(logits_of, vocab, max_new)
    c.prime(docs)
    out = {}
    for temperature, top_p in knobs:
        n = right = 0
        lang_n: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        distinct: list[int] = []
        distinct_any: list[int] = []
        for d in docs:
            for cut in range(1, len(d.pieces)):
                answers, drawn = set(), set()
                for s in seeds:
                    ok, ans = c.sample(d.pieces[:cut], temperature, top_p, s)
                    n += 1
                    right += ok
                    lang_n[d.lang][0] += 1
                    lang_n[d.lang][1] += ok
                    drawn.add(ans)
                    if ok:
                        answers.add(ans)
                distinct.append(len(answers))
                distinct_any.append(len(drawn))
        out[f"T={temperature:g},top_p={top_p:g}"] = {
            "n": n, "right": right, "rate": round(right / n, 4) if n else None,
            "by_lang": {k: round(v[1] / v[0], 4) for k, v in sorted(lang_n.items())},
            "distinct_right": round(float(np.mean(distinct)), 3) if distinct else None,
            "distinct": round(float(np.mean(distinct_any)), 3) if distinct_any else None}
    out["forwards"] = c.forwards
    return out


def engine_logits(engine) -> LogitsFn:
    """A ToyK3's next-piece logits after every prefix of `pieces` (one forward of the whole sequence), rows in
    the engine's vocabulary order."""
    from compute.trace import Knobs

    rows = {p: r for r, (p, _) in enumerate(engine.vocab)}
    knobs = Knobs()

    def logits_of(pieces: tuple[str, ...]) -> np.ndarray:
        ids = [engine.vocab[rows[p]][1] for p in pieces]
        return np.asarray(engine.forward(ids, 0, knobs)[2])

    return logits_of


def format_sampled(result: dict) -> str:
    """The knobs table as aligned text: whole documents %, by language, distinct whole answers per prefix."""
    lines = ["knobs                 answers  whole%    ko%    en%  distinct whole / any"]
    for k, v in result.items():
        if not isinstance(v, dict):
            continue
        bl = v["by_lang"]
        lines.append(f"{k:<20} {v['n']:>8}  {100 * v['rate']:6.1f} {100 * bl.get('ko', 0):6.1f} "
                     f"{100 * bl.get('en', 0):6.1f}  {v['distinct_right']:8.2f} / {v['distinct']:5.2f}")
    return "\n".join(lines)
