"""The one spelling of the toy's weight layout — names, shapes and the random draw order — used by the engine (its
seeded random model, the shapes a weights file must have, the trained file's nesting), by compute.training.train (its
init, reading a file back) and by compute.fused_nb's warm-up: a change here changes all of them. compute.weights
re-exports it (compute.weights.draw_layout, ...) next to the weights file format.

A weight is named by its place in the engine's per-layer dicts ("L12.kda.in", "L1.moe.w13") or globally
("embedding", "lm_head", "final_norm", "w_out"). No torch, no Qt: rnd / uni decide the array library.
"""
from __future__ import annotations

import math

GLOBAL_KEYS = ("embedding", "lm_head", "final_norm", "w_out")


def draw_layout(config, dims, n_vocab: int, rnd, uni) -> tuple:
    """(embedding, lm_head, final_norm, w_out, layers) of `config` at toy `dims` with `n_vocab` pieces, drawn
    with rnd(*shape, scale) and uni(n, lo, hi) in a fixed order (the engine's seeded random model: the same
    seed gives the same numbers). rnd / uni may return numpy arrays (the engine) or torch tensors
    (compute.training.train's init); `layers` is one dict per layer in the engine's form ({"norm_mixer", ..., "kda" |
    "mla": {...}, "mlp" | "moe": {...}}; a non-latent MoE's "down", "norm", "up" and a MoE without shared
    experts' "shared13", "shared2" are None)."""
    from compute.ops.xp import ops

    def cat(xs):
        return ops(xs[0]).cat(xs, 1)

    def log(x):
        return ops(x).log(x)

    c, d = config, dims

    def lin(n_in, n_out, gain=1.0):
        return rnd(n_in, n_out, scale=gain / math.sqrt(n_in))

    def normw(n):
        return 1.0 + rnd(n, scale=0.1)

    D = d.hidden
    E = c.n_routed_experts
    latent = c.moe_latent_size is not None
    L = d.latent if latent else D
    embedding = rnd(n_vocab, D)
    lm_head = lin(D, n_vocab, gain=2.0)
    final_norm = normw(D)
    w_out = rnd(D, scale=0.7)
    layers = []
    for li in range(c.num_hidden_layers):
        w: dict = {"norm_mixer": normw(D), "norm_ffn": normw(D),
                   "w_attn": rnd(D, scale=0.7), "w_mlp": rnd(D, scale=0.7)}
        if c.mixer_types[li] == "kda":
            H, K = d.kda_heads, d.kda_head_dim
            HK = H * K
            w["kda"] = {
                "in": cat([lin(D, 3 * HK), lin(D, K), lin(D, H, gain=1.5), lin(D, HK)]),
                "f_b": lin(K, HK),
                "conv": rnd(3 * HK, d.conv, scale=0.6),
                "A_log": log(uni(H, 0.7, 1.5)),
                "dt_bias": rnd(H, K, scale=0.5) - 2.5,  # mostly retentive channels (α ≈ 0.2 … 0.95)
                "o_norm": normw(K),
                "o": lin(HK, D, gain=0.8),
            }
        else:
            H = d.mla_heads
            gated = c.mla_output_gate is not None
            w["mla"] = {
                "in": cat([lin(D, d.q_lora), lin(D, d.kv_lora + d.rope)] + ([lin(D, H * d.v)] if gated else [])),
                "q_a_norm": normw(d.q_lora),
                "q_b": lin(d.q_lora, H * (d.nope + d.rope), gain=1.5),
                "kv_a_norm": normw(d.kv_lora),
                "kv_b": lin(d.kv_lora, H * (d.nope + d.v), gain=1.5),
                "o": lin(H * d.v, D, gain=0.8),
            }
        if c.ffn_types[li] == "dense":
            w["mlp"] = {"gate": lin(D, d.dense_width), "up": lin(D, d.dense_width),
                        "down": lin(d.dense_width, D, gain=0.5)}
        else:
            Fw = d.expert_width
            Fs = Fw * c.n_shared_experts
            w["moe"] = {
                "router": lin(D, E, gain=1.0),
                "bias": rnd(E, scale=0.02),
                "down": lin(D, L) if latent else None,
                "w13": rnd(E, L, 2 * Fw, scale=1.0 / math.sqrt(L)),
                "w2": rnd(E, Fw, L, scale=1.0 / math.sqrt(Fw)),
                "norm": normw(L) if latent else None,
                "up": lin(L, D, gain=0.8) if latent else None,
                "shared13": lin(D, 2 * Fs) if Fs else None,
                "shared2": lin(Fs, D, gain=0.5) if Fs else None,
            }
        layers.append(w)
    return embedding, lm_head, final_norm, w_out, layers


