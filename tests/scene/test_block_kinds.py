"""The block-kind table (scene/block_kinds.py): every block a real trace or the scene's layout can
have has an entry, and each entry's rows/columns say what the axes of that tensor really are."""
import numpy as np
import pytest

from compute.config import ModelConfig, available_configs
from compute.engine import ToyK3
from scene import block_kinds
from scene.block_kinds import AXES, COLOUR_RULES, TABLE
from scene.layout import build_layout
from tests.app.test_player import odd_user_config as _odd_user, raw_config as _raw  # the same user config

CASES = [pytest.param(_raw(s), id=s) for s in sorted(available_configs())] + [pytest.param(_odd_user(), id="odd")]


@pytest.fixture(scope="module")
def runs():
    out = {}
    for p in CASES:
        raw = p.values[0]
        cfg = ModelConfig.from_dict(raw)
        out[raw["name"]] = (cfg, ToyK3(cfg, device="cpu", weights="random").run("ab", max_new_tokens=1))
    return out


def test_entries_are_well_formed():
    for kind, e in TABLE.items():
        assert e.kind == kind and e.rows in AXES and e.cols in AXES and e.colour in COLOUR_RULES, e
        assert e.station in ("global", "mixer", "ffn") and e.family
        assert all(i in TABLE for i in e.inputs), (kind, [i for i in e.inputs if i not in TABLE])
    assert set(block_kinds.ALL_KINDS) <= set(TABLE)


@pytest.mark.parametrize("raw", CASES)
def test_every_trace_and_layout_block_has_an_entry(raw, runs):
    cfg, trace = runs[raw["name"]]
    missing = set()
    for ps in trace.passes:
        missing |= {k for k in ps.final if k not in TABLE and k not in ("probs", "sampled")}
        for lt in ps.layers:
            missing |= {k for k in lt.tensors if k not in TABLE}
    for layer0 in range(cfg.num_hidden_layers if hasattr(cfg, "num_hidden_layers") else len(trace.passes[0].layers)):
        lay = build_layout(cfg, layer0=layer0, trace=trace)
        missing |= {b.kind for b in lay.blocks if b.kind not in TABLE}
    assert not missing, sorted(missing)


def _axis_sizes(axis: str, ps, trace, dims, lt):
    """Possible sizes of an axis named in the table, from the trace's own dims and pass."""
    T = len(ps.positions)
    S = int(max(ps.positions)) + 1
    return {
        "tokens": {T}, "cache": {S}, "heads": {dims.kda_heads, dims.mla_heads},
        "head_query": {dims.mla_heads * T}, "head_dk": {dims.kda_heads * dims.kda_head_dim},
        "d_v": {dims.kda_head_dim}, "vocab": {len(ps.final["probs"])}, "one": {1},
    }.get(axis)


@pytest.mark.parametrize("raw", CASES)
def test_rows_and_columns_match_the_tensor(raw, runs):
    """MLA scores rows = heads × query tokens and columns = cache positions; KDA state rows = head × d_k; ..."""
    cfg, trace = runs[raw["name"]]
    model = ToyK3(cfg, device="cpu", weights="random")
    dims = model.dims
    checked = set()
    for ps in trace.passes:
        arrays = [(k, v, None) for k, v in ps.final.items() if k in TABLE]
        arrays += [("sampling", ps.final["probs"], None)]
        for lt in ps.layers:
            arrays += [(k, v, lt) for k, v in lt.tensors.items()]
        for kind, v, lt in arrays:
            a = np.asarray(v)
            if a.ndim == 0 or a.size == 0:
                continue
            flat = a[None] if a.ndim == 1 else a.reshape(-1, a.shape[-1])  # as the inspector shows it
            e = TABLE[kind]
            for axis, n in ((e.rows, flat.shape[0]), (e.cols, flat.shape[1])):
                want = _axis_sizes(axis, ps, trace, dims, lt)
                if want is not None:
                    assert n in want, (kind, axis, a.shape, want)
                    checked.add(kind)
            if e.rows == "token_expert":
                assert a.shape[:1] == (len(ps.positions),) and a.ndim == 3
    assert {"mla.scores", "mla.softmax", "mla.c_kv", "lm_head", "sampling"} <= checked, checked
    if any("kda.state" in lt.tensors for lt in trace.passes[0].layers):
        assert "kda.state" in checked

