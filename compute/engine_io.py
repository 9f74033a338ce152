"""The toy engine's run boundary: the checks of what comes in (prompt text, knobs) and the conversions of what goes
out (forward's pass data → a numpy PassTrace; the caches after a trace's last pass, rebuilt from the trace; the
linear weights a trace carries). compute.engine.ToyK3 calls these; compute.explain converts its knock-out passes
with pass_to_numpy."""
from __future__ import annotations

import numpy as np

from compute.ops.parts import _np, to_numpy
from compute.trace import Knobs, LayerTrace, PassTrace, Trace


def check_prompt_text(prompt: str) -> None:
    """ValueError naming the 1-based character when the prompt holds a lone surrogate (no UTF-8 bytes exist
    for it: a byte that was not UTF-8 on a command line, or half of a broken pair)."""
    for i, ch in enumerate(prompt):
        if "\ud800" <= ch <= "\udfff":
            raise ValueError(f"the prompt is not valid text: character {i + 1} is a lone surrogate "
                             f"U+{ord(ch):04X}, which has no UTF-8 encoding")


def check_knobs(k: Knobs) -> None:
    """ValueError unless every knob is finite (Knobs.check_values: fields may have been set after
    construction) and in range. A positive temperature under 1e-6 would overflow logits / T."""
    k.check_values()
    if k.alpha is not None and not 0.0 <= k.alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {k.alpha}")
    if k.beta is not None and not 0.0 <= k.beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {k.beta}")
    if k.temperature != 0 and not 1e-6 <= k.temperature <= 1000.0:
        raise ValueError(f"temperature must be 0 (greedy) or in [1e-06, 1000], got {k.temperature}")
    if not 0.0 < k.top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {k.top_p}")
    for e, b in k.expert_bias.items():
        if not -1e6 <= b <= 1e6:
            raise ValueError(f"expert_bias: bias {b} of expert {e} outside [-1e6, 1e6]")


def pass_to_numpy(data: dict, config, kind: str) -> PassTrace:
    """The PassTrace of forward's data (torch tensors / Parts converted; numpy-backend dicts taken as they are)."""
    layers = []
    is_np = isinstance(data["embedding"], np.ndarray)
    for li, t in enumerate(data["layers"]):
        if is_np:
            tensors = t
        else:
            cache: dict = {}
            tensors = {k: to_numpy(v, cache) for k, v in t.items()}
        b = tensors.get("moe.bias")
        if b is not None and b.flags.writeable:
            tensors["moe.bias"] = b = b.view()  # may be the engine's bias: a read-only view
            b.setflags(write=False)
        layers.append(LayerTrace(index=li, mixer=config.mixer_types[li], ffn=config.ffn_types[li], tensors=tensors))
    cache = {}
    final = {k: to_numpy(v, cache) for k, v in data["final"].items()}
    return PassTrace(kind=kind, positions=_np(data["positions"]), embedding=_np(data["embedding"]),
                     layers=layers, final=final)


def caches_from_trace(trace: Trace, dims, as_input) -> list:
    """The per-layer caches after the trace's last pass, rebuilt from its stored tensors: KDA's short-conv tail
    (the last conv-1 rows of q/k/v projections, zero-padded) and state, MLA's c_kv and k_rope. as_input(a): a
    trace array as a layer input of the engine's backend, device and dtype (a copy)."""
    caches = []
    last = trace.passes[-1]
    kc = dims.conv - 1
    for li, lt in enumerate(last.layers):
        if lt.mixer == "kda":
            rows = np.concatenate([np.concatenate([p.layers[li].tensors[k] for k in
                                                   ("kda.q_proj", "kda.k_proj", "kda.v_proj")], 1)
                                   for p in trace.passes], 0)
            if rows.shape[0] < kc:
                rows = np.concatenate([np.zeros((kc - rows.shape[0], rows.shape[1]), rows.dtype), rows], 0)
            caches.append({"conv": as_input(rows[-kc:]), "state": as_input(lt.tensors["kda.state"])})
        else:
            caches.append({"c_kv": as_input(lt.tensors["mla.c_kv"]), "k_rope": as_input(lt.tensors["mla.k_rope"])})
    return caches


def linear_weights_numpy(layers: list[dict], embedding, lm_head, dims
                         ) -> tuple[list[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """What a Trace carries as its weights: per layer, block key → W [in, out] (numpy, the engine's dtype) of
    every LINEAR_INPUTS block, and the embedding and LM head."""
    d = dims
    out = []
    for w in layers:
        n = {}
        if "kda" in w:
            HK = d.kda_heads * d.kda_head_dim
            win = _np(w["kda"]["in"])
            n.update({"kda.q_proj": win[:, :HK], "kda.k_proj": win[:, HK:2 * HK],
                      "kda.v_proj": win[:, 2 * HK:3 * HK], "kda.o_proj": _np(w["kda"]["o"])})
        else:
            win = _np(w["mla"]["in"])
            n.update({"mla.q_a": win[:, :d.q_lora], "mla.kv_a": win[:, d.q_lora:d.q_lora + d.kv_lora + d.rope],
                      "mla.q_b": _np(w["mla"]["q_b"]), "mla.o_proj": _np(w["mla"]["o"])})
        if "mlp" in w:
            n.update({"mlp.gate": _np(w["mlp"]["gate"]), "mlp.up": _np(w["mlp"]["up"]),
                      "mlp.down": _np(w["mlp"]["down"])})
        else:
            n["moe.router.logits"] = _np(w["moe"]["router"])
            if w["moe"]["down"] is not None:
                n["moe.down"] = _np(w["moe"]["down"])
                n["moe.up"] = _np(w["moe"]["up"])
        out.append(n)
    return out, {"embedding": _np(embedding), "lm_head": _np(lm_head)}


__all__ = ["check_prompt_text", "check_knobs", "pass_to_numpy", "caches_from_trace", "linear_weights_numpy"]
