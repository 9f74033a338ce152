"""Two models, one prompt (issue 41.3 / 41.4): what each model answers at one position and where it does it,
every number named, from that model's own compute.explain.Explanation (so the comparison's figures equal each
model's own explanation; a test checks that).

    run = side_run(ToyK3(config), "아이가 상자를 집었다. 그리고")
    run.word, run.top, run.lens, run.patch, run.heads, run.experts, run.mixer_effect

Per model (SideRun):
  word, prob, top        the answer (temperature 0) and the top-5 with their probabilities
  lens                   the answer's probability read at the embedding and after every layer (logit lens, L+1)
  patch                  residual patching [L+1, T]: the restored fraction of the normalised logit difference when
                         the residual after layer ℓ at position t is taken from the clean prompt into the corrupted
                         one (compute.explain.patching; `swap` names the swapped piece, `metric` the measure)
  mention                the earlier position holding the answer's piece (the copied mention), or None
  copy_leaves            the last layer at which patching the mention still restores >= COPY_SHARE (the answer is
                         still read from the mention's position up to there), None without a mention
  copy_arrives           the first layer at which patching the explained position restores >= COPY_SHARE
  heads / experts        the TOP_N heads (layer, head, "kda" | "mla", effect) and routed experts (layer, expert,
                         effect) whose knock-out removes most of the answer's margin over its runner-up
  mixer_best             {"kda" | "mla": (restored fraction, layer, position)}: the one mixer output (one layer's
                         KDA or MLA mixer at one position, compute.explain.patching sites="blocks") whose patching
                         restores most, per mixer kind (None for a kind the model lacks); `mixer_count` how many
                         mixers of each kind the model has
  trained                False when the model runs seeded random weights (no trained toy ships for it): its
                         figures are noise and every view that shows them says so
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COPY_SHARE = 0.5  # a patched site "carries" the answer when it restores at least half of the logit difference
TOP_N = 3


@dataclass(frozen=True)
class SideRun:
    model: str
    display: str
    trained: bool
    weights_note: str
    kinds: tuple[str, ...]  # mixer kind of each layer ("kda" | "mla"), 1-based layer i at [i - 1]
    pieces: tuple[str, ...]
    position: int
    word: str
    prob: float
    top: tuple[tuple[str, float], ...]
    lens: tuple[float, ...]
    patch: np.ndarray | None  # [L+1, T] restored fractions; None where the prompt has no proposed corruption
    swap: str
    corrupted: str  # the corrupted prompt the patching ran against ("" without one)
    metric: str
    mention: int | None
    copy_leaves: int | None
    copy_arrives: int | None
    heads: tuple[tuple[int, int, str, float], ...]
    experts: tuple[tuple[int, int, float], ...]
    mixer_best: dict
    mixer_count: dict

    @property
    def layers(self) -> int:
        return len(self.kinds)


def mention_of(pieces, position: int, word: str) -> int | None:
    """The last position before `position` holding `word` (the mention the answer copies), None if none."""
    hits = [j for j in range(min(position, len(pieces))) if pieces[j] == word]
    return hits[-1] if hits else None


def copy_layers(patch: np.ndarray, mention: int | None, position: int,
                share: float = COPY_SHARE) -> tuple[int | None, int | None]:
    """(last layer whose residual at the mention restores >= share, first layer whose residual at the explained
    position does); rows of `patch` are 0 = the embedding, ℓ = after layer ℓ."""
    leaves = None
    if mention is not None:
        rows = np.flatnonzero(np.nan_to_num(patch[:, mention], nan=-1.0) >= share)
        leaves = int(rows[-1]) if rows.size else None
    rows = np.flatnonzero(np.nan_to_num(patch[:, position], nan=-1.0) >= share)
    return leaves, (int(rows[0]) if rows.size else None)


def _top_cells(effects: np.ndarray, n: int) -> list[tuple[int, int, float]]:
    """(row, column, value) of the n largest finite cells of effects [R, C], largest first (ties: row-major)."""
    flat = np.nan_to_num(effects, nan=-np.inf)
    order = np.argsort(-flat.reshape(-1), kind="stable")[:n]
    cells = (np.unravel_index(i, effects.shape) for i in order)
    return [(int(r), int(c), float(effects[r, c])) for r, c in cells if np.isfinite(flat[r, c])]


def top_heads(effects: np.ndarray, kinds, n: int = TOP_N) -> tuple[tuple[int, int, str, float], ...]:
    return tuple((li + 1, h, kinds[li], v) for li, h, v in _top_cells(effects, n))


def top_experts(moe_layers, effects: np.ndarray, n: int = TOP_N) -> tuple[tuple[int, int, float], ...]:
    return tuple((int(moe_layers[m]), e, v) for m, e, v in _top_cells(effects, n))


def mixer_best(blocks: np.ndarray, kinds) -> dict:
    """{kind: (restored fraction, 1-based layer, position) of the best mixer site, or None} from "blocks"
    patching scores [L, 2, T] (part 0 = the mixer)."""
    out = {}
    for kind in ("kda", "mla"):
        rows = [li for li, k in enumerate(kinds) if k == kind]
        if not rows:
            out[kind] = None
            continue
        sub = np.nan_to_num(blocks[rows, 0, :], nan=-np.inf)
        r, t = np.unravel_index(int(np.argmax(sub)), sub.shape)
        out[kind] = (float(sub[r, t]), rows[r] + 1, int(t)) if np.isfinite(sub[r, t]) else None
    return out


def side_run(model, prompt: str, position: int | None = None, experts: bool = True) -> SideRun:
    """The comparison's figures of one model (a compute.engine.ToyK3) on `prompt` at `position` (None: the last);
    experts=False leaves the expert effects out (the slowest part: the survey of many cuts skips them)."""
    from compute.explain import Explanation

    ex = Explanation.of_prompt(model, prompt, position)
    cfg = model.config
    kinds = tuple(cfg.mixer_types)
    word = ex.word
    lens = tuple(float(p) for p in ex.lens_prob(word))
    try:
        pt = ex.patch(sites="residual")
        patch, swap, corrupted, metric = np.asarray(pt.scores, dtype=np.float64), pt.swap, pt.corrupted, pt.metric
        best = mixer_best(np.asarray(ex.patch(sites="blocks").scores, dtype=np.float64), kinds)
    except ValueError:  # outside the toy language: no corrupted prompt to propose
        patch, swap, corrupted, metric, best = None, "", "", "", {"kda": None, "mla": None}
    mention = mention_of(ex.pieces, ex.position, word)
    leaves, arrives = copy_layers(patch, mention, ex.position) if patch is not None else (None, None)
    top_e = top_experts(*ex.expert_effects[:2]) if experts else ()
    return SideRun(model=cfg.name, display=cfg.display_name, trained=model.weights_name == "trained",
                   weights_note=model.weights_note or "", kinds=kinds, pieces=tuple(ex.pieces), position=ex.position,
                   word=word, prob=float(ex.probs[ex.index_of(word)]), top=tuple(ex.top(5)), lens=lens, patch=patch,
                   swap=swap, corrupted=corrupted, metric=metric, mention=mention, copy_leaves=leaves, copy_arrives=arrives,
                   heads=top_heads(ex.head_effects, kinds), experts=top_e, mixer_best=best,
                   mixer_count={k: kinds.count(k) for k in ("kda", "mla")})


__all__ = ["SideRun", "side_run", "copy_layers", "mention_of", "top_heads", "top_experts", "mixer_best", "COPY_SHARE", "TOP_N"]
