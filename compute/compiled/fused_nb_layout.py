"""The one column layout of compute.fused_nb's pass buffers, and the typed records its kernel takes.

Every buffer the compiled pass writes is a [.., T, n] block whose n columns are the segments of one table below,
in order: (name, width). A dotted name is the trace key of those columns (compute.trace); an undotted one is a
kernel's intermediate that no trace shows. From each table come both sides:

- the kernel's offsets: `starts(table, size)` (size: the widths the table names, for one model) is the int64 array of segment starts (a record field), and the
  module-level `*_AT` namedtuples name each segment's index in it — compile-time constants in the kernels
  (compute.compiled._fused_nb_kernels reads `c[KB_AT.kda_q_norm]`);
- the trace's views: `views(table, size)` the (key, start, end) of every dotted segment.

The records (namedtuples: numba compiles them as typed structs, and its disk cache keys on them) group the
kernel's arguments: the pass-wide weights, one record per block kind's stacked weights, the per-pass inputs
(knobs, caches, router bias) and the pass buffers. No numba here: compute.compiled.fused_nb_views cuts traces with it.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

# CB [NL, T, .]: per layer, the residual stream around its two blocks and the AttnRes weights of both mixes
CB = (("attnres.mixer.out", "D"), ("norm.mixer", "D"), ("attnres.ffn.out", "D"), ("norm.ffn", "D"),
      ("residual", "D"), ("attnres.mixer", "C"), ("attnres.ffn", "C"))
# KB [nK, T, .]: KDA. The projection z = x W (q | k | v | f = W_fb W_fa x | its e^A/2-scaled copy | b | g), then
# the short convolution, the L2-normalised q and k, the decay α, β, the output gate, o, the gated o_norm, o_proj
KB = (("kda.q_proj", "HK"), ("kda.k_proj", "HK"), ("kda.v_proj", "HK"), ("kda.f", "HK"), ("decay_in", "HK"),
      ("beta_in", "H"), ("gate_in", "HVk"), ("kda.q_conv", "HK"), ("kda.k_conv", "HK"), ("kda.v_conv", "HK"),
      ("kda.q_norm", "HK"), ("kda.k_norm", "HK"), ("kda.alpha", "HK"), ("kda.beta", "H"), ("kda.gate", "HVk"),
      ("kda.o", "HVk"), ("kda.o_norm", "HVk"), ("kda.o_proj", "D"))
# MB [nM, T, .]: gated NoPE MLA. z = x W (q_a | kv_a = c_kv | k_rope | the gate's input), the normed q latent,
# q = W_qb q_a_norm, the attention output, its gate, the gated output and o_proj
MB = (("mla.q_a", "ql"), ("mla.kv_a", "kvr"), ("gate_in", "HVm"), ("mla.q_a_norm", "ql"), ("mla.q_b", "Hq"),
      ("mla.o", "HVm"), ("mla.gate", "HVm"), ("mla.o_gated", "HVm"), ("mla.o_proj", "D"))
# SB [nM, S, .]: MLA's rows over every position so far (the cache's rows first)
SB = (("mla.c_kv", "kl"), ("mla.k_rope", "r"), ("mla.kv_b", "Hkv"))
# EB [nE, T, .]: latent MoE. z = x W (router logits | W_down | the shared experts' W1|W3 inputs), the router's
# sigmoid scores, the k routing weights, the k selected experts' latent outputs, their mix, its norm, W_up, the
# shared experts, and their sum
EB = (("moe.router.logits", "E"), ("moe.down", "L"), ("shared_in", "Fs3"), ("moe.router", "E"),
      ("moe.topk_weight", "k"), ("moe.experts", "kL"), ("moe.mix", "L"), ("moe.norm", "L"), ("moe.up", "D"),
      ("moe.shared", "D"), ("ffn.out", "D"))
# DB [nD, T, .]: dense SiTU-GLU MLP
DB = (("mlp.gate", "I"), ("mlp.up", "I"), ("mlp.act", "I"), ("mlp.down", "D"))
# FB [T, .]: the final AttnRes mix, its weights, the final RMSNorm and the logits
FB = (("final_mix", "D"), ("final.attnres", "C"), ("final.norm", "D"), ("lm_head", "vocab"))

TABLES = {"CB": CB, "KB": KB, "MB": MB, "SB": SB, "EB": EB, "DB": DB, "FB": FB}


def _field(name: str) -> str:
    return name.replace(".", "_")


def _at(name: str) -> tuple:
    """A namedtuple naming the index of each segment of table `name` in its starts array."""
    table = TABLES[name]
    return namedtuple(f"{name}At", [_field(n) for n, _ in table])(*range(len(table)))


CB_AT, KB_AT, MB_AT, SB_AT, EB_AT, DB_AT, FB_AT = (_at(n) for n in ("CB", "KB", "MB", "SB", "EB", "DB", "FB"))


def starts(table, size: dict) -> np.ndarray:
    """int64 [len(table) + 1]: the first column of every segment, then the buffer's width."""
    return np.cumsum([0] + [size[w] for _, w in table]).astype(np.int64)


