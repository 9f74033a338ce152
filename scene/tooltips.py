"""Hover texts of the scene: block name, real K3 and toy shapes, the cell under the cursor and its value
(from the trace: never a made-up number). Qt-free; `tr` is the translator (key, **fmt) -> str."""
from __future__ import annotations

import numpy as np

from scene import block_kinds, colouring
from scene.block_kinds import mixer_key
from scene.layout import Layout


def model_args(dims) -> dict:
    """Format arguments for scene texts that name the shown model's numbers ("{experts} experts"), from its
    ModelDims, so that a label never shows K3's expert count while DeepSeek-V3 is open. Large widths get thousands
    separators, as the shapes in the labels do."""
    kda = sum(1 for m in dims.mixers if m == "kda")
    return dict(model=dims.display_name, layers=dims.n_layers, kda_layers=kda, mla_layers=dims.n_layers - kda,
                experts=f"{dims.experts:,}", top_k=dims.topk, shared=dims.shared, hidden=f"{dims.hidden:,}",
                latent=f"{dims.latent:,}", vocab=f"{dims.vocab:,}", expert_width=f"{dims.expert_width:,}",
                shared_width=f"{dims.shared * dims.expert_width:,}", block_size=dims.block_size)


def tooltip_text(layout: Layout, block_id: str, cell: tuple[int, int] | None, trace, pass_index: int,
                 token: int, tr) -> str:
    b = layout.by_id[block_id]
    name = tr(b.label_key) if b.label_key else b.kind
    if b.part == "slab":
        d = layout.dims
        return tr("scene.layer_tip", layer=b.layer, mixer=tr(f"scene.mixer.{mixer_key(d.mixers[b.layer - 1], d.mla_gate)}"),
                  ffn=tr(f"scene.ffn.{d.ffns[b.layer - 1]}"))
    if b.part == "weight":
        name = f"{name} · W"
    head = tr("scene.tip.block", name=name, k3=b.k3_shape or "—", toy=" × ".join(str(v) for v in b.toy_shape) or "—",
              model=layout.dims.display_name)
    if cell is None:
        return head
    r, c = cell
    entry = block_kinds.entry(b.kind)
    if entry is not None and entry.per_token and trace is not None:
        e = r * b.grid[1] + c
        tens = trace.passes[pass_index].layers[layout.layer].tensors
        row = colouring.token_row(trace, pass_index, token)
        s = float(tens["moe.router"][row][e])
        idx = [int(i) for i in np.asarray(tens["moe.topk_idx"][row])]
        sel = (tr("scene.tip.expert_sel", w=f"{float(tens['moe.topk_weight'][row][idx.index(e)]):.4f}")
               if e in idx else tr("scene.tip.expert_off"))
        return tr("scene.tip.expert", e=e, s=f"{s:.4f}", sel=sel)
    vals = colouring.block_values(b, layout, trace, pass_index, token)
    value = tr("scene.tip.no_value") if vals is None or not np.isfinite(vals[r, c]) else f"{vals[r, c]:+.4f}"
    if b.rows_are_tokens and trace is not None and r < len(layout.row_positions):
        pos = layout.row_positions[r]
        piece = trace.tokens[pos][0] if pos < len(trace.tokens) else ""
        text = tr("scene.tip.cell_token", name=name, token=pos, piece=piece, col=c, value=value)
    else:
        text = tr("scene.tip.cell", name=name, row=r, col=c, value=value)
    return head + "\n" + text
