"""The Trace: plain data (numpy arrays on the CPU) recording one toy inference of Kimi K3.

This module is the contract between the engine (`compute.engine.ToyK3.run`) and everything that draws
(`scene/`, the docks in `app/`). It holds no torch tensors and no Qt objects.

Structure
---------
Trace
    tokens        list[(piece, id)]: the prompt's tokens followed by the generated ones. IDs lie in the real
                  K3 vocab range [0, 163840) but come from a toy tokenizer (honestly labelled in the UI).
    prompt_len    number of prompt tokens P.
    text          the prompt string; `generated_text` the detokenised generated pieces joined.
    passes        list[PassTrace]: pass 0 is the prefill over positions 0..P-1; pass i >= 1 is one decode step
                  over the single position P+i-1 (the token sampled by pass i-1).
    knobs         the Knobs used (alpha, beta, temperature, top_p, expert_bias, sample_seed).
    weights       list (one per layer) of dict[block key -> np.ndarray W of shape [in, out]] (y = x @ W),
                  plus `weights_global` for 'embedding' [V_toy, D] and 'lm_head' [D, V_toy].
    vocab         list[(piece, id)] of the toy vocabulary (index = row of the LM head).
    config_name   name of the model config; `device` the torch device the engine ran on (e.g. "cpu").
    weights_name  "trained" (the shipped weights trained on compute.language.task) | "random" (seeded random weights).

PassTrace
    kind          "prefill" | "decode"
    positions     np.ndarray[int] of the absolute positions processed (rows of every [T, ...] tensor).
    embedding     [T, D] embedding rows of the pass's input tokens.
    layers        list[LayerTrace], one per layer (93 for K3), 0-based.
    final         dict: 'final.attnres' [T, N+1] softmax weights over the candidates (9 for K3),
                  'final.norm' [T, D], 'lm_head' [T, V_toy] logits,
                  'probs' [V_toy] after temperature/top-p at the last position,
                  'sampled' int (index into vocab) — the token this pass produced.

LayerTrace
    index         0-based layer index; mixer "kda" | "mla"; ffn "dense" | "moe".
    tensors       dict[block key -> np.ndarray]. Rows are the pass's tokens (T) unless stated.
                  The block keys ARE the scene's block kinds (scene/block_kinds.py), one namespace:

      common      'attnres.mixer' [T, N+1] softmax weights (absent / None for layer 0, no stored blocks yet)
                  'attnres.mixer.out' [T, D] the mixed input x, 'norm.mixer' [T, D] RMSNorm(x),
                  'mixer.out' [T, D] the mixer's output a,
                  'attnres.ffn' [T, N+1] weights, 'attnres.ffn.out' [T, D], 'norm.ffn' [T, D],
                  'ffn.out' [T, D], 'residual' [T, D] (p after the layer)
      kda         'kda.q_proj','kda.k_proj','kda.v_proj' [T, H*dk] (before conv)
                  'kda.q_conv','kda.k_conv','kda.v_conv' [T, H*dk] (SiLU(conv4(.)))
                  'kda.q_norm','kda.k_norm' [T, H*dk] (L2 per head)
                  'kda.f' [T, H*dk] gate pre-activation W_fb W_fa x, 'kda.alpha' [T, H*dk] = exp(g)
                  'kda.beta' [T, H]
                  'kda.state' [H, dk, dv] the state S after the pass (constant size)
                  'kda.o' [T, H*dv] raw KDA output, 'kda.gate' [T, H*dv] sigmoid(W_g x),
                  'kda.o_norm' [T, H*dv] RMSNorm(o) * w * gate, 'kda.o_proj' [T, D] (== 'mixer.out')
      mla         'mla.q_a' [T, q_lora], 'mla.q_a_norm' [T, q_lora], 'mla.q_b' [T, H*(nope+rope)]
                  'mla.kv_a' [T, kv_lora+rope], 'mla.c_kv' [S, kv_lora] THE LATENT CACHE so far (S = all
                  positions up to the pass's last one; grows one row per decoded token),
                  'mla.k_rope' [S, rope], 'mla.kv_b' [S, H*(nope+v)],
                  'mla.scores' [H, T, S] (masked entries -inf), 'mla.softmax' [H, T, S],
                  'mla.o' [T, H*v], 'mla.gate' [T, H*v], 'mla.o_gated' [T, H*v], 'mla.o_proj' [T, D]
      moe         'moe.router' [T, E] sigmoid scores s (E = 896), 'moe.router.logits' [T, E],
                  'moe.bias' [E] the bias used for selection (incl. knob offsets),
                  'moe.topk_idx' [T, k] int, 'moe.topk_weight' [T, k] (from unbiased scores, renormalised),
                  'moe.down' [T, L] latent z = W_down x, 'moe.experts' [T, k, L] each selected expert's
                  output E_j(z) (unweighted), 'moe.mix' [T, L] = sum_j w_j E_j(z), 'moe.norm' [T, L],
                  'moe.up' [T, D], 'moe.shared' [T, D]
      dense       'mlp.gate' [T, I], 'mlp.up' [T, I], 'mlp.act' [T, I], 'mlp.down' [T, D]

LINEAR_INPUTS maps each block key that is a plain matmul y = x @ W to the block key of its input x, so that
"follow one number" can write y_j = sum_i x_i W[i, j] (W = trace.weights[layer][key]).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# y = x @ W for these blocks; value = block key of x (per layer). Weights in Trace.weights[layer][key].
LINEAR_INPUTS: dict[str, str] = {
    "kda.q_proj": "norm.mixer",
    "kda.k_proj": "norm.mixer",
    "kda.v_proj": "norm.mixer",
    "kda.o_proj": "kda.o_norm",
    "mla.q_a": "norm.mixer",
    "mla.q_b": "mla.q_a_norm",
    "mla.kv_a": "norm.mixer",
    "mla.o_proj": "mla.o_gated",
    "moe.router.logits": "norm.ffn",
    "moe.down": "norm.ffn",
    "moe.up": "moe.norm",
    "mlp.gate": "norm.ffn",
    "mlp.up": "norm.ffn",
    "mlp.down": "mlp.act",
}


@dataclass
class Knobs:
    """User controls. alpha/beta None = computed from the input as in K3; a number overrides every KDA layer."""

    alpha: float | None = None
    beta: float | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    expert_bias: dict[int, float] = field(default_factory=dict)
    sample_seed: int = 0

    def __post_init__(self) -> None:
        self.check_values()

    def check_values(self) -> None:
        """ValueError (one line, naming the knob) unless every knob is a finite number of the right kind.
        Ranges (alpha in [0, 1], ...) are the engine's to check (compute.engine_io.check_knobs)."""
        for name in ("alpha", "beta"):
            if getattr(self, name) is not None:
                _finite(name, getattr(self, name))
        _finite("temperature", self.temperature)
        _finite("top_p", self.top_p)
        if isinstance(self.sample_seed, bool) or not isinstance(self.sample_seed, numbers.Integral):
            raise ValueError(f"sample_seed must be an integer, got {self.sample_seed!r}")
        if not isinstance(self.expert_bias, dict):
            raise ValueError(f"expert_bias must be a dict {{expert: bias}}, got {type(self.expert_bias).__name__}")
        for e, b in self.expert_bias.items():
            if isinstance(e, bool) or not isinstance(e, numbers.Integral):
                raise ValueError(f"expert_bias: expert {e!r} is not an integer expert number")
            _finite(f"expert_bias[{e}]", b)


