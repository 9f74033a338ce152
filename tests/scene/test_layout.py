"""The declarative layout: 93 layers of the right types, the exploded layer's blocks, shapes (no GL)."""
import numpy as np
import pytest

from scene.geometry import build_families
from scene.layout import build_layout, stored_candidates

MLA_1BASED = set(range(4, 93, 4)) | {93}


def test_stack_has_93_layers_with_real_types(k3_config):
    lay = build_layout(k3_config, 36)
    slabs = sorted((b for b in lay.blocks if b.part == "slab"), key=lambda b: b.layer)
    assert [b.layer for b in slabs] == list(range(1, 94))
    mla = {b.layer for b in slabs if b.meta["mixer"] == "mla"}
    assert mla == MLA_1BASED and len(mla) == 24
    assert sum(b.meta["mixer"] == "kda" for b in slabs) == 69
    assert [b.layer for b in slabs if b.meta["ffn"] == "dense"] == [1]
    assert {b.role for b in slabs if b.layer in MLA_1BASED} == {"mla"}
    assert {b.role for b in slabs if b.layer not in MLA_1BASED} == {"kda"}
    # slabs go upwards in layer order, embedding below, LM head above
    z = [b.center[2] for b in slabs]
    assert all(a < b for a, b in zip(z, z[1:]))
    assert lay.by_id["embedding"].hi[2] < slabs[0].lo[2]
    assert lay.by_id["lm_head"].lo[2] > slabs[-1].hi[2]
    assert lay.by_id["final.norm"].lo[2] > lay.by_id["final.attnres"].lo[2]


def test_attnres_brackets_every_12_layers(k3_config):
    lay = build_layout(k3_config, 0)
    br = sorted((b for b in lay.blocks if b.part == "bracket"), key=lambda b: b.meta["index"])
    assert [(b.meta["first"], b.meta["last"]) for b in br] == [
        (1, 12), (13, 24), (25, 36), (37, 48), (49, 60), (61, 72), (73, 84), (85, 93)]


KDA_SUBOPS = {"kda.q_proj", "kda.k_proj", "kda.v_proj", "kda.q_conv", "kda.k_conv", "kda.v_conv", "kda.q_norm",
              "kda.k_norm", "kda.f", "kda.alpha", "kda.beta", "kda.state", "kda.o", "kda.gate", "kda.o_norm",
              "kda.o_proj"}
MLA_SUBOPS = {"mla.q_a", "mla.q_a_norm", "mla.q_b", "mla.kv_a", "mla.c_kv", "mla.k_rope", "mla.kv_b", "mla.scores",
              "mla.softmax", "mla.o", "mla.gate", "mla.o_gated", "mla.o_proj"}
MOE = {"moe.router", "moe.experts", "moe.shared", "moe.down", "moe.mix", "moe.norm", "moe.up"}
DENSE = {"mlp.gate", "mlp.up", "mlp.act", "mlp.down"}


@pytest.mark.parametrize("layer0, mixer, ffn", [(36, KDA_SUBOPS, MOE), (3, MLA_SUBOPS, MOE), (0, KDA_SUBOPS, DENSE),
                                                (92, MLA_SUBOPS, MOE)])
def test_exploded_layer_has_every_subop_of_its_type(k3_config, layer0, mixer, ffn):
    lay = build_layout(k3_config, layer0)
    kinds = {b.kind for b in lay.layer_blocks()}
    assert mixer <= kinds and ffn <= kinds
    other = (MLA_SUBOPS if mixer is KDA_SUBOPS else KDA_SUBOPS) | (DENSE if ffn is MOE else MOE)
    assert not (kinds & other)
    assert {"norm.mixer", "norm.ffn", "attnres.ffn", "attnres.ffn.out", "residual"} <= kinds
    assert ("attnres.mixer" in kinds) == (layer0 > 0)  # layer 1 has no stored block to mix yet
    # every block of the exploded layer is a cell grid
    assert all(b.grid is not None for b in lay.layer_blocks())


def test_moe_part_shows_896_experts_2_shared_and_real_shapes(k3_config):
    lay = build_layout(k3_config, 36)
    ex = lay.by_id["L37/moe.experts"]
    assert ex.grid[0] * ex.grid[1] == 896
    assert lay.by_id["L37/moe.shared/E"].grid == (2, 1)
    assert lay.by_id["L37/moe.down"].k3_shape == "7,168 → 3,584"
    assert lay.by_id["L37/moe.up"].k3_shape == "3,584 → 7,168"
    assert lay.by_id["L37/kda.state"].k3_shape == "96 × 128 × 128"
    assert lay.by_id["lm_head"].k3_shape == "7,168 → 163,840"
    assert build_layout(k3_config, 3).by_id["L4/mla.kv_a"].k3_shape == "7,168 → 576"


def test_grids_follow_the_trace_shapes(k3_config, trace_a):
    lay = build_layout(k3_config, 36, trace_a)
    n_tok = len(trace_a.tokens)
    t = trace_a.passes[0].layers[36].tensors
    assert lay.by_id["L37/kda.q_proj"].grid == (n_tok, t["kda.q_proj"].shape[1])
    assert lay.by_id["L37/kda.beta"].grid == (n_tok, t["kda.beta"].shape[1])
    H, dk, dv = t["kda.state"].shape
    assert lay.by_id["L37/kda.state"].grid == (H * dk, dv)
    w = trace_a.weights[36]["kda.q_proj"]
    assert lay.by_id["L37/kda.q_proj/W"].grid == w.shape  # weight plate: rows = inputs, cols = outputs


