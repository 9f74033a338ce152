"""Cell values and colours of the exploded layer from a Trace (numpy only, no GL).

Rows are absolute token positions: the row of position p holds the values computed by the pass that
processed p (prefill for the prompt, decode pass i for position P+i-1). Rows computed in the current pass are
lit, rows of earlier passes are dimmed, rows not computed yet at this pass are dark (no number).
"""
from __future__ import annotations

import numpy as np

from scene import block_kinds, palette
from scene.layout import Block, Layout

EMPTY = np.array([0.19, 0.20, 0.24, 1.0], np.float32)  # a cell with no number (not computed yet)
DIM = 0.42  # brightness factor for rows computed by an earlier pass


def _rule(kind: str, field: str) -> str:
    """A field of the kind's block-kind table entry ("" for a kind the table does not know)."""
    e = block_kinds.entry(kind)
    return getattr(e, field) if e is not None else ""


def block_values(b: Block, layout: Layout, trace, pass_index: int, token: int) -> np.ndarray | None:
    """[rows, cols] float64 values of a grid block (NaN = no number), or None when there is none."""
    if trace is None or b.grid is None or b.part == "shared_experts":
        return None
    l0 = b.layer - 1
    rows, cols = b.grid
    out = np.full((rows, cols), np.nan)
    passes = trace.passes
    pass_index = min(max(pass_index, 0), len(passes) - 1)
    kind = b.kind
    entry = block_kinds.entry(kind)
    if b.part == "weight":
        w = trace.weights[l0].get(kind) if l0 < len(trace.weights) else None
        if w is None:
            return None
        w = np.asarray(w, float)
        out[: w.shape[0], : w.shape[1]] = w[:rows, :cols]
        return out
    tens = passes[pass_index].layers[l0].tensors
    if entry is not None and entry.per_token:
        prow = token_row(trace, pass_index, token)
        if entry.colour == "router_stretch":  # the token's router scores
            s = np.asarray(tens["moe.router"], float)[prow]
            out.ravel()[: s.size] = s
        else:
            idx = np.asarray(tens["moe.topk_idx"])[prow]
            wt = np.asarray(tens["moe.topk_weight"], float)[prow]
            vals = np.zeros(rows * cols)
            vals[idx] = wt
            out = vals.reshape(rows, cols)
        return out
    if entry is not None and entry.rows == "head_dk":
        st = np.asarray(tens["kda.state"], float)
        return st.reshape(-1, st.shape[-1])[:rows, :cols]
    pos_rows = {p: r for r, p in enumerate(layout.row_positions)}
    if entry is not None and entry.rows == "cache":
        # the cache so far at this pass: S rows = positions 0..last
        t = np.asarray(tens[kind], float)
        for s in range(t.shape[0]):
            if s in pos_rows:
                out[pos_rows[s], : t.shape[1]] = t[s, :cols]
        return out
    if entry is not None and entry.rows == "head_query":
        T = len(layout.row_positions)
        for pi in range(pass_index + 1):
            ps = passes[pi]
            t = np.asarray(ps.layers[l0].tensors[kind], float)  # [H, T_p, S_p]
            for h in range(t.shape[0]):
                for r, pos in enumerate(np.asarray(ps.positions)):
                    if int(pos) in pos_rows:
                        rr = h * T + pos_rows[int(pos)]
                        vals = t[h, r]
                        vals = np.where(np.isfinite(vals), vals, np.nan)
                        ncol = min(cols, len(vals))
                        # columns are absolute positions 0..S-1 -> drawn columns (the last MAX_ROWS)
                        for c in range(ncol):
                            if c in pos_rows:
                                out[rr, pos_rows[c]] = vals[c]
        return out
    # [T, F] tensors: fill each position's row from the pass that processed it (up to the current pass)
    for pi in range(pass_index + 1):
        ps = passes[pi]
        t = ps.layers[l0].tensors.get(kind)
        if t is None:
            continue
        t = np.asarray(t, float)
        if t.ndim == 1:
            t = t[:, None]
        t = t.reshape(t.shape[0], -1)
        for r, pos in enumerate(np.asarray(ps.positions)):
            if int(pos) in pos_rows:
                out[pos_rows[int(pos)], : min(cols, t.shape[1])] = t[r, :cols]
    return out


def token_row(trace, pass_index: int, token: int) -> int:
    """Row (within the pass) of the selected token, or the pass's last row if the token is not in it."""
    pos = np.asarray(trace.passes[pass_index].positions)
    hit = np.nonzero(pos == token)[0]
    return int(hit[0]) if hit.size else len(pos) - 1