def layout_shapes(config, dims, n_vocab: int) -> dict[str, tuple[int, ...]]:
    """{name: shape} of every weight of `config` at toy `dims` with `n_vocab` pieces, named as flatten names
    them ("L3.mla.q_b", "embedding", ...): the shapes draw_layout draws, without drawing (None leaves absent)."""
    c, d = config, dims
    D, E, V = d.hidden, c.n_routed_experts, n_vocab
    latent = c.moe_latent_size is not None
    L = d.latent if latent else D
    out: dict[str, tuple[int, ...]] = {"embedding": (V, D), "lm_head": (D, V), "final_norm": (D,), "w_out": (D,)}
    for li in range(c.num_hidden_layers):
        p = f"L{li}."
        for k in ("norm_mixer", "norm_ffn", "w_attn", "w_mlp"):
            out[p + k] = (D,)
        if c.mixer_types[li] == "kda":
            H, K = d.kda_heads, d.kda_head_dim
            HK = H * K
            out.update({p + "kda.in": (D, 3 * HK + K + H + HK), p + "kda.f_b": (K, HK),
                        p + "kda.conv": (3 * HK, d.conv), p + "kda.A_log": (H,), p + "kda.dt_bias": (H, K),
                        p + "kda.o_norm": (K,), p + "kda.o": (HK, D)})
        else:
            H = d.mla_heads
            gate = H * d.v if c.mla_output_gate is not None else 0
            out.update({p + "mla.in": (D, d.q_lora + d.kv_lora + d.rope + gate), p + "mla.q_a_norm": (d.q_lora,),
                        p + "mla.q_b": (d.q_lora, H * (d.nope + d.rope)), p + "mla.kv_a_norm": (d.kv_lora,),
                        p + "mla.kv_b": (d.kv_lora, H * (d.nope + d.v)), p + "mla.o": (H * d.v, D)})
        if c.ffn_types[li] == "dense":
            out.update({p + "mlp.gate": (D, d.dense_width), p + "mlp.up": (D, d.dense_width),
                        p + "mlp.down": (d.dense_width, D)})
        else:
            Fw = d.expert_width
            Fs = Fw * c.n_shared_experts
            out.update({p + "moe.router": (D, E), p + "moe.bias": (E,), p + "moe.w13": (E, L, 2 * Fw),
                        p + "moe.w2": (E, Fw, L)})
            if latent:
                out.update({p + "moe.down": (D, L), p + "moe.norm": (L,), p + "moe.up": (L, D)})
            if Fs:
                out.update({p + "moe.shared13": (D, 2 * Fs), p + "moe.shared2": (Fs, D)})
    return out


def nest(flat: dict, n_layers: int) -> tuple[list[dict], dict]:
    """The inverse of flatten: {flat name: leaf} → (one weights dict per layer, {global name: leaf}), the MoE
    keys flatten skipped (None) put back as None."""
    layers: list[dict] = [{} for _ in range(n_layers)]
    glob = {}
    for n, t in flat.items():
        li, key = split_layer_name(n)
        if li is None:
            glob[n] = t
            continue
        w = layers[li]
        *outer, leaf = key.split(".")
        for k in outer:
            w = w.setdefault(k, {})
        w[leaf] = t
    for w in layers:
        if "moe" in w:
            for k in ("down", "norm", "up", "shared13", "shared2"):
                w["moe"].setdefault(k, None)
    return layers, glob


def split_layer_name(name: str) -> tuple[int | None, str]:
    """"L12.kda.in" → (12, "kda.in"); a global name → (None, name)."""
    if name.startswith("L") and "." in name:
        head, key = name.split(".", 1)
        if head[1:].isdigit():
            return int(head[1:]), key
    return None, name


__all__ = ["GLOBAL_KEYS", "draw_layout", "layout_shapes", "nest", "split_layer_name"]
