"""The layout's tables: the toy and the real (K3) shape of every tensor of a layer, the stations (rows of blocks)
of the mixer and FFN columns and the data flow inside a layer (scene/layout.py builds the blocks from them). The
per-kind facts (colour role, weight plate, matmul input, rows/columns) are scene/block_kinds.py's table; ROLE_OF,
PLATE_KINDS and PLATE_IN are read from it. Qt-free and GL-free."""
from __future__ import annotations

from compute.dims import ModelDims, ToyDims
from scene.block_kinds import PLATE_IN, TABLE, role_of  # noqa: F401  (importable from here, as before)

TOY_DIMS = ToyDims()  # the engine's widths, used when no trace is present (a trace's tensor shapes win)


def fmt_int(n: int) -> str:
    return f"{int(n):,}"


def stored_candidates(layer0: int, block_size: int, where: str) -> int:
    """Number of AttnRes candidates (stored blocks + the current partial sum) at a mixing point.

    At the mixer point of layer l the stored list holds the entries appended at l' < l that are multiples of
    block_size; at the FFN point the entry of layer l itself (when l % block_size == 0) is there too.
    Returns 0 where there is no mix (layer 0's mixer point: nothing stored yet)."""
    if not block_size:
        return 0
    stored = len([m for m in range(0, layer0 + (1 if where == "ffn" else 0), block_size)])
    return stored + 1 if stored else 0


def _toy_shapes(trace, layer0: int, dims: ModelDims, rows: int, seq: int) -> dict[str, tuple]:
    """Toy shape per tensor key of the layer: from the trace when present, else the engine's toy widths
    (ToyDims) with the model's real expert count and top-k (the engine computes those)."""
    toy = TOY_DIMS
    H, dk, dv = toy.kda_heads, toy.kda_head_dim, toy.kda_head_dim
    mh, ql, kl, no, ro, vv = toy.mla_heads, toy.q_lora, toy.kv_lora, toy.nope, toy.rope, toy.v
    D, E, K, L = toy.hidden, dims.experts, dims.topk, toy.latent
    nm = stored_candidates(layer0, dims.block_size, "mixer")
    nf = stored_candidates(layer0, dims.block_size, "ffn")
    T, S = rows, seq
    shapes = {
        "attnres.mixer": (T, nm), "attnres.mixer.out": (T, D), "norm.mixer": (T, D), "mixer.out": (T, D),
        "attnres.ffn": (T, nf), "attnres.ffn.out": (T, D), "norm.ffn": (T, D), "ffn.out": (T, D),
        "residual": (T, D),
        "kda.q_proj": (T, H * dk), "kda.k_proj": (T, H * dk), "kda.v_proj": (T, H * dv),
        "kda.q_conv": (T, H * dk), "kda.k_conv": (T, H * dk), "kda.v_conv": (T, H * dv),
        "kda.q_norm": (T, H * dk), "kda.k_norm": (T, H * dk), "kda.f": (T, H * dk), "kda.alpha": (T, H * dk),
        "kda.beta": (T, H), "kda.state": (H, dk, dv), "kda.o": (T, H * dv), "kda.gate": (T, H * dv),
        "kda.o_norm": (T, H * dv), "kda.o_proj": (T, D),
        "mla.q_a": (T, ql), "mla.q_a_norm": (T, ql), "mla.q_b": (T, mh * (no + ro)), "mla.kv_a": (T, kl + ro),
        "mla.c_kv": (S, kl), "mla.k_rope": (S, ro), "mla.kv_b": (S, mh * (no + vv)),
        "mla.scores": (mh, T, S), "mla.softmax": (mh, T, S), "mla.o": (T, mh * vv), "mla.gate": (T, mh * vv),
        "mla.o_gated": (T, mh * vv), "mla.o_proj": (T, D),
        "moe.router": (T, E), "moe.down": (T, L), "moe.experts": (T, K, L), "moe.mix": (T, L),
        "moe.norm": (T, L), "moe.up": (T, D), "moe.shared": (T, D),
        "mlp.gate": (T, toy.dense_width), "mlp.up": (T, toy.dense_width),
        "mlp.act": (T, toy.dense_width), "mlp.down": (T, D),
    }
    if trace is not None and trace.passes and layer0 < len(trace.passes[0].layers):
        tens = trace.passes[0].layers[layer0].tensors
        for key, arr in tens.items():
            if arr is None or not hasattr(arr, "shape"):
                continue
            shp = tuple(arr.shape)
            rows = TABLE[key].rows if key in TABLE else ""
            if rows == "cache":  # the cache so far: one row per position
                shapes[key] = (S,) + shp[1:]
            elif rows == "head_query":  # [H, T, S]
                shapes[key] = (shp[0], T, S)
            elif rows == "head_dk":  # [H, d_k, d_v]
                shapes[key] = shp
            elif len(shp) >= 1 and key in shapes:
                shapes[key] = (T,) + shp[1:]
        if layer0 == 0:
            shapes["attnres.mixer"] = (T, 0)
    return shapes