def row_lighting(b: Block, layout: Layout, trace, pass_index: int) -> np.ndarray:
    """Per grid row brightness: 1 for rows of the current pass, DIM for earlier ones."""
    rows = b.grid[0]
    light = np.ones(rows)
    if trace is None or not b.rows_are_tokens or _rule(b.kind, "rows") == "cache":
        return light
    cur = set(int(p) for p in trace.passes[min(pass_index, len(trace.passes) - 1)].positions)
    for r, pos in enumerate(layout.row_positions[:rows]):
        if pos not in cur:
            light[r] = DIM
    return light


def block_colors(b: Block, layout: Layout, trace, pass_index: int, token: int) -> np.ndarray:
    """[n_boxes, 4] RGBA of the boxes of block b."""
    base = np.array(palette.role(b.role), np.float32)
    if b.grid is None:
        return base[None]
    rows, cols = b.grid
    if b.part == "shared_experts":
        return np.broadcast_to(base, (rows * cols, 4)).copy()
    vals = block_values(b, layout, trace, pass_index, token)
    if vals is None:  # no trace yet: the role colour, dimmed, so the structure is visible without numbers
        rgba = np.broadcast_to(base * np.array([0.55, 0.55, 0.55, 1.0], np.float32), (rows * cols, 4)).copy()
        return rgba
    colour = _rule(b.kind, "colour")
    if colour == "expert_weights":
        w = np.nan_to_num(vals).ravel()
        on = w > 0
        rgba = np.broadcast_to(np.array([0.25, 0.24, 0.21, 1.0], np.float32), (rows * cols, 4)).copy()
        if on.any():
            t = (0.45 + 0.55 * w[on] / w.max())[:, None]
            rgba[on, :3] = np.array(palette.role("expert")[:3]) * t + (1 - t) * 0.25
        return rgba
    if colour == "router_stretch":  # sigmoid scores: stretch the range so the highest scores stand out
        v = vals.ravel()
        f = np.isfinite(v)
        lo_v, hi_v = (np.nanmin(v), np.nanmax(v)) if f.any() else (0.0, 1.0)
        t = np.clip((np.nan_to_num(v) - lo_v) / max(hi_v - lo_v, 1e-12), 0, 1)[:, None] ** 3.0
        hi = np.array(palette.role("expert")[:3]) * 0.85
        lo = np.array([0.12, 0.12, 0.13])
        rgba = np.empty((rows * cols, 4), np.float32)
        rgba[:, :3] = lo + t * (hi - lo)
        rgba[:, 3] = 1.0
        rgba[~f] = EMPTY
        return rgba
    if colour == "unit_ramp":
        # values in [0, 1] (scores, probabilities, gates): one-sided ramp of the block's role colour
        v = np.clip(np.where(np.isfinite(vals), vals, -1.0), -1, 1).ravel()
        hi = np.array(palette.role(b.role)[:3])
        lo = np.array([0.10, 0.11, 0.14])
        t = np.clip(v, 0, 1)[:, None] ** 0.6
        rgba = np.empty((rows * cols, 4), np.float32)
        rgba[:, :3] = lo + t * (hi * 1.1 - lo)
        rgba[:, 3] = 1.0
        rgba[np.isnan(vals.ravel())] = EMPTY
    else:
        finite = np.isfinite(vals)
        clean = np.where(finite, vals, 0.0)
        scale = float(np.max(np.abs(clean))) if finite.any() else 1.0
        rgba = palette.diverging(clean, scale).reshape(-1, 4)
        rgba[~finite.ravel()] = EMPTY
    light = np.repeat(row_lighting(b, layout, trace, pass_index), cols)
    light[~np.isfinite(vals.ravel())] = 1.0  # an empty slot keeps its own grey
    rgba[:, :3] *= light[:, None].astype(np.float32)
    return np.clip(rgba, 0, 1)


def stack_colors(b: Block, layout: Layout, emphasis: set[int] | None = None) -> np.ndarray:
    """Colour of a stack block: role colour; the selected layer bright, the others a little dimmer."""
    c = np.array(palette.role(b.role), np.float32)
    if b.part == "backdrop":
        tint = np.array(palette.role(b.meta.get("mixer", "kda")), np.float32)
        c[:3] = np.array([0.085, 0.095, 0.12]) + tint[:3] * 0.035
        return c[None]
    if b.part in ("slab", "marker"):
        if b.layer == layout.layer + 1:
            c[:3] = np.minimum(c[:3] * 1.35 + 0.12, 1.0)
        elif emphasis is not None and b.layer not in emphasis:
            c[:3] *= 0.35
        else:
            c[:3] *= 0.78
    return c[None]