def test_state_and_scores_axes_by_hand():
    assert (TABLE["kda.state"].rows, TABLE["kda.state"].cols) == ("head_dk", "d_v")
    assert (TABLE["mla.scores"].rows, TABLE["mla.scores"].cols) == ("head_query", "cache")
    assert block_kinds.kinds_with(rows="cache") == ("mla.c_kv", "mla.k_rope", "mla.kv_b")


def test_the_table_holds_the_layouts_per_kind_facts():
    """Colour role, weight plate and matmul input live in the table; the layout's names and the engine's
    LINEAR_INPUTS agree with it (a plate's rows are as wide as the matmul's input)."""
    from compute.trace import LINEAR_INPUTS
    from scene import layout_shapes, palette

    assert block_kinds.LINEAR_IN == LINEAR_INPUTS
    assert set(layout_shapes.PLATE_KINDS) == set(block_kinds.PLATE_IN) <= set(LINEAR_INPUTS)
    assert all(TABLE[k].role in palette.ROLES or TABLE[k].role == "mixer" for k in TABLE)
    assert (TABLE["mla.c_kv"].role, TABLE["kda.state"].role, TABLE["moe.shared"].role, TABLE["lm_head"].role) == \
        ("state", "state", "shared", "output")
    assert block_kinds.role_of("no.such.kind") == "activation"
    dims = build_layout(ModelConfig.from_dict(_raw("kimi-k3"))).dims
    toy = layout_shapes._toy_shapes(None, 3, dims, 4, 4)
    for kind, src in block_kinds.PLATE_IN.items():
        width = layout_shapes.TOY_DIMS.hidden if src == "hidden" else toy[src][-1]
        want = layout_shapes.TOY_DIMS.hidden if LINEAR_INPUTS[kind] in ("norm.mixer", "norm.ffn") \
            else toy[LINEAR_INPUTS[kind]][-1]
        assert width == want, kind


@pytest.mark.parametrize("raw", CASES)
def test_which_models_have_a_kind(raw, runs):
    """`has` (the table's features against the model's config) is what the layout draws: the odd user config has
    no W_qa, no shared experts and no AttnRes blocks; K3 has them all."""
    cfg, trace = runs[raw["name"]]
    for layer0 in range(len(trace.passes[0].layers)):
        lay = build_layout(cfg, layer0=layer0, trace=trace)
        drawn = {b.kind for b in lay.blocks}
        for b in lay.blocks:
            assert block_kinds.has(b.kind, lay.dims), (raw["name"], b.id)
        mixer = lay.dims.mixers[layer0]
        ffn = lay.dims.ffns[layer0]
        for kind, e in TABLE.items():
            if e.station != "global" and block_kinds.has(kind, lay.dims) and set(e.features) & {"kda", "mla",
                                                                                                 "moe", "dense"}:
                if {mixer, ffn} >= set(e.features) & {"kda", "mla", "moe", "dense"} and not e.kind.startswith(
                        ("moe.router.", "moe.bias", "moe.topk")) and kind != "attnres.mixer":
                    assert kind in drawn, (raw["name"], layer0, kind)
    dims = build_layout(cfg).dims
    if raw["name"] == "odd-user":
        assert not any(block_kinds.has(k, dims) for k in ("mla.q_a", "moe.shared", "attnres.ffn", "final.attnres"))
    if raw["name"] == "kimi-k3":
        assert all(block_kinds.has(k, dims) for k in TABLE)


@pytest.mark.parametrize("raw", CASES)
def test_every_drawn_kind_has_its_sizes_in_the_table(raw, runs):
    """The real size the labels show and the toy shape before a trace come from the table's templates: every
    kind a layer or the stack draws has both (the stack's global kinds a real one), filled from this model's
    config (W_q of a model without query compression maps hidden -> heads' queries)."""
    from scene.layout_shapes import _k3_shapes

    cfg, trace = runs[raw["name"]]
    for layer0 in range(len(trace.passes[0].layers)):
        lay = build_layout(cfg, layer0=layer0)  # no trace: the toy shapes are the table's
        real = _k3_shapes(lay.dims, layer0)
        for b in lay.blocks:
            e = TABLE[b.kind]
            if b.part in ("slab", "marker", "bracket", "backdrop"):
                continue
            assert e.real and b.k3_shape == real[b.kind], b.id
            if e.station != "global":
                assert e.toy and len(b.toy_shape) in (len(e.toy), 1), b.id
    d = build_layout(cfg).dims
    hq = d.mla_heads * (d.nope + d.rope)
    want = f"{d.q_lora if d.q_lora else d.hidden:,} → {hq:,}"
    assert _k3_shapes(d, 0)["mla.q_b"] == want