def test_attnres_candidate_counts_follow_the_block_rule():
    # the stored list grows at layers 0, 12, 24, ... (0-based): candidates = stored + the partial sum
    assert stored_candidates(0, 12, "mixer") == 0
    assert stored_candidates(0, 12, "ffn") == 2
    assert stored_candidates(11, 12, "mixer") == 2
    assert stored_candidates(12, 12, "mixer") == 2
    assert stored_candidates(12, 12, "ffn") == 3
    assert stored_candidates(92, 12, "ffn") == 9


def test_families_merge_geometry_into_few_meshes(k3_config):
    lay = build_layout(k3_config, 36)
    fams = build_families(lay)
    assert set(fams) <= {"stack", "cells", "experts"}
    n_cells = sum(b.grid[0] * b.grid[1] if b.grid else 1 for b in lay.blocks)
    assert sum(f.n_boxes for f in fams.values()) == n_cells
    for f in fams.values():
        assert f.verts.shape == (f.n_boxes * 24, 3) and f.faces.shape == (f.n_boxes * 12, 3)
        assert f.faces.max() < len(f.verts)
        # block ranges tile the family without gaps
        spans = sorted(f.ranges.values())
        assert spans[0][0] == 0 and all(a[0] + a[1] == b[0] for a, b in zip(spans, spans[1:]))


def _cfg(name):
    from compute.config import ModelConfig, available_configs

    return ModelConfig.from_json(available_configs()[name])


def test_other_models_get_their_own_structure():
    kl = build_layout(_cfg("kimi-linear-48b"), 3)
    slabs = [b for b in kl.blocks if b.part == "slab"]
    assert len(slabs) == 27
    assert {b.layer for b in slabs if b.meta["mixer"] == "mla"} == {4, 8, 12, 16, 20, 24, 27}
    assert not [b for b in kl.blocks if b.part == "bracket"]  # no AttnRes: plain residuals
    assert "final.attnres" not in kl.by_id
    kinds = {b.kind for b in kl.layer_blocks()}
    assert not any(k.startswith("attnres.") for k in kinds)
    assert "mla.q_a" not in kinds  # Kimi Linear's MLA has no query compression
    assert "moe.down" not in kinds  # no latent MoE
    ds = build_layout(_cfg("deepseek-v3"), 5)
    assert {b.meta["mixer"] for b in ds.blocks if b.part == "slab"} == {"mla"}
    assert [b.layer for b in ds.blocks if b.part == "slab" and b.meta["ffn"] == "dense"] == [1, 2, 3]
    ex = ds.by_id["L6/moe.experts"]
    assert ex.grid[0] * ex.grid[1] == 256
    assert ds.by_id["L6/moe.shared/E"].grid == (1, 1)


def test_a_trace_of_another_structure_is_not_drawn(trace_a):
    lay = build_layout(_cfg("deepseek-v3"), 5, trace_a)
    assert not lay.trace_ok
    assert build_layout(None, 5, trace_a).trace_ok


def test_follow_one_number_outlines_the_input_row_and_the_weight_column(k3_config, trace_a):
    from scene.highlights import follow_segments

    lay = build_layout(k3_config, 36, trace_a)
    row, col = 2, 5
    pts = follow_segments(lay, ("L37/kda.q_proj", row, col), None).reshape(3, 24, 3)
    out, inp, wcol = (p.reshape(-1, 3) for p in pts)
    y, x, w = lay.by_id["L37/kda.q_proj"], lay.by_id["L37/norm.mixer"], lay.by_id["L37/kda.q_proj/W"]
    pad = 0.03 + 1e-6
    # the output cell: column col, row row of the wall
    assert out[:, 0].min() == pytest.approx(y.lo[0] + col * y.pitch - 0.03)
    assert out[:, 2].max() == pytest.approx(y.hi[2] - row * y.pitch_r + 0.03)
    # the input row spans all input features of x, at the same token row
    assert inp[:, 0].min() >= x.lo[0] - pad and inp[:, 0].max() <= x.hi[0] + pad
    assert inp[:, 2].max() == pytest.approx(x.hi[2] - row * x.pitch_r + 0.03)
    # the weight column spans every input row of the plate and sits right under the output column
    assert wcol[:, 1].min() == pytest.approx(w.lo[1] - 0.03) and wcol[:, 1].max() == pytest.approx(w.hi[1] + 0.03)
    assert wcol[:, 0].min() == pytest.approx(out[:, 0].min())


def test_flow_lines_join_the_blocks_of_the_step(k3_config):
    from scene.highlights import flow_lines

    lay = build_layout(k3_config, 36)
    pts, heads = flow_lines(lay, lay.flow)
    assert len(pts) % 2 == 0 and len(heads) == len(lay.flow)
    for (a, b), h in zip(lay.flow, heads):  # each edge arrives at the bottom of its target
        B = lay.by_id[b]
        assert h[2] == pytest.approx(B.lo[2]) and B.lo[0] <= h[0] <= B.hi[0]
    assert flow_lines(lay, []) == (None, None)


def test_tooltip_texts_come_from_the_trace(k3_config, trace_a):
    from scene.tooltips import tooltip_text

    lay = build_layout(k3_config, 36, trace_a)

    def tr(key, **fmt):
        return key + "|" + "|".join(f"{k}={v}" for k, v in sorted(fmt.items()))

    t = tooltip_text(lay, "L37/residual", (1, 3), trace_a, 0, 0, tr)
    v = float(trace_a.passes[0].layers[36].tensors["residual"][1, 3])
    assert f"value={v:+.4f}" in t and "token=1" in t
    last = len(trace_a.tokens) - 1  # never processed: no number
    assert "scene.tip.no_value" in tooltip_text(lay, "L37/residual", (last, 0), trace_a, 0, 0, tr)
    assert tooltip_text(lay, "L4/stack.layer", None, trace_a, 0, 0, tr).startswith("scene.layer_tip|")
