"""Qt-free maths of the usage-by-token-type tab: which experts each kind of word uses over the held-out set.

The engine runs every held-out document of the toy language (compute.language.task: the documents whose (subject,
object) pairs training never saw), one prefill each; every token's top-k experts in every MoE layer are
counted under the token's type (compute.language.task.piece_type: subject, object, particle, verb, …):

    counts[type, moe layer, expert] = how many tokens of that type chose that expert in that layer

so for each MoE layer the counts sum to (tokens × top-k). A prompt that is the start of another one adds no
new token (the model is causal: a token's routing depends only on the tokens before it), so only the longest
held-out prompts run.

`specialisation_bits(counts[:, layer])` is the mutual information between a routing slot's token type and its
expert (bits): 0 when every type spreads over the experts alike, up to log2(#types) when each type has
experts of its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compute.language.task import PIECE_TYPES, held_out_prompts, piece_type


def usage_prompts(seed: int = 0) -> list[str]:
    """The held-out prompts that are not the start of another held-out prompt (in the task's order)."""
    prompts = held_out_prompts(seed)
    ordered = sorted(prompts)
    covered = {p for p, q in zip(ordered, ordered[1:]) if q.startswith(p)}
    return [p for p in prompts if p not in covered]


@dataclass
class UsageMap:
    """Counts of routed slots per (token type, MoE layer, expert) over the prompts run so far."""

    moe_layers: list[int]  # 0-based model layer of each MoE layer (axis 1 of counts)
    n_experts: int
    top_k: int
    weights_name: str = ""  # the weights that produced the traces ("trained" | "random")
    counts: np.ndarray = field(default=None)  # [len(PIECE_TYPES), len(moe_layers), n_experts] int64
    tokens: np.ndarray = field(default=None)  # [len(PIECE_TYPES)] tokens of each type counted
    prompts: int = 0  # prompts (documents) run

    def __post_init__(self):
        if self.counts is None:
            self.counts = np.zeros((len(PIECE_TYPES), len(self.moe_layers), self.n_experts), dtype=np.int64)
        if self.tokens is None:
            self.tokens = np.zeros(len(PIECE_TYPES), dtype=np.int64)

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.sum())

    def add(self, trace) -> None:
        """Count the prefill's routing of every prompt token of a trace."""
        types = np.array([PIECE_TYPES.index(piece_type(piece)) for piece, _ in trace.tokens[:trace.prompt_len]])
        layers = trace.passes[0].layers
        for i, li in enumerate(self.moe_layers):
            idx = np.asarray(layers[li].tensors["moe.topk_idx"], dtype=np.int64)  # [T, k]
            rows = np.repeat(types, idx.shape[1])
            np.add.at(self.counts[:, i, :], (rows, idx.reshape(-1)), 1)
        np.add.at(self.tokens, types, 1)
        if not self.weights_name:
            self.weights_name = getattr(trace, "weights_name", "")
        self.prompts += 1

    def layer_counts(self, moe_index: int) -> np.ndarray:
        """[types, experts] counts of one MoE layer (index into moe_layers)."""
        return self.counts[:, moe_index, :]

    def shares(self, moe_index: int) -> np.ndarray:
        """[types, experts]: the share of each type's tokens that chose the expert (0 for a type not seen)."""
        per = np.maximum(self.tokens, 1)[:, None].astype(np.float64)
        return self.layer_counts(moe_index) / per

    def seen_types(self) -> list[int]:
        """Indices into PIECE_TYPES of the types with at least one token."""
        return [i for i in range(len(PIECE_TYPES)) if self.tokens[i] > 0]


def moe_layers_of(config) -> list[int]:
    return [i for i, f in enumerate(config.ffn_types) if f == "moe"]


def specialisation_bits(counts: np.ndarray) -> float:
    """Mutual information I(type; expert) in bits of a [types, experts] count table."""
    c = np.asarray(counts, dtype=np.float64)
    total = c.sum()
    if total <= 0:
        return 0.0
    p = c / total
    pt = p.sum(axis=1, keepdims=True)
    pe = p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float(np.sum(p[nz] * np.log2(p[nz] / (pt @ pe)[nz])))


def top_experts(counts: np.ndarray, n: int = 3) -> list[list[int]]:
    """Per row (type), the `n` most used experts, most used first (ties by the lower id)."""
    return [list(np.argsort(-row, kind="stable")[:n]) for row in np.asarray(counts)]


def compute_usage(engine, prompts: list[str], progress=None, cancelled=None, lock=None) -> UsageMap:
    """Run `engine` (a ToyK3) over the prompts, one prefill each, and count the routing. progress(done, total)
    is called after each prompt; cancelled() returning True stops early (the map then holds what ran). `lock`:
    held around each prompt's run (a shared engine is not re-entrant; see app.engine.explain_service's thread rule)."""
    cfg = engine.config
    out = UsageMap(moe_layers_of(cfg), int(cfg.n_routed_experts), int(cfg.num_experts_per_tok),
                   weights_name=engine.weights_name)
    for i, prompt in enumerate(prompts):
        if cancelled is not None and cancelled():
            break
        if lock is None:
            trace = engine.run(prompt, max_new_tokens=1)
        else:
            with lock:
                trace = engine.run(prompt, max_new_tokens=1)
        out.add(trace)
        if progress is not None:
            progress(i + 1, len(prompts))
    return out


__all__ = ["UsageMap", "usage_prompts", "compute_usage", "specialisation_bits", "top_experts", "moe_layers_of"]
