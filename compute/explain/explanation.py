"""`Explanation`: why the toy predicts its word at one position — logit lens, every mixer's attention (KDA's
implicit attention exactly, MLA's softmax), each block's direct contribution, each earlier token's causal
effect, and knock-out re-runs. Everything is computed from one prefill of the engine over the tokens up to the
position (the one that predicts the next token), on demand.

    from compute.engine import ToyK3
    from compute.explain import Explanation
    ex = Explanation.of_prompt(ToyK3(), "아이가 상자를 집었다. 그리고")
    ex.word, ex.lens_rank(ex.word)[-5:], ex.sources, ex.attention(37).shape
    ko = ex.knockout(tokens=[2])          # the earlier mention of the object, zeroed: answer and top-5 after
    pt = ex.patch(sites="residual")       # causal tracing: ' 상자' swapped for ' 사과', (L+1) x T restored fractions
    ex.causal_route()                     # the blocks whose knock-out removes >= 30 % of the answer's margin

The causal views (patch, causal_route, head_effects, expert_effects, sources) are the explanation's story;
`route` / `blocks` are the DIRECT effects (not causal): how each block's output, as written, moves the logit
through the final readout with the final AttnRes mix weights and the final norm's scale frozen.

Conventions: positions are 0-based token indices; layers are 1-based as the app counts them (layer 0 = the
embedding); expert ids are 0-based. Bad arguments raise ValueError with one line.
"""
from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import numpy as np

from compute.explain import causal_route as _causal
from compute.explain import kda_attention
from compute.explain.contributions import DIRECT_LABEL, Contribution, Route, direct_contributions
from compute.explain.knockout import Ablation, make_ablation, needs_loop, prefill
from compute.explain.patching import Patching, patch
from compute.explain.resample import SOURCE_METRICS, SOURCE_MODES, source_effects, source_measure
from compute.explain.lens import LENS_MODES, Lens, LensEntry, logit_lens
from compute.engine_io import check_knobs
from compute.trace import Knobs

__all__ = ["Explanation", "Source"]


class Source(NamedTuple):
    """(position, piece, effect): ablating the token at `position` lowers the explained word's measure by
    `effect` (Explanation.source_measure names both; negative: the token worked against the word)."""

    position: int
    piece: str
    effect: float


