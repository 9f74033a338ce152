"""The layout's tables: the toy and the real (K3) shape of every tensor of a layer, the stations (rows of blocks)
of the mixer and FFN columns and the data flow inside a layer (scene/layout.py builds the blocks from them). The
per-kind facts (colour role, weight plate, matmul input, rows/columns, the real and toy size templates) are
scene/block_kinds.py's table; ROLE_OF, PLATE_KINDS, PLATE_IN and the two shape functions read it. Qt-free and GL-free."""
from __future__ import annotations

from compute.dims import ModelDims, ToyDims
from scene.block_kinds import (PLATE_IN, TABLE, real_size_args, role_of,  # noqa: F401  (importable from here)
                               toy_size_args)

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
    (ToyDims) with the model's real expert count and top-k (the engine computes those); the block-kind table's
    `toy` shapes."""
    T, S = rows, seq
    args = toy_size_args(TOY_DIMS, dims, rows, seq, stored_candidates(layer0, dims.block_size, "mixer"),
                         stored_candidates(layer0, dims.block_size, "ffn"))
    shapes = {k: tuple(args[n] for n in e.toy) for k, e in TABLE.items() if e.toy}
    if trace is not None and trace.passes and layer0 < len(trace.passes[0].layers):
        tens = trace.passes[0].layers[layer0].tensors
        for key, arr in tens.items():
            if arr is None or not hasattr(arr, "shape"):
                continue
            shp = tuple(arr.shape)
            axis = TABLE[key].rows if key in TABLE else ""
            if axis == "cache":  # the cache so far: one row per position
                shapes[key] = (S,) + shp[1:]
            elif axis == "head_query":  # [H, T, S]
                shapes[key] = (shp[0], T, S)
            elif axis == "head_dk":  # [H, d_k, d_v]
                shapes[key] = shp
            elif len(shp) >= 1 and key in shapes:
                shapes[key] = (T,) + shp[1:]
        if layer0 == 0:
            shapes["attnres.mixer"] = (T, 0)
    return shapes


def _k3_shapes(d: ModelDims, layer0: int) -> dict[str, str]:
    """The real size of every kind as the labels show it (the block-kind table's `real` templates)."""
    args = real_size_args(d, stored_candidates(layer0, d.block_size, "mixer"),
                          stored_candidates(layer0, d.block_size, "ffn"))
    return {k: e.real.format(**args) for k, e in TABLE.items() if e.real}


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
