"""What activation patching (compute.explain.patching) and path patching (compute.explain.path_patching) share:
the clean and the corrupted float64 twin prefills they compare, the two answers and the metric (docs/spec/k3-math.md
§11), and the base of their result records.

    score = (LD(patched) − LD(corrupted)) / (LD(clean) − LD(corrupted)),   LD = logit[a] − logit[b]

at the explained position: a = the explained word, b = the corrupted run's answer (its runner-up when it predicts
a too); 0 = nothing restored, 1 = the clean run's difference.

The pair is made once per explanation and corrupted prompt (`pair_of` keeps the latest on the Explanation, as
compute.explain.causal_route keeps its base run): the Route page's paths table patches ten blocks against the same
two prefills.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from compute.explain.knockout import prefill
from compute.explain.rerun import twin64

__all__ = ["PatchPair", "Restored", "pair_of", "corrupted_ids"]


def corrupted_ids(ex, corrupted: str | None) -> tuple[list[int], str, str]:
    """(ids, corrupted prompt text, swap note) for an Explanation: proposed inside the language when None."""
    from compute.explain.counterfactual import propose

    n = len(ex.ids)
    if corrupted is None:
        pr = propose(ex.pieces)
        vocab = {pc: tid for pc, tid in ex.model.vocab}
        return [vocab[p] for p in pr.pieces], "".join(pr.pieces), pr.note
    if not isinstance(corrupted, str):
        raise ValueError(f"corrupted must be a prompt string or None, got {type(corrupted).__name__}")
    toks = ex.model.encode_prompt(corrupted)
    if len(toks) != n:
        raise ValueError(f"the corrupted prompt has {len(toks)} toy tokens, the clean one {n} (up to the explained "
                         f"position): they must have the same count")
    return [i for _, i in toks], corrupted, ""


class PatchPair:
    """The clean and corrupted twin prefills of an explanation (tw, clean, corr), the explained position t, the
    answers a, b (their pieces pa, pb), the logit differences ld_clean, ld_corr, the corrupted prompt text_c and
    the swap note. Read-only once made: every experiment copies what it changes."""

    def __init__(self, ex, ids_c: list[int], text_c: str, swap: str):
        self.text_c, self.swap = text_c, swap
        self.tw = twin64(ex.model)
        self.t = t = ex.position
        self.clean = prefill(self.tw, ex.ids, ex.knobs)
        self.corr = prefill(self.tw, ids_c, ex.knobs)
        lk = np.asarray(self.clean.final["lm_head"][t], np.float64)
        lc = np.asarray(self.corr.final["lm_head"][t], np.float64)
        a = ex.word_index
        b = int(np.argmax(lc))
        self.same = b == a
        if self.same:
            b = int(np.argsort(-lc, kind="stable")[1])
        self.a, self.b = a, b
        self.ld_clean, self.ld_corr = lk[a] - lk[b], lc[a] - lc[b]
        if abs(self.ld_clean - self.ld_corr) < 1e-6:
            raise ValueError("the corrupted prompt leaves the logit difference as it is: nothing to restore")
        vocab = ex.model.vocab
        self.pa, self.pb = vocab[a][0], vocab[b][0]

    def metric(self, name: str = "", where: str = "") -> str:
        """One line naming the measure: `name` before it ("path patching: "), `where` after the position."""
        runner_up = (f"; the corrupted run predicts {self.pa!r} too: {self.pb!r} is its runner-up" if self.same
                     else "")
        return (f"{name}restored fraction of the logit difference {self.pa!r} − {self.pb!r} at position {self.t}"
                f"{where} (corrupted run = 0, clean run = 1{runner_up})")

    def score(self, logits: np.ndarray) -> np.ndarray:
        """The restored fraction of logits [..., V] at the explained position."""
        ld = logits[..., self.a] - logits[..., self.b]
        return (ld - self.ld_corr) / (self.ld_clean - self.ld_corr)


def pair_of(ex, corrupted: str | None, verb: str = "patch") -> PatchPair:
    """The PatchPair of Explanation `ex` and `corrupted` (None: proposed inside the language), made once per
    corrupted prompt (the latest kept on `ex`). ValueError (one line) for an explanation with knock-outs (`verb`
    names the experiment), a bad corrupted prompt, or one that leaves the logit difference unchanged."""
    if ex.ablation is not None:
        raise ValueError(f"{verb} an explanation without knock-outs")
    ids_c, text_c, swap = corrupted_ids(ex, corrupted)
    key = tuple(ids_c)  # the proposed prompt and the same prompt typed share the prefills, not the swap note
    got = ex.__dict__.get("_patch_pair")
    if got is None or got[0] != key:
        got = (key, PatchPair(ex, ids_c, text_c, swap))
        ex.__dict__["_patch_pair"] = got
    pair = got[1]
    if (pair.text_c, pair.swap) != (text_c, swap):
        pair = copy.copy(pair)
        pair.text_c, pair.swap = text_c, swap
    return pair


@dataclass
class Restored:
    """The fields every patching result shares. sites: what was patched; scores: numpy, the restored fraction of
    each site; clean, corrupted: the prompts (their pieces joined); clean_word / corrupted_word: the two answers
    the logit difference compares; metric: one line naming the measure; swap: which piece the proposed corruption
    swapped ("" for a prompt given by the caller)."""

    sites: str
    scores: np.ndarray
    clean: str
    corrupted: str
    clean_word: str
    corrupted_word: str
    metric: str
    swap: str = ""

    def _site(self, i: int) -> tuple:
        """The name of flat score i in top()'s answer."""
        raise NotImplementedError

    def top(self, n: int = 5) -> list[tuple[tuple, float]]:
        """The n sites that restore most: [(site, score)], largest first (NaN sites left out)."""
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        flat = np.nan_to_num(self.scores.reshape(-1), nan=-np.inf)
        order = np.argsort(-flat, kind="stable")[:int(n)]
        out = []
        for i in order:
            if not np.isfinite(flat[i]):
                break
            out.append((self._site(int(i)), float(flat[i])))
        return out