def _k3_shapes(d: ModelDims, layer0: int) -> dict[str, str]:
    f = fmt_int
    D = d.hidden
    hk = d.kda_heads * d.kda_dim
    hq = d.mla_heads * (d.nope + d.rope)
    hv = d.mla_heads * d.v
    nm = stored_candidates(layer0, d.block_size, "mixer")
    nf = stored_candidates(layer0, d.block_size, "ffn")
    cand = "T × {n}"
    return {
        "attnres.mixer": cand.format(n=nm), "attnres.mixer.out": f"T × {f(D)}", "norm.mixer": f"T × {f(D)}",
        "mixer.out": f"T × {f(D)}", "attnres.ffn": cand.format(n=nf), "attnres.ffn.out": f"T × {f(D)}",
        "norm.ffn": f"T × {f(D)}", "ffn.out": f"T × {f(D)}", "residual": f"T × {f(D)}",
        "kda.q_proj": f"{f(D)} → {f(hk)}", "kda.k_proj": f"{f(D)} → {f(hk)}", "kda.v_proj": f"{f(D)} → {f(hk)}",
        "kda.q_conv": f"T × {f(hk)} · k={d.conv}", "kda.k_conv": f"T × {f(hk)} · k={d.conv}",
        "kda.v_conv": f"T × {f(hk)} · k={d.conv}",
        "kda.q_norm": f"{d.kda_heads} × {d.kda_dim}", "kda.k_norm": f"{d.kda_heads} × {d.kda_dim}",
        "kda.f": f"{f(D)} → {f(hk)}", "kda.alpha": f"T × {f(hk)}", "kda.beta": f"{f(D)} → {d.kda_heads}",
        "kda.state": f"{d.kda_heads} × {d.kda_dim} × {d.kda_dim}", "kda.o": f"T × {f(hk)}",
        "kda.gate": f"{f(D)} → {f(hk)}", "kda.o_norm": f"T × {f(hk)}", "kda.o_proj": f"{f(hk)} → {f(D)}",
        "mla.q_a": f"{f(D)} → {f(d.q_lora)}", "mla.q_a_norm": f"T × {f(d.q_lora)}",
        # no query compression (q_lora_rank null, Kimi Linear): W_q maps x itself to the heads' queries
        "mla.q_b": f"{f(d.q_lora) if d.q_lora else f(D)} → {f(hq)}", "mla.kv_a": f"{f(D)} → {f(d.kv_lora + d.rope)}",
        "mla.c_kv": f"S × {f(d.kv_lora)}", "mla.k_rope": f"S × {d.rope}",
        "mla.kv_b": f"{f(d.kv_lora)} → {f(d.mla_heads * (d.nope + d.v))}",
        "mla.scores": f"{d.mla_heads} × T × S", "mla.softmax": f"{d.mla_heads} × T × S", "mla.o": f"T × {f(hv)}",
        "mla.gate": f"{f(D)} → {f(hv)}", "mla.o_gated": f"T × {f(hv)}", "mla.o_proj": f"{f(hv)} → {f(D)}",
        "moe.router": f"{f(D)} → {f(d.experts)}", "moe.experts": f"{f(d.experts)} · top-{d.topk}",
        "moe.shared": f"{d.shared} × {f(d.expert_width)}", "moe.down": f"{f(D)} → {f(d.latent)}",
        "moe.mix": f"Σ {d.topk} · {f(d.latent)}", "moe.norm": f"T × {f(d.latent)}",
        "moe.up": f"{f(d.latent)} → {f(D)}",
        "mlp.gate": f"{f(D)} → {f(d.dense_width)}", "mlp.up": f"{f(D)} → {f(d.dense_width)}",
        "mlp.act": f"T × {f(d.dense_width)}", "mlp.down": f"{f(d.dense_width)} → {f(D)}",
        "embedding": f"{f(d.vocab)} × {f(D)}", "lm_head": f"{f(D)} → {f(d.vocab)}",
        "final.attnres": f"T × {(d.n_layers - 1) // d.block_size + 2 if d.block_size else 1}",
        "final.norm": f"T × {f(D)}", "sampling": f"{f(d.vocab)} → 1",
    }


# the colour role of each kind, its weight plate and its matmul input are block-kind facts: scene/block_kinds.py
ROLE_OF = {k: e.role for k, e in TABLE.items()}