class Explanation:
    """See the module docstring. Build with `Explanation.of_prompt(model, prompt, position=None)` or from ids."""

    def __init__(self, model, tokens: list, position: int | None = None, *, knobs: Knobs | None = None,
                 ablation: Ablation | None = None, source_mode: str = "resample", lens_mode: str = "exit",
                 before: "Explanation | None" = None, source_metric: str = "contrast", word: int | None = None):
        """tokens: [(piece, id), ...] as the tokenizer gives them (or bare ids of toy-vocabulary pieces); word:
        the token id whose logit is explained (default the most probable one, the temperature-0 answer)."""
        vocab_pieces = {tid: pc for pc, tid in model.vocab}
        toks = [(t[0], int(t[1])) if isinstance(t, tuple) else (vocab_pieces.get(int(t), f"<id {int(t)}>"), int(t))
                for t in tokens]
        ids = [i for _, i in toks]
        if not ids:
            raise ValueError("nothing to explain: the prompt has no tokens")
        if position is None:
            position = len(ids) - 1
        if isinstance(position, (bool, np.bool_)) or not isinstance(position, (int, np.integer)):
            raise ValueError(f"position must be an integer token index, got {position!r}")
        position = int(position)
        if position < 0:
            position += len(ids)
        if not 0 <= position < len(ids):
            raise ValueError(f"position {position} is outside 0..{len(ids) - 1} (the prompt's tokens)")
        if source_mode not in SOURCE_MODES:
            raise ValueError(f"source_mode must be one of {', '.join(SOURCE_MODES)}, got {source_mode!r}")
        if source_metric not in SOURCE_METRICS:
            raise ValueError(f"source_metric must be one of {', '.join(SOURCE_METRICS)}, got {source_metric!r}")
        if lens_mode not in LENS_MODES:
            raise ValueError(f"lens_mode must be one of {', '.join(LENS_MODES)}, got {lens_mode!r}")
        self.model = model
        self.position = position
        self.ids = ids[: position + 1]
        self.pieces = [pc for pc, _ in toks[: position + 1]]
        """The pieces of the tokens 0..position."""
        if knobs is not None:
            if not isinstance(knobs, Knobs):
                raise ValueError(f"knobs must be a compute.trace.Knobs, got {type(knobs).__name__}")
            check_knobs(knobs)
        self.knobs = knobs if knobs is not None else Knobs(temperature=0.0)
        self.ablation = ablation if ablation is not None and not ablation.empty else None
        self.source_mode = source_mode
        self.source_metric = source_metric
        self.lens_mode = lens_mode
        self.before = before
        self._loop = needs_loop(self.ablation)
        self.run = prefill(model, self.ids, self.knobs, self.ablation, loop=self._loop)
        self.logits = np.asarray(self.run.final["lm_head"][position], dtype=np.float64)
        self.word_index = int(np.argmax(self.logits)) if word is None else int(word)
        if not 0 <= self.word_index < self.logits.shape[0]:
            raise ValueError(f"word {word!r} is outside the vocabulary 0..{self.logits.shape[0] - 1}")

    @classmethod
    def of_prompt(cls, model, prompt: str, position: int | None = None, **kw) -> "Explanation":
        """The explanation of `prompt`'s tokens (the model's toy tokenizer) at `position` (default the last)."""
        if not isinstance(prompt, str):
            raise ValueError(f"prompt must be a string, got {type(prompt).__name__}")
        from compute.engine import MAX_PROMPT_TOKENS

        longest = max(len(pc) for pc, _ in model.vocab)
        if len(prompt) > MAX_PROMPT_TOKENS * longest:  # more tokens than the engine takes, whatever they are
            raise ValueError(f"the prompt has {len(prompt)} characters: more than the toy engine's {MAX_PROMPT_TOKENS} "
                             f"tokens can hold")
        return cls(model, model.encode_prompt(prompt), position, **kw)

    # ------------------------------------------------------------------ the prediction
    @property
    def word(self) -> str:
        """The explained piece: the one predicted at temperature 0 at this position unless `word` chose another."""
        return self.model.vocab[self.word_index][0]

    @property
    def logit(self) -> float:
        """The engine's logit of `word` at this position."""
        return float(self.logits[self.word_index])

    @cached_property
    def probs(self) -> np.ndarray:
        """Probabilities over the toy vocabulary at temperature 1 (the model's own distribution)."""
        e = np.exp(self.logits - self.logits.max())
        return e / e.sum()

    def top(self, k: int = 5) -> list[tuple[str, float]]:
        """The k most probable pieces with their probabilities (temperature 1)."""
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        order = np.argsort(-self.logits, kind="stable")[:k]
        return [(self.model.vocab[i][0], float(self.probs[i])) for i in order]

    def index_of(self, piece: str) -> int:
        """Vocabulary row of a toy-vocabulary piece (ValueError for other pieces)."""
        for i, (pc, _) in enumerate(self.model.vocab):
            if pc == piece:
                return i
        raise ValueError(f"{piece!r} is not a piece of the toy vocabulary")

    def logit_of(self, piece: str) -> float:
        """The engine's logit of any toy-vocabulary piece at this position (ValueError for other pieces): the
        API's way to compare the answer with a competitor, e.g. ex.logit - ex.logit_of(" 컵")."""
        return float(self.logits[self.index_of(piece)])

    # ------------------------------------------------------------------ logit lens
    @cached_property
    def lens_detail(self) -> Lens:
        """The full lens (compute.explain.lens.Lens): entries, mixer entries, logits."""
        return logit_lens(self.run, self.model, self.position, self.word_index, mode=self.lens_mode)

    @property
    def lens(self) -> list[LensEntry]:
        """One entry per layer: index 0 = the embedding, ℓ = after layer ℓ (top-3 pieces, the word's rank and
        probability). "After layer ℓ" with AttnRes: see compute.explain.lens (docs/spec/k3-math.md §8)."""
        return self.lens_detail.entries

    @property
    def lens_mixers(self) -> list[LensEntry]:
        """After each layer's mixer (before its FFN), layers 1..L."""
        return self.lens_detail.mixers

    @property
    def readable_from(self) -> int | None:
        """The first lens layer from which `word` is the top piece at every later entry: where the answer becomes
        READABLE through the final readout — not where it is decided (Patching.decided_at says that)."""
        return next((e.layer for e in self.lens if e.rank == 1 and all(x.rank == 1 for x in self.lens[e.layer:])),
                    None)

    def lens_rank(self, piece: str) -> list[int]:
        """The 1-based rank of `piece` at every lens entry (the embedding, then after each layer)."""
        return self.lens_detail.ranks(self.index_of(piece))

    def lens_prob(self, piece: str) -> list[float]:
        return self.lens_detail.probs(self.index_of(piece))

    # ------------------------------------------------------------------ contributions
    @cached_property
    def route(self) -> Route:
        """DIRECT effects (not causal) on `word`'s logit (compute.explain.contributions.Route; its `label` says so).
        The causal route is `causal_route()`."""
        return direct_contributions(self.run, self.model, self.position, self.word_index)

    @property
    def direct_effects(self) -> Route:
        """The direct contributions, under the name that says what they are: direct effects (not causal)."""
        return self.route

    direct_label = DIRECT_LABEL

    @property
    def blocks(self) -> list[Contribution]:
        """(layer, part, value) direct contributions; sum(values) + rest == logit."""
        return self.route.blocks

    @property
    def rest(self) -> float:
        return self.route.rest

    def promotes(self, i: int, k: int = 5) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """(the k pieces block i of `blocks` promotes most, the k it suppresses most) with their logit changes."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < len(self.blocks):
            raise ValueError(f"block index must be in 0..{len(self.blocks) - 1}, got {i!r}")
        eff = self.route.word_effects(int(i))
        order = np.argsort(-eff, kind="stable")
        v = self.model.vocab
        return ([(v[j][0], float(eff[j])) for j in order[:k]],
                [(v[j][0], float(eff[j])) for j in order[::-1][:k]])

    # ------------------------------------------------------------------ attention
    def _layer(self, layer) -> int:
        L = len(self.run.layers)
        if isinstance(layer, (bool, np.bool_)) or not isinstance(layer, (int, np.integer)):
            raise ValueError(f"layer must be an integer 1..{L}, got {layer!r}")
        if not 1 <= layer <= L:
            raise ValueError(f"layer {layer} is outside 1..{L} (layer 0 is the embedding: no attention)")
        return int(layer) - 1

    def mixer_kind(self, layer: int) -> str:
        """"kda" | "mla" of a 1-based layer."""
        return self.run.layers[self._layer(layer)].mixer

    value_mix_note = kda_attention.VALUE_MIX_NOTE

    def attention(self, layer: int) -> np.ndarray:
        """[heads, T, T] (T = position + 1), per head (never a head mean: KDA heads can have opposite signs): KDA's
        implicit attention A (o_t = Σ_i A[h, t, i] v_i exactly; compute.explain.kda_attention; v_i mixes tokens
        i−3..i, `value_mix_note`) or MLA's softmax weights (rows sum to 1), float64."""
        lt = self.run.layers[self._layer(layer)]
        if lt.mixer == "kda":
            return kda_attention.layer_attention(lt.tensors, self.model.dims.kda_heads)
        return np.array(lt.tensors["mla.softmax"], dtype=np.float64)

    def attention_row(self, layer: int) -> np.ndarray:
        """[heads, T]: what the explained position reads in `layer` (the last row of `attention`)."""
        lt = self.run.layers[self._layer(layer)]
        if lt.mixer == "kda":
            return kda_attention.layer_attention(lt.tensors, self.model.dims.kda_heads, rows=[self.position])[:, 0]
        return np.array(lt.tensors["mla.softmax"][:, self.position], dtype=np.float64)

    @cached_property
    def attention_rows(self) -> list[np.ndarray]:
        """attention_row of every layer (index ℓ−1), the KDA layers computed together."""
        layers = self.run.layers
        H = self.model.dims.kda_heads
        kda = [li for li, lt in enumerate(layers) if lt.mixer == "kda"]
        out: list = [None] * len(layers)
        if kda:
            qs = [kda_attention.layer_qkv(layers[li].tensors, H) for li in kda]
            A = kda_attention.implicit_attention(np.stack([q[0] for q in qs]), np.stack([q[1] for q in qs]),
                                                 np.stack([q[3] for q in qs]), np.stack([q[4] for q in qs]),
                                                 rows=[self.position])
            for j, li in enumerate(kda):
                out[li] = A[j, :, 0]
        for li, lt in enumerate(layers):
            if lt.mixer != "kda":
                out[li] = np.array(lt.tensors["mla.softmax"][:, self.position], dtype=np.float64)
        return out

    # ------------------------------------------------------------------ causal effects
    def _rerun(self, ab: Ablation) -> np.ndarray:
        """Logits at the position after knocking out `ab` on top of this explanation's own ablation."""
        full = ab if self.ablation is None else self.ablation.merged(ab)
        run = prefill(self.model, self.ids, self.knobs, full, loop=self._loop or needs_loop(full))
        return np.asarray(run.final["lm_head"][self.position], dtype=np.float64)

    @cached_property
    def _sources(self) -> tuple[list[Source], list[str]]:
        eff, answers = source_effects(self, self.source_mode, self.source_metric)
        return [Source(j, pc, e) for j, (pc, e) in enumerate(zip(self.pieces, eff))], answers

    @property
    def sources(self) -> list[Source]:
        """(position, piece, effect) for every token 0..position (the explained one included): ablate it
        (`source_mode`: "resample" by default, "mean", "zero"), re-run, effect = the fall of the measure
        (`source_metric`: "contrast" by default, "logit"); `source_measure` names both (compute.explain.resample)."""
        return self._sources[0]

    @property
    def source_measure(self) -> str:
        """One line naming the sources' ablation and measure."""
        return source_measure(self.source_mode, self.source_metric)

    @property
    def source_answers(self) -> list[str]:
        """The word predicted at temperature 0 with each source knocked out (parallel to `sources`)."""
        return self._sources[1]

    def top_source(self, earlier_only: bool = True) -> Source:
        """The source with the largest effect (earlier_only, the default: among positions before the explained
        one)."""
        if not isinstance(earlier_only, (bool, np.bool_)):
            raise ValueError(f"earlier_only must be True or False, got {earlier_only!r}")
        srcs = self.sources[:-1] if earlier_only and len(self.sources) > 1 else self.sources
        return max(srcs, key=lambda s: s.effect)

    # ------------------------------------------------------------------ knock-outs
    def knockout(self, tokens=None, blocks=None, experts=None, mode: str = "zero", sources=None) -> "Explanation":
        """A new Explanation with tokens (positions), blocks ((layer, "mixer" | "ffn")), experts (ids, or
        (layer, id)) and AttnRes sources (0 = the embedding, j = block j's stored sum) knocked out on top of this
        one's (compute.explain.knockout); `.before` is this one, and `effect` the drop of this one's word's logit."""
        ab = make_ablation(self.model, len(self.ids), tokens, blocks, experts, mode, sources)
        if ab.empty:
            raise ValueError("nothing to knock out: give tokens, blocks, experts or sources")
        full = ab if self.ablation is None else self.ablation.merged(ab)
        return Explanation(self.model, list(zip(self.pieces, self.ids)), self.position, knobs=self.knobs, ablation=full,
                           source_mode=self.source_mode, lens_mode=self.lens_mode, before=self,
                           source_metric=self.source_metric)

    # ------------------------------------------------------------------ causal experiments
    def patch(self, corrupted: str | None = None, *, sites: str = "residual", layers=None) -> Patching:
        """Counterfactual activation patching (compute.explain.patching): corrupted = a prompt of the same token
        count (None: proposed inside the toy language — the piece that decides the answer swapped, `.swap` says
        which; outside it ValueError). sites: "residual" -> scores [L+1, T] (row 0 = the embedding), "blocks"
        -> [L, 2, T] (mixer, FFN), "heads" -> [L, heads], "experts" -> [MoE layers, experts], "sources" ->
        [AttnRes sources], "kda_state" -> [L, T] (the KDA state after each position, carried forward). `.metric` names the measure; `.top(n)`. layers: only these rows of "residual" (NaN
        elsewhere)."""
        return patch(self, corrupted, sites, layers)

    def causal_route(self, threshold: float = 0.3) -> "_causal.CausalRoute":
        """[(layer, part, effect)]: a run of blocks whose knock-out together changes the answer — of the
        strongest-first and the greedy run, the one whose weakest block is strongest, while every effect on it is
        ≥ threshold × the largest block effect (compute.explain.causal_route); `knockout(blocks=route.blocks)`
        takes them. Empty with `.spread` True and `.note` saying so when no run reaches the threshold. Block
        effects and both searches are computed once per explanation; any threshold cuts them."""
        threshold = _causal.check_threshold(threshold)
        if "_block_effects" not in self.__dict__:
            self._block_effects = _causal.block_effects(self)
        if "_route_searches" not in self.__dict__:
            self._route_searches = _causal.searches(self, self._block_effects)
        return _causal.causal_route(self, threshold, self._block_effects, self._route_searches)

    def path_patch(self, corrupted: str | None = None, *, sender, receivers="logits"):
        """Path patching (compute.explain.path_patching): the effect of sender (layer, "mixer" | "ffn") or (layer,
        "mixer", head) — or a list of them, patched together — on the answer only through receivers — "logits"
        (the direct path to the final readout) or a list of (layer, part) and "logits", every other block frozen
        at its corrupted output. `.score`, `.metric` names the measure (patch()'s restored fraction: corrupted 0,
        clean 1). The clean and corrupted prefills are made once per corrupted prompt (compute.explain.patch_pair)."""
        from compute.explain.path_patching import path_patch

        return path_patch(self, corrupted, sender=sender, receivers=receivers)

    def direct_paths(self, corrupted: str | None = None):
        """Path patching with every block as sender and the logits as receiver: `.scores` [L, 2] (mixer, FFN),
        each block's direct path to the answer (compute.explain.path_patching)."""
        from compute.explain.path_patching import direct_path_grid

        return direct_path_grid(self, corrupted)

    @cached_property
    def head_effects(self) -> np.ndarray:
        """[L, heads] total effect of zeroing each KDA / MLA head (share of the answer's margin removed)."""
        return _causal.head_effects(self)

    @cached_property
    def expert_effects(self) -> tuple:
        """(MoE layers 1-based, [M, E] total effect of removing each expert routed at this position (NaN for
        the others), [M] of zeroing the shared experts)."""
        return _causal.expert_effects(self)

    def head_words(self, layer: int, head: int, k: int = 5):
        """(promoted, suppressed): the k words head `head` of `layer` writes most for / against at this position
        (its output through the final norm and LM head with the final mix weight and scale frozen)."""
        from compute.explain.vocab_projection import head_words

        return head_words(self, self._layer(layer), head, k)

    def expert_words(self, layer: int, expert, k: int = 5):
        """(promoted, suppressed) words of routed expert `expert` (or "shared") of MoE `layer` at this position."""
        from compute.explain.vocab_projection import expert_words

        return expert_words(self, self._layer(layer), expert, k)

    @cached_property
    def _baseline_logits(self) -> np.ndarray | None:
        """The `before` explanation's logits on this run's kernels (the layer loop for block / expert
        knock-outs, where the compiled pass's float32 rounding would otherwise mix in)."""
        b = self.before
        if b is None:
            return None
        if b._loop == self._loop:
            return b.logits
        run = prefill(self.model, b.ids, b.knobs, b.ablation, loop=self._loop)
        return np.asarray(run.final["lm_head"][self.position], dtype=np.float64)

    @property
    def effect(self) -> float | None:
        """For a knock-out: how much the knock-out lowered the logit of the word `before` predicted (on the same
        kernels); None otherwise."""
        if self.before is None:
            return None
        w = self.before.word_index
        return float(self._baseline_logits[w] - self.logits[w])

    @property
    def changed(self) -> bool | None:
        """For a knock-out: whether the predicted word changed."""
        return None if self.before is None else self.word_index != self.before.word_index

    def summary(self) -> str:
        """A few lines in English (the app translates its own views)."""
        top5 = ", ".join(f"{p!r} {q:.3f}" for p, q in self.top(5))
        lines = [f"position {self.position} ({self.pieces[-1]!r}) predicts {self.word!r} (logit {self.logit:.3f}); "
                 f"top-5: {top5}"]
        if self.ablation is not None:
            lines.append(f"knock-out ({self.ablation.describe()}): before {self.before.word!r}" if self.before
                         else f"knock-out ({self.ablation.describe()})")
        first = self.readable_from
        lines.append(f"lens ({self.lens_mode}): {self.word!r} readable from layer {first} on (where it is decided: "
                     f"patch().decided_at())" if first is not None
                     else f"lens ({self.lens_mode}): {self.word!r} is not top at every later layer")
        big = sorted(self.blocks, key=lambda c: -abs(c.value))[:5]
        lines.append("largest direct effects (not causal): " + ", ".join(f"L{c.layer} {c.part} {c.value:+.3f}" for c in big)
                     + f"; rest {self.rest:+.1e}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Explanation(position={self.position}, word={self.word!r}, logit={self.logit:.3f})"

    def _repr_png_(self) -> bytes:
        """Jupyter: the logit lens as a picture (compute/notebook.py)."""
        from compute.notebook import explanation_png

        return explanation_png(self)

    def _repr_html_(self) -> str:
        """Jupyter: the lens picture and a summary table, every model-given text escaped."""
        from compute.notebook import explanation_html

        return explanation_html(self)
