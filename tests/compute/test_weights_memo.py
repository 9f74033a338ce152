"""The weights memo (compute.engine_weights.MEMO) and the compiled pass the engines of one weight set share: a session
builds engines again and again (the window's first engine and its compiled one, the explanation's second engine, a
model switched back), and none of them may see what another one did to its weights."""
import numpy as np
import pytest

from compute import fused_nb
from compute import weights as weights_io
from compute.engine import Knobs, ToyK3
from compute.engine_weights import MEMO

PROMPT = "Kimi K3 reads the next token"
needs_numba = pytest.mark.skipif(not fused_nb.available(), reason="numba not installed (or K3_NO_NUMBA set)")


def _logits(m: ToyK3) -> np.ndarray:
    return m.run(PROMPT, 1, Knobs(temperature=0.0)).passes[0].final["lm_head"][-1]


def test_a_weights_file_is_read_once_and_its_arrays_are_read_only(monkeypatch):
    MEMO.clear()
    reads = []
    real = weights_io.read
    monkeypatch.setattr(weights_io, "read", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    a = ToyK3(device="cpu", weights="trained", compiled=False)
    b = ToyK3(device="cpu", weights="trained", compiled=False)
    assert a.weights_name == b.weights_name == "trained" and len(reads) == 1
    wa, wb = a._layers64[2]["kda"]["in"], b._layers64[2]["kda"]["in"]
    assert wa is wb and not wa.flags.writeable
    with pytest.raises(ValueError):
        wa[0, 0] = 1.0
    # each engine's own record: its dicts, its metadata
    assert a._layers64[2] is not b._layers64[2] and a.weights_meta == b.weights_meta
    a.weights_meta["touched"] = True
    assert "touched" not in b.weights_meta


def test_a_file_changed_in_place_is_read_and_checked_again(tmp_path):
    """Keyed by the file's bytes, not its name, size or times: a copy rewritten in place with one weight set to
    +inf (same name, same size, same modification time) is refused, although the sound copy was read a moment
    before."""
    import io
    import os
    import zipfile

    with zipfile.ZipFile(weights_io.shipped_path("kimi-k3")) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}

    def write(members: dict) -> None:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
            for n, b in members.items():
                z.writestr(n, b)

    path = tmp_path / "toy.npz"
    write(members)
    stat = path.stat()
    MEMO.clear()
    assert ToyK3(device="cpu", weights_path=path, compiled=False).weights_name == "trained"
    name = next(n for n in members if n != "__meta__.npy")
    a = np.load(io.BytesIO(members[name]), allow_pickle=False).copy()
    a.flat[0] = 0x7F80 if a.dtype == np.uint16 else np.inf  # +inf as bf16 bits, or as float32
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    write({**members, name: buf.getvalue()})
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    with pytest.raises(weights_io.WeightsError, match="not finite"):
        ToyK3(device="cpu", weights_path=path, compiled=False)


def test_editing_one_engines_weights_leaves_another_engine_alone():
    """The memo shares the float64 weights; each engine converts its own arrays (writable: a notebook may edit
    them), so an edit is that engine's alone — the knock-out check of tests/compute/test_explain.py does this."""
    a = ToyK3(device="cpu", dtype="float64", weights="random", seed=4242, kernels="operators")
    before = _logits(a)
    b = ToyK3(device="cpu", dtype="float64", weights="random", seed=4242, kernels="operators")
    b.layers[40]["moe"]["w2"][:] = 0.0
    b.lm_head[:] = 0.0
    assert not np.allclose(_logits(b), before)
    np.testing.assert_array_equal(_logits(a), before)
    c = ToyK3(device="cpu", dtype="float64", weights="random", seed=4242, kernels="operators")
    np.testing.assert_array_equal(_logits(c), before)


def test_random_weights_are_drawn_per_seed():
    a = ToyK3(device="cpu", weights="random", seed=1, compiled=False)
    b = ToyK3(device="cpu", weights="random", seed=2, compiled=False)
    a2 = ToyK3(device="cpu", weights="random", seed=1, compiled=False)
    assert a._layers64[0]["w_attn"] is a2._layers64[0]["w_attn"]
    assert not np.array_equal(a.embedding64, b.embedding64)


@needs_numba
def test_engines_of_one_weight_set_share_the_compiled_pass_but_never_an_edited_one():
    a = ToyK3(device="cpu", weights="random", seed=777, compiled=True)
    b = ToyK3(device="cpu", weights="random", seed=777, compiled=True)
    assert a.compiled and b.compiled and a._pass is b._pass
    expected = _logits(a)
    # an engine whose arrays were edited builds its own pass when asked later, and the shared one is untouched
    c = ToyK3(device="cpu", weights="random", seed=777, compiled=False)
    c.layers[20]["moe"]["w2"][:] = 0.0
    assert c.use_compiled(True) and c._pass is not a._pass
    assert not np.allclose(_logits(c), expected)
    d = ToyK3(device="cpu", weights="random", seed=777, compiled=True)
    assert d._pass is a._pass
    np.testing.assert_array_equal(_logits(d), expected)
    # and it computes what a pass of the engine's own, built from the same weights, computes
    e = ToyK3(device="cpu", weights="random", seed=777, compiled=False)
    assert e.use_compiled(True) and e._pass is not a._pass
    np.testing.assert_array_equal(_logits(e), expected)


def test_the_digest_reads_a_large_file_in_chunks_and_refuses_what_is_not_a_regular_file(tmp_path):
    """The memo's key reads the file in chunks (a file near the reader's 256 MiB cap never sits in memory whole),
    and a FIFO, a missing file or a non-path gets no key: the reader then says what is wrong with it."""
    import os
    import tracemalloc

    from compute.engine_weights import _file_digest

    big = tmp_path / "big.npz"
    with open(big, "wb") as fh:  # sparse: 96 MiB of zeros read back, nothing written to disk
        fh.truncate(96 << 20)
    tracemalloc.start()
    try:
        key = _file_digest(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert key is not None and peak < 8 << 20, peak
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    assert _file_digest(fifo) is None and _file_digest(tmp_path / "missing.npz") is None
    assert _file_digest(42) is None
    with pytest.raises(weights_io.WeightsError):
        ToyK3(device="cpu", weights_path=fifo, compiled=False)


def test_the_memo_is_bounded_by_sets_and_bytes():
    """At most `size` sets and `max_bytes` of arrays; a set over half the bytes (wide toy dims) is not kept at all."""
    from compute.engine_weights import _Memo, nbytes, random_weights
    from compute.engine import ToyDims
    from compute.config import load_default

    cfg = load_default()
    sets = [random_weights(cfg, ToyDims(), 64, seed) for seed in range(4)]
    one = nbytes(sets[0])
    assert one > 1 << 20
    memo = _Memo(size=3, max_bytes=10 * one)
    for i, w in enumerate(sets):
        memo.put(("k", i), w)
    assert len(memo) == 3 and memo.get(("k", 0)) is None and memo.get(("k", 3)) is sets[3]
    small = _Memo(size=3, max_bytes=int(2.5 * one))
    for i, w in enumerate(sets):
        small.put(("k", i), w)
    assert len(small) == 2 and small.get(("k", 3)) is sets[3] and small.get(("k", 2)) is sets[2]
    tiny = _Memo(size=3, max_bytes=int(1.5 * one))
    tiny.put(("k", 0), sets[0])
    assert len(tiny) == 0
