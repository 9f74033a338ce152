"""Tampered copies of the shipped weights (assets/weights/toy-k3-v2.npz): every one is a WeightsError, quickly and
without a big allocation (the archive's directory and each .npy header are checked before allocating), and the
engine falls back to random weights with a note. The shipped file still loads, to the same numbers as np.load."""
import json
import os
import struct
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from compute import weights as wio
from compute.engine import ToyK3
from compute.weights import WeightsError

SHIPPED = wio.default_path()
pytestmark = pytest.mark.skipif(not SHIPPED.is_file(), reason="the trained weights asset is not installed")

BIG_BYTES = 64 << 20  # no tampered file may make the reader allocate this much


@pytest.fixture(scope="module")
def engine():
    return ToyK3(device="cpu", weights="random", compiled=False)


@pytest.fixture(scope="module")
def expected(engine):
    return engine.weight_shapes()


def _members() -> dict[str, bytes]:
    with zipfile.ZipFile(SHIPPED) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _npy(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _array(members: dict, name: str) -> np.ndarray:
    import io

    return np.load(io.BytesIO(members[name + ".npy"]), allow_pickle=False)


def _write(path: Path, members: dict[str, bytes], method=zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", method) as z:
        for n, b in members.items():
            z.writestr(n, b)
    return path


def _with_array(tmp_path, name: str, a: np.ndarray) -> Path:
    m = _members()
    m[name + ".npy"] = _npy(a)
    return _write(tmp_path / "w.npz", m)


def _with_meta(tmp_path, meta_text: str) -> Path:
    m = _members()
    m["__meta__.npy"] = _npy(np.frombuffer(meta_text.encode("utf-8"), np.uint8))
    return _write(tmp_path / "w.npz", m)


def _meta() -> dict:
    return json.loads(_array(_members(), "__meta__").tobytes())


def _patch_central(path: Path, member: str, **fields) -> None:
    """Rewrite fields of one member's central-directory entry (and its local header): method, csize, usize."""
    data = bytearray(path.read_bytes())
    offs = {"method": (10, 8, "<H"), "csize": (20, 18, "<I"), "usize": (24, 22, "<I")}
    pos = 0
    while True:
        pos = data.find(b"PK\x01\x02", pos)
        if pos < 0:
            break
        nlen = struct.unpack_from("<H", data, pos + 28)[0]
        name = bytes(data[pos + 46:pos + 46 + nlen]).decode()
        if name == member:
            local = struct.unpack_from("<I", data, pos + 42)[0]
            for k, v in fields.items():
                c_off, l_off, fmt = offs[k]
                struct.pack_into(fmt, data, pos + c_off, v)
                struct.pack_into(fmt, data, local + l_off, v)
        pos += 4
    path.write_bytes(bytes(data))


def _refused(path, expected=None, match=None) -> WeightsError:
    """wio.read(path) raises WeightsError within 5 s, allocating less than BIG_BYTES on the way."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(WeightsError, match=match) as info:
            wio.read(path, expected)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 5.0
    assert peak < BIG_BYTES, f"peak {peak} bytes"
    assert "\n" not in str(info.value)
    return info.value


def test_the_shipped_file_loads_to_the_same_numbers_as_np_load(expected):
    arrays, meta = wio.read(SHIPPED, expected)
    with np.load(SHIPPED, allow_pickle=False) as z:
        direct = {k: z[k] for k in z.files}
    assert json.loads(direct.pop("__meta__").tobytes()) == meta
    assert set(arrays) == set(direct)
    for k, a in direct.items():
        assert np.array_equal(arrays[k], wio.dequantize(a)), k
        assert arrays[k].dtype == wio.dequantize(a).dtype
    plain, _ = wio.read(SHIPPED)  # without the expected shapes (compute.training.train): the same
    assert all(np.array_equal(plain[k], arrays[k]) for k in arrays)


def test_the_engine_still_runs_the_shipped_weights():
    e = ToyK3(device="cpu", compiled=False)
    assert e.weights_name == "trained" and e.weights_note == ""


def test_a_deflated_archive_is_allowed(tmp_path, expected):
    path = _write(tmp_path / "d.npz", _members(), zipfile.ZIP_DEFLATED)
    a, _ = wio.read(path, expected)
    b, _ = wio.read(SHIPPED, expected)
    assert all(np.array_equal(a[k], b[k]) for k in b)


@pytest.mark.parametrize("bits,what", [(0x7F7F, "magnitude"), (0xFF7F, "magnitude"), (0x7FC0, "not finite"),
                                       (0x7F80, "not finite"), (0xFF80, "not finite"), (0x4700, "magnitude")])
def test_huge_or_non_finite_bf16_values(tmp_path, expected, bits, what):
    a = _array(_members(), "layers.moe.router").copy()
    a[3, 2, 100] = bits  # 0x7F7F = 3.39e38 (the largest finite BF16); 0x4700 = 32768
    e = _refused(_with_array(tmp_path, "layers.moe.router", a), expected, what)
    assert "layers.moe.router" in str(e)


@pytest.mark.parametrize("value", [1e30, np.nan, -np.inf, 2e4])
def test_huge_or_non_finite_float32_values(tmp_path, expected, value):
    a = _array(_members(), "layers.moe.bias").copy()
    a[0, 0] = value
    _refused(_with_array(tmp_path, "layers.moe.bias", a), expected)


def test_deeply_nested_metadata_is_refused_without_recursion_error(tmp_path, expected):
    meta = _meta()
    text = json.dumps(meta)[:-1] + ', "deep": ' + "[" * 100000 + "]" * 100000 + "}"
    _refused(_with_meta(tmp_path, text), expected, "nested")
    _refused(_with_meta(tmp_path, text), None, "nested")


@pytest.mark.parametrize("field,value", [("vocab", 5), ("vocab", [1, 2]), ("vocab", None), ("dims", "x"),
                                         ("dims", {"hidden": "8"}), ("dims", [8]), ("config", 5),
                                         ("format_version", "1"), ("format_version", True),
                                         ("format_version", 1.0), ("report", []), ("seed", "0"), ("seed", 1.5),
                                         ("format", None)])
def test_metadata_of_the_wrong_type(tmp_path, engine, field, value):
    meta = dict(_meta(), **{field: value})
    path = _with_meta(tmp_path, json.dumps(meta))
    with pytest.raises(WeightsError):
        arrays, m = wio.read(path, engine.weight_shapes())
        wio.check_meta(m, engine.config.name, {"hidden": 8}, ["x"])
    with pytest.raises(WeightsError):  # the engine's own check (read + check_meta + unpack)
        ToyK3(device="cpu", compiled=False, weights_path=path)


@pytest.mark.parametrize("text", ["[1, 2]", "not json", '{"format": NaN}', "\"x\"", "{" * 3, "",
                                  '{"format": "k3-explorer-toy-weights", "format_version": ' + "9" * 40 + "}"])
def test_metadata_that_is_not_an_object(tmp_path, expected, text):
    _refused(_with_meta(tmp_path, text), expected)


def test_metadata_not_utf8(tmp_path, expected):
    m = _members()
    m["__meta__.npy"] = _npy(np.frombuffer(b"\xff\xfe{}", np.uint8))
    _refused(_write(tmp_path / "w.npz", m), expected, "UTF-8")


@pytest.mark.parametrize("method", [99, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, 1, 0xFFFF])
def test_compression_methods_other_than_stored_or_deflated(tmp_path, expected, method):
    path = _write(tmp_path / "w.npz", _members())
    _patch_central(path, "layers.kda.o.npy", method=method)
    e = _refused(path, expected, "compression method")
    _refused(path, None, "compression method")
    assert str(method) in str(e)


def test_a_header_of_2_to_the_40_elements(tmp_path, expected):
    m = _members()
    header = b"{'descr': '<u2', 'fortran_order': False, 'shape': (1099511627776,), }"
    header += b" " * (63 - len(header) % 64) + b"\n"
    m["layers.moe.w13.npy"] = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"\0" * 64
    path = _write(tmp_path / "w.npz", m)
    _refused(path, expected, "shape")
    _refused(path, None, "elements")  # without the expected shapes: the element cap


def test_a_2_gib_declared_member(tmp_path, expected):
    path = _write(tmp_path / "w.npz", _members())
    _patch_central(path, "layers.moe.w2.npy", csize=2 << 30, usize=2 << 30)
    _refused(path, expected)
    _refused(path, None)
    path2 = _write(tmp_path / "w2.npz", _members())
    with zipfile.ZipFile(path2) as z:
        size = z.getinfo("layers.moe.w2.npy").file_size
    _patch_central(path2, "layers.moe.w2.npy", usize=size + 10)  # stored, sizes disagree
    _refused(path2, None, "stored")


def test_a_deflated_member_declaring_more_than_its_array(tmp_path, expected):
    path = _write(tmp_path / "w.npz", _members(), zipfile.ZIP_DEFLATED)
    _patch_central(path, "layers.kda.o.npy", usize=100 << 20)
    _refused(path, expected, "declares")


@pytest.mark.parametrize("keep", [0, 1, 21, 1000, 0.5, -30, -1])
def test_truncated_files(tmp_path, expected, keep):
    data = SHIPPED.read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else (keep if keep >= 0 else len(data) + keep)
    path = tmp_path / "t.npz"
    path.write_bytes(data[:n])
    _refused(path, expected)


def test_a_flipped_data_byte_fails_the_crc(tmp_path, expected):
    data = bytearray(SHIPPED.read_bytes())
    with zipfile.ZipFile(SHIPPED) as z:
        info = z.getinfo("layers.moe.w13.npy")
    data[info.header_offset + 30 + len(info.filename) + 500] ^= 0xFF
    path = tmp_path / "c.npz"
    path.write_bytes(bytes(data))
    _refused(path, expected, "CRC")


@pytest.mark.parametrize("dtype", ["<f8", ">u2", ">f4", "<i2", "<f2", "|u1", "<c8"])
def test_wrong_dtype(tmp_path, expected, dtype):
    a = _array(_members(), "layers.kda.o")
    _refused(_with_array(tmp_path, "layers.kda.o", a.astype(dtype)), expected, "dtype|declares")
    _refused(_with_array(tmp_path, "layers.kda.o", a.astype(dtype)), None, "dtype")


def test_object_dtype_and_fortran_order(tmp_path, expected):
    m = _members()
    header = b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"
    m["layers.kda.o.npy"] = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"\x80\x04N."
    _refused(_write(tmp_path / "o.npz", m), expected, "dtype")
    a = np.asfortranarray(_array(_members(), "layers.kda.o"))
    _refused(_with_array(tmp_path, "layers.kda.o", a), expected, "Fortran")


def test_wrong_shape_missing_and_extra_members(tmp_path, expected):
    a = _array(_members(), "layers.kda.o")
    _refused(_with_array(tmp_path, "layers.kda.o", a[:, :, :7].copy()), expected, "shape")
    _refused(_with_array(tmp_path, "layers.kda.o", a.reshape(-1)), expected, "shape")
    m = _members()
    del m["layers.kda.o.npy"]
    _refused(_write(tmp_path / "m.npz", m), expected, "missing")
    m = _members()
    m["evil.npy"] = _npy(np.zeros(3, np.uint16))
    _refused(_write(tmp_path / "e.npz", m), expected, "unexpected")
    m = _members()
    m["../x.npy"] = _npy(np.zeros(3, np.uint16))
    _refused(_write(tmp_path / "p.npz", m), None, "not <name>.npy")
    m = _members()
    m["readme.txt"] = b"hello"
    _refused(_write(tmp_path / "t.npz", m), None, "not <name>.npy")


def test_a_member_whose_data_is_shorter_than_its_header_says(tmp_path, expected):
    m = _members()
    raw = m["layers.kda.o.npy"]
    m["layers.kda.o.npy"] = raw[:-2]
    _refused(_write(tmp_path / "s.npz", m), expected, "data bytes")
    m["layers.kda.o.npy"] = raw + b"\0\0"
    _refused(_write(tmp_path / "l.npz", m), None, "data bytes")


def test_a_bad_npy_header(tmp_path, expected):
    for header in (b"__import__('os').system('true')", b"{'descr': '<u2'}", b"{" * 3000, b"\xff" * 50,
                   b"{'descr': '<u2', 'fortran_order': False, 'shape': (-1,), }",
                   b"{'descr': '<u2', 'fortran_order': False, 'shape': (2.5,), }",
                   b"{'descr': '<u2', 'fortran_order': 0, 'shape': (2,), }"):
        m = _members()
        m["layers.kda.o.npy"] = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"\0" * 4
        _refused(_write(tmp_path / "h.npz", m), expected)
    m = _members()
    m["layers.kda.o.npy"] = b"\x93NUMPY\x03\x00" + b"\0" * 20
    _refused(_write(tmp_path / "v.npz", m), expected, "format")
    m["layers.kda.o.npy"] = b"\x93NUMPY\x01\x00\xff\xff" + b" " * 10
    _refused(_write(tmp_path / "b.npz", m), expected, "header")
    m["layers.kda.o.npy"] = b"GIF89a"
    _refused(_write(tmp_path / "g.npz", m), expected, "not an .npy")


def test_special_files_are_refused_without_blocking(tmp_path, expected):
    fifo = tmp_path / "w.npz"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(_refused(fifo, expected, "FIFO")), daemon=True)
    t.start()
    t.join(5)
    if not done:  # unblock the reader, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO as the weights file blocked")
    _refused(tmp_path, expected, "directory")
    if os.path.exists("/dev/zero"):
        _refused("/dev/zero", expected, "device")
    link = tmp_path / "l.npz"
    link.symlink_to(fifo)
    _refused(link, expected, "FIFO")
    with pytest.raises(WeightsError, match="not found"):
        wio.read(tmp_path / "missing.npz", expected)


def test_a_tampered_default_file_falls_back_to_random_weights_with_a_note(tmp_path, monkeypatch, caplog):
    a = _array(_members(), "layers.moe.router").copy()
    a[0, 0, 0] = 0x7F7F
    bad = _with_array(tmp_path, "layers.moe.router", a)
    monkeypatch.setattr(wio, "default_path", lambda: bad)
    with caplog.at_level("INFO", logger="compute.engine"):
        e = ToyK3(device="cpu", compiled=False)
    assert e.weights_name == "random" and "trained weights not used" in e.weights_note
    assert "layers.moe.router" in e.weights_note
    warned = [r for r in caplog.records if r.name == "compute.engine" and r.levelname == "WARNING"]
    assert len(warned) == 1 and "running random weights" in warned[0].getMessage()
    caplog.clear()
    monkeypatch.setattr(wio, "default_path", lambda: tmp_path / "missing.npz")
    with caplog.at_level("INFO", logger="compute.engine"):
        assert ToyK3(device="cpu", compiled=False).weights_name == "random"
    assert [r.levelname for r in caplog.records if r.name == "compute.engine"] == ["INFO"]  # not installed: no warning
    assert e.run("Kimi K3", 1).weights_name == "random"
    with pytest.raises(WeightsError):  # an explicit path is the caller's: raised, not replaced
        ToyK3(device="cpu", compiled=False, weights_path=bad)


def test_the_end_record_is_checked_before_the_directory_is_parsed(tmp_path, expected):
    """A directory declaring tens of thousands of entries (zipfile would build a ZipInfo for each first), a huge
    directory size, a zip64 record, or too many real members: refused from the end record."""
    data = SHIPPED.read_bytes()
    end = data.rfind(b"PK\x05\x06")
    for offset, fmt, value, what in ((8, "<H", 60000, "members"), (10, "<H", 60000, "members"),
                                     (12, "<I", 100 << 20, "central directory"), (10, "<H", 0xFFFF, "zip64")):
        bad = bytearray(data)
        struct.pack_into(fmt, bad, end + offset, value)
        path = tmp_path / "e.npz"
        path.write_bytes(bytes(bad))
        _refused(path, expected, what)
    many = {f"a{i}.npy": _npy(np.zeros(1, np.uint16)) for i in range(600)}
    _refused(_write(tmp_path / "many.npz", many), None, "members")


def test_save_refuses_metadata_the_reader_would_refuse(tmp_path):
    with pytest.raises(WeightsError, match="not finite"):
        wio.save(tmp_path / "n.npz", {"embedding": np.ones((2, 2))}, {"report": {"loss": float("nan")}})
    assert not list(tmp_path.iterdir())
    with pytest.raises(WeightsError):
        wio.read(5)


def test_the_bf16_magnitude_check_matches_max_abs_weight():
    bits = np.array([wio._BF16_MAX_ABS_BITS, wio._BF16_MAX_ABS_BITS + 1], np.uint16)
    lo, hi = wio.from_bf16_bits(bits)
    assert lo <= wio.MAX_ABS_WEIGHT < hi