# stations (bottom -> top) of each column; a station is a row of block kinds side by side
MIXER_STATIONS = {
    "kda": [["attnres.mixer", "attnres.mixer.out"], ["norm.mixer"],
            ["kda.q_proj", "kda.k_proj", "kda.v_proj", "kda.f", "kda.beta"],
            ["kda.q_conv", "kda.k_conv", "kda.v_conv", "kda.alpha"],
            ["kda.q_norm", "kda.k_norm", "kda.state"],
            ["kda.o", "kda.gate", "kda.o_norm"], ["kda.o_proj"]],
    "mla": [["attnres.mixer", "attnres.mixer.out"], ["norm.mixer"],
            ["mla.q_a", "mla.kv_a", "mla.gate"],
            ["mla.q_a_norm", "mla.c_kv", "mla.k_rope"],
            ["mla.q_b", "mla.kv_b"],
            ["mla.scores", "mla.softmax"],
            ["mla.o", "mla.o_gated"], ["mla.o_proj"]],
}
FFN_STATIONS = {
    "moe": [["attnres.ffn", "attnres.ffn.out"], ["norm.ffn"], ["moe.router", "moe.down"],
            ["moe.experts", "moe.shared"], ["moe.mix", "moe.norm"], ["moe.up", "ffn.out", "residual"]],
    "dense": [["attnres.ffn", "attnres.ffn.out"], ["norm.ffn"], ["mlp.gate", "mlp.up"], ["mlp.act"],
              ["mlp.down", "ffn.out", "residual"]],
}

# conceptual data flow inside a layer (source kind -> target kind); S7
FLOW = {
    "kda": [("attnres.mixer", "attnres.mixer.out"), ("attnres.mixer.out", "norm.mixer"),
            ("norm.mixer", "kda.q_proj"), ("norm.mixer", "kda.k_proj"), ("norm.mixer", "kda.v_proj"),
            ("norm.mixer", "kda.f"), ("norm.mixer", "kda.beta"),
            ("kda.q_proj", "kda.q_conv"), ("kda.k_proj", "kda.k_conv"), ("kda.v_proj", "kda.v_conv"),
            ("kda.f", "kda.alpha"), ("kda.q_conv", "kda.q_norm"), ("kda.k_conv", "kda.k_norm"),
            ("kda.k_norm", "kda.state"), ("kda.v_conv", "kda.state"), ("kda.alpha", "kda.state"),
            ("kda.beta", "kda.state"), ("kda.q_norm", "kda.o"), ("kda.state", "kda.o"),
            ("kda.o", "kda.o_norm"), ("kda.gate", "kda.o_norm"), ("kda.o_norm", "kda.o_proj")],
    "mla": [("attnres.mixer", "attnres.mixer.out"), ("attnres.mixer.out", "norm.mixer"),
            ("norm.mixer", "mla.q_a"), ("norm.mixer", "mla.kv_a"), ("norm.mixer", "mla.gate"),
            ("mla.q_a", "mla.q_a_norm"), ("mla.kv_a", "mla.c_kv"), ("mla.kv_a", "mla.k_rope"),
            ("mla.q_a_norm", "mla.q_b"), ("mla.c_kv", "mla.kv_b"), ("mla.q_b", "mla.scores"),
            ("mla.kv_b", "mla.scores"), ("mla.k_rope", "mla.scores"), ("mla.scores", "mla.softmax"),
            ("mla.softmax", "mla.o"), ("mla.kv_b", "mla.o"), ("mla.o", "mla.o_gated"),
            ("mla.gate", "mla.o_gated"), ("mla.o_gated", "mla.o_proj")],
    "moe": [("attnres.ffn", "attnres.ffn.out"), ("attnres.ffn.out", "norm.ffn"), ("norm.ffn", "moe.router"),
            ("norm.ffn", "moe.down"), ("norm.ffn", "moe.shared"), ("moe.router", "moe.experts"),
            ("moe.down", "moe.experts"), ("moe.experts", "moe.mix"), ("moe.mix", "moe.norm"),
            ("moe.norm", "moe.up"), ("moe.up", "ffn.out"), ("moe.shared", "ffn.out"), ("ffn.out", "residual")],
    "dense": [("attnres.ffn", "attnres.ffn.out"), ("attnres.ffn.out", "norm.ffn"), ("norm.ffn", "mlp.gate"),
              ("norm.ffn", "mlp.up"), ("mlp.gate", "mlp.act"), ("mlp.up", "mlp.act"), ("mlp.act", "mlp.down"),
              ("mlp.down", "ffn.out"), ("ffn.out", "residual")],
}

# kinds whose weight matrix is drawn as a plate (y = x @ W; W in Trace.weights[layer][kind]): the table's plate_in
PLATE_KINDS = tuple(PLATE_IN)