def width(table, size: dict) -> int:
    return int(starts(table, size)[-1])


def views(table, size: dict) -> list[tuple[str, int, int]]:
    """(trace key, first column, end column) of every dotted segment, in column order."""
    s = starts(table, size)
    return [(n, int(s[i]), int(s[i + 1])) for i, (n, _) in enumerate(table) if "." in n]


def span(table, size: dict, name: str) -> tuple[int, int]:
    """(first column, end column) of one segment."""
    s = starts(table, size)
    i = [n for n, _ in table].index(name)
    return int(s[i]), int(s[i + 1])


# ---------------------------------------------------------------- the kernel's records
# pass-wide: layer order (mkind 0 KDA / 1 MLA, fkind 0 dense / 1 MoE, the layer's slot in its kind's stacks), the
# √D-scaled norms and AttnRes queries, the final query / norm / LM head, the AttnRes block size and epsilons
PassWeights = namedtuple("PassWeights", "mkind mslot fkind fslot norm_mix norm_ffn w_attn w_mlp w_out final_norm "
                                        "lm_head block Deps nDeps shift fast cb fb")
# KDA, stacked over its layers: W [nK, D, nz], gbias, conv [nK, 3HK, Kc], gscale, o_norm, o [nK, HV, D]; scalars
KDAWeights = namedtuple("KDAWeights", "W gbias conv gscale o_norm o Veps scale H Kd cols")
# MLA: W, q_a_norm, q_b, kv_a_norm, kv_b, o; the norms' n·eps, the score scale, heads and widths
MLAWeights = namedtuple("MLAWeights", "W q_a_norm c_q q_b kv_a_norm c_kv kv_b o scale H ql kl r nope dv cols sb")
# MoE: W [nE, D, nz], experts [nE, E, row], norm, up, shared2; sizes, routed scaling, the latent norm's L·eps
MoEWeights = namedtuple("MoEWeights", "W experts norm up shared2 E L F Fs top_k rsf Leps cols")
# dense SiTU-GLU: gate, up, down; β1, β2
DenseWeights = namedtuple("DenseWeights", "gate up down b1 b2 cols")
# per pass: the knobs (α, β overrides: has_alpha / has_beta say whether they apply), the router bias in use, the
# caches (KDA conv tails and states, MLA's c_kv and k_rope rows; has_state: a cache is given)
PassInputs = namedtuple("PassInputs", "emb has_alpha alpha has_beta beta ebias tail0 S0 has_state ckv0 kr0")
# what the pass writes (every trace tensor lives in these)
PassOutputs = namedtuple("PassOutputs", "CB Vb Den KB KS Ktail MB MSB MSC EB Eidx DB FB")
