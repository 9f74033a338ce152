"""compute.compiled.fused_nb_layout: the one column table of the compiled pass's buffers, checked against what the
operators produce (not against the kernels that read it): every dotted segment is a trace key of its block kind
with the operator tensor's width, and no two segments of a buffer overlap or leave a gap."""
import numpy as np
import pytest

from compute.compiled import fused_nb_layout as layout
from compute.engine import ToyK3
from compute.trace import Knobs


@pytest.fixture(scope="module")
def ops_trace():
    m = ToyK3(device="cpu", dtype="float64", kernels="operators")
    return m, m.run("로봇이 컵을", 1, Knobs(temperature=0.0))


def _size(m) -> dict:
    from compute import fused_nb

    if not fused_nb.available():
        pytest.skip("numba not installed: the sizes come from the compiled pass")
    return ToyK3(device="cpu", dtype="float64", compiled=True)._pass.size


def test_every_dotted_segment_is_a_trace_tensor_of_that_width(ops_trace):
    m, tr = ops_trace
    size = _size(m)
    ps = tr.passes[0]
    kinds = {"KB": ("kda", "mixer"), "MB": ("mla", "mixer"), "SB": ("mla", "mixer"), "EB": ("moe", "ffn"),
             "DB": ("dense", "ffn")}
    for name, (kind, side) in kinds.items():
        lt = next(l for l in ps.layers if (l.mixer if side == "mixer" else l.ffn) == kind)
        for key, a, b in layout.views(layout.TABLES[name], size):
            t = np.asarray(lt.tensors[key])
            want = t.shape[-1] if key != "moe.experts" else t.shape[-1] * t.shape[-2]
            assert b - a == want, (name, key, b - a, t.shape)
    # the residual stream and the AttnRes weights: the weights' segment holds every candidate (a layer uses the
    # first n + 1), the stream's the hidden width
    for lt in (ps.layers[1], ps.layers[92]):
        for key, a, b in layout.views(layout.CB, size):
            t = np.asarray(lt.tensors[key])
            assert (b - a >= t.shape[-1]) if key in ("attnres.mixer", "attnres.ffn") else b - a == t.shape[-1], key
    for key, a, b in layout.views(layout.FB, size):
        t = np.asarray(ps.final[key])
        assert (b - a >= t.shape[-1]) if key == "final.attnres" else b - a == t.shape[-1], key


def test_segments_tile_each_buffer_and_names_are_unique():
    size = {k: 3 for k in ("D", "C", "H", "HK", "HVk", "ql", "kl", "r", "kvr", "HVm", "Hq", "Hkv", "E", "L", "Fs3",
                           "k", "kL", "I", "vocab")}
    for name, table in layout.TABLES.items():
        s = layout.starts(table, size)
        assert s[0] == 0 and np.all(np.diff(s) == 3) and layout.width(table, size) == 3 * len(table), name
        names = [n for n, _ in table]
        assert len(set(names)) == len(names), name
        at = getattr(layout, f"{name}_AT")
        assert [getattr(at, n.replace(".", "_")) for n in names] == list(range(len(names))), name
