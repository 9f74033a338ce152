"""Qt-free read-outs of the engine's Trace for the expert docks (routing per token / layer, usage, cutoffs).

Everything here reads `compute.trace.Trace` tensors; nothing is invented. Positions: the prefill pass holds
rows for positions 0..P-1, decode pass i the single position P+i-1. The last sampled token is never fed
back, so it has no routing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Routing:
    """One token's routing in one MoE layer, straight from the trace."""

    pass_index: int
    row: int
    layer: int  # 0-based
    scores: np.ndarray  # [E] sigmoid scores s (unbiased)
    bias: np.ndarray  # [E] bias used for selection (trained bias + knob offsets)
    selected: np.ndarray  # [k] expert ids, in the trace's order
    weights: np.ndarray  # [k] mixing weights (from unbiased scores, renormalised)

    @property
    def biased(self) -> np.ndarray:
        return self.scores + self.bias

    @property
    def top_k(self) -> int:
        return int(self.selected.size)


def locate(trace, token: int, pass_index: int = 0) -> tuple[int, int] | None:
    """(pass, row) where absolute position `token` was processed, preferring `pass_index`; None if never."""
    if trace is None or not trace.passes:
        return None
    order = [pass_index] + [i for i in range(len(trace.passes)) if i != pass_index]
    for i in order:
        if 0 <= i < len(trace.passes):
            hits = np.nonzero(np.asarray(trace.passes[i].positions) == token)[0]
            if hits.size:
                return i, int(hits[0])
    return None


def is_moe(trace, layer: int) -> bool:
    return trace is not None and 0 <= layer < trace.n_layers and trace.passes[0].layers[layer].ffn == "moe"


def routing(trace, token: int, layer: int, pass_index: int = 0) -> Routing | None:
    """The routing of `token` in `layer`, or None (dense layer, or token never processed)."""
    if not is_moe(trace, layer):
        return None
    where = locate(trace, token, pass_index)
    if where is None:
        return None
    p, row = where
    t = trace.passes[p].layers[layer].tensors
    return Routing(p, row, layer,
                   scores=np.asarray(t["moe.router"][row], dtype=np.float64),
                   bias=np.asarray(t["moe.bias"], dtype=np.float64).reshape(-1),
                   selected=np.asarray(t["moe.topk_idx"][row], dtype=np.int64),
                   weights=np.asarray(t["moe.topk_weight"][row], dtype=np.float64))


def cutoff_without(biased: np.ndarray, expert: int, k: int) -> float | None:
    """The k-th best biased score among all experts except `expert`: it is selected iff its own biased score
    beats this number (ties aside). None when the router picks every expert (top-k ≥ the expert count, one
    expert included): there is nothing to beat."""
    others = np.delete(np.asarray(biased, dtype=np.float64), expert)
    if k > others.size:
        return None
    return float(np.partition(others, others.size - k)[others.size - k])


def model_args(config) -> dict:
    """Format arguments of the expert dock's texts from a ModelConfig (None: the default model, K3): routed
    experts n, top-k k, shared experts, layers, first and last MoE layer (1-based)."""
    if config is None:
        from compute.config import load_default

        config = load_default()
    moe = [i + 1 for i, f in enumerate(config.ffn_types) if f == "moe"]
    return dict(n=config.n_routed_experts, k=config.num_experts_per_tok, shared=config.n_shared_experts,
                layers=config.num_hidden_layers, first_moe=(moe or [1])[0], last_moe=(moe or [1])[-1],
                model=config.display_name, has_moe=bool(moe))


def shown_expert(state) -> int:
    """The routed expert the dock's pickers show: the app's selected one where the shown model has it, else that
    model's default (compute.model_defaults: K3's 17, another model's own; never K3's number on a smaller model)."""
    from compute.model_defaults import expert_for

    config = state.config
    if config is None:
        from compute.config import default_config

        config = default_config()
    return expert_for(config, state.expert)


def moe_layers(trace) -> list[int]:
    """0-based indices of the MoE layers (92 for K3: all but layer 1)."""
    if trace is None or not trace.passes:
        return []
    return [lt.index for lt in trace.passes[0].layers if lt.ffn == "moe"]


def processed_positions(trace) -> np.ndarray:
    """Absolute positions that went through the layers, in pass order [N]."""
    return np.concatenate([np.asarray(p.positions) for p in trace.passes]) if trace and trace.passes else \
        np.zeros(0, dtype=np.int64)


def usage(trace) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Every processed token's selection in every MoE layer.

    Returns (idx [N, L_moe, k] expert ids, w [N, L_moe, k] weights, moe layer list); rows follow
    `processed_positions(trace)`.
    """
    layers = moe_layers(trace)
    if not layers:
        return np.zeros((0, 0, 0), dtype=np.int64), np.zeros((0, 0, 0)), layers
    idx = np.stack([np.concatenate([np.asarray(p.layers[l].tensors["moe.topk_idx"]) for p in trace.passes])
                    for l in layers], axis=1)
    w = np.stack([np.concatenate([np.asarray(p.layers[l].tensors["moe.topk_weight"]) for p in trace.passes])
                  for l in layers], axis=1)
    return idx.astype(np.int64), w.astype(np.float64), layers


def expert_weight_map(idx: np.ndarray, w: np.ndarray, expert: int) -> np.ndarray:
    """[N, L_moe] mixing weight of `expert` for each token and MoE layer (0 where not selected)."""
    return np.where(idx == expert, w, 0.0).sum(axis=-1)


def overlap_map(idx: np.ndarray, ref_row: int) -> np.ndarray:
    """[N, L_moe] fraction of a token's k experts that the reference token also uses in the same layer."""
    ref = idx[ref_row]  # [L, k]
    hits = (idx[:, :, :, None] == ref[None, :, None, :]).any(axis=-1)  # [N, L, k]
    return hits.mean(axis=-1)


def usage_counts(idx: np.ndarray, n_experts: int) -> np.ndarray:
    """[E] how many (token, layer) slots chose each expert."""
    return np.bincount(idx.reshape(-1), minlength=n_experts)