def _finite(name: str, v: Any) -> None:
    """ValueError unless v is a finite real number (bool is not a number here)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"{name} must be a number, got {v!r}")
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v}")


@dataclass
class LayerTrace:
    index: int
    mixer: str  # "kda" | "mla"
    ffn: str  # "dense" | "moe"
    tensors: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"LayerTrace(index={self.index}, mixer={self.mixer!r}, ffn={self.ffn!r}, {len(self.tensors)} tensors)"


@dataclass
class PassTrace:
    kind: str  # "prefill" | "decode"
    positions: np.ndarray
    embedding: np.ndarray
    layers: list[LayerTrace] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"PassTrace(kind={self.kind!r}, positions={_span(self.positions)}, {len(self.layers)} layers, "
                f"final={sorted(self.final)})")


@dataclass
class Trace:
    tokens: list[tuple[str, int]]
    prompt_len: int
    text: str
    passes: list[PassTrace]
    knobs: Knobs
    weights: list[dict[str, np.ndarray]]
    weights_global: dict[str, np.ndarray]
    vocab: list[tuple[str, int]]
    config_name: str = "kimi-k3"
    device: str = "cpu"
    weights_name: str = "random"  # which weights produced the numbers: "trained" | "random" (compute.weights)
    # why trained weights were asked for but random ones ran: "" | "other_model" (the trained toy is K3's
    # only) | "missing" (no file installed) | "damaged" (the file was refused: the reason is in the log)
    weights_fallback: str = ""
    # whether the prompt's pieces lie inside the toy language (compute.language.task.in_language): outside it the toy's
    # answer is not meaningful. Computed once, when the trace is made (None: compute it from the prompt's tokens)
    prompt_in_language: bool | None = None

    def __post_init__(self) -> None:
        if self.prompt_in_language is None:
            from compute.language.task import in_language

            self.prompt_in_language = in_language([piece for piece, _ in self.tokens[: self.prompt_len]])

    @property
    def generated_text(self) -> str:
        return "".join(piece for piece, _ in self.tokens[self.prompt_len:])

    @property
    def n_layers(self) -> int:
        return len(self.passes[0].layers) if self.passes else 0

    def __repr__(self) -> str:
        """One line (the dataclass default printed every array: tens of millions of characters)."""
        return (f"Trace({self.config_name}, {self.weights_name} weights, {self.device}, prompt={_clip(self.text)!r}, "
                f"{self.prompt_len}+{len(self.tokens) - self.prompt_len} tokens, {len(self.passes)} passes, "
                f"generated={_clip(self.generated_text)!r})")

    def _repr_html_(self) -> str:
        """Jupyter: summary() as tables, every prompt and model text escaped (compute/notebook.py)."""
        from compute.notebook import trace_html

        return trace_html(self)

    def summary(self, top: int = 3, max_passes: int = 8, max_tokens: int = 24) -> str:
        """A few dozen lines a person reads: model, weights, prompt, tokens, generated text, knobs, layers and
        per pass its kind, positions, the sampled token and the `top` most probable candidates."""
        pieces = [piece for piece, _ in self.tokens]
        shown = "|".join(pieces[:max_tokens]) + (f"|… ({len(pieces) - max_tokens} more)" if len(pieces) > max_tokens else "")
        lines = [
            f"Trace of {self.config_name} ({self.weights_name} weights) on {self.device}",
            f"prompt: {_clip(self.text, 120)!r} ({self.prompt_len} tokens)",
            f"generated: {_clip(self.generated_text, 120)!r} ({len(self.tokens) - self.prompt_len} tokens)",
            f"tokens: {shown}",
            f"knobs: {self.knobs_line()}",
            f"layers: {self.layers_line()}",
            f"passes: {len(self.passes)}",
        ]
        if not self.prompt_in_language:
            lines.insert(2, "note: outside the toy language: the answer is not meaningful")
        for i, p in enumerate(self.passes[:max_passes]):
            lines.append(f"  {i:>2} {p.kind:<7} positions {_span(p.positions)}: {self._sampled(p, top)}")
        if len(self.passes) > max_passes:
            lines.append(f"  … {len(self.passes) - max_passes} more passes")
        return "\n".join(lines)

    def knobs_line(self) -> str:
        """The knobs in one line, as summary() shows them."""
        k = self.knobs
        return (f"alpha={_knob(k.alpha)} beta={_knob(k.beta)} temperature={k.temperature:g} top_p={k.top_p:g} "
                f"sample_seed={k.sample_seed} expert_bias={_bias(k.expert_bias)}")

    def layers_line(self) -> str:
        """The layer count and kinds in one line, as summary() shows them."""
        layers = self.passes[0].layers if self.passes else []
        return (f"{len(layers)} ({_counts([x.mixer for x in layers])}; "
                f"{_counts([x.ffn for x in layers])})")

    def pass_line(self, index: int, top: int = 3) -> tuple[str, str]:
        """(positions, sampled token and its `top` most probable candidates) of pass `index`, as summary()
        shows them."""
        p = self.passes[index]
        return _span(p.positions), self._sampled(p, top)

    def _sampled(self, p: PassTrace, top: int) -> str:
        probs = p.final.get("probs")
        sampled = p.final.get("sampled")
        if probs is None or sampled is None:
            return "no sample"
        probs = np.asarray(probs, dtype=np.float64).ravel()
        best = np.argsort(-probs, kind="stable")[:top]
        cands = ", ".join(f"{self._piece(int(j))!r} {probs[j]:.3f}" for j in best)
        return f"sampled {self._piece(int(sampled))!r} (p={probs[int(sampled)]:.3f}); top {cands}"

    def _piece(self, index: int) -> str:
        return self.vocab[index][0] if 0 <= index < len(self.vocab) else f"#{index}"


def _clip(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _span(positions) -> str:
    pos = np.asarray(positions).ravel()
    if pos.size == 0:
        return "none"
    return f"{int(pos[0])}" if pos.size == 1 else f"{int(pos[0])}..{int(pos[-1])}"


def _knob(value) -> str:
    return "computed" if value is None else f"{value:g}"


def _bias(bias: dict) -> str:
    if not bias:
        return "{}"
    items = sorted(bias.items())
    text = ", ".join(f"{e}: {b:+g}" for e, b in items[:6])
    return "{" + text + (f", … {len(items) - 6} more" if len(items) > 6 else "") + "}"


def _counts(kinds: list[str]) -> str:
    seen: dict[str, int] = {}
    for kind in kinds:
        seen[kind] = seen.get(kind, 0) + 1
    return " + ".join(f"{n} {kind}" for kind, n in seen.items())
