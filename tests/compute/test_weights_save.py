"""compute.weights.save writes atomically: a write that fails part-way leaves the earlier file as it was."""
import errno

import numpy as np
import pytest

from compute import weights as wio


def _arrays():
    return {"embedding": np.arange(12, dtype=np.float64).reshape(3, 4) / 7.0}


def test_save_round_trips(tmp_path):
    path = wio.save(tmp_path / "w.npz", _arrays(), {"recipe": "test"})
    arrays, meta = wio.read(path)
    assert meta["recipe"] == "test" and meta["format_version"] == wio.FORMAT_VERSION
    assert arrays and all(np.isfinite(a).all() for a in arrays.values())


def test_a_failed_write_keeps_the_earlier_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "w.npz"
    wio.save(target, _arrays(), {"recipe": "first"})
    before = target.read_bytes()

    def disk_full(f, **data):
        f.write(b"PK\x03\x04 partial")  # part of a zip, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(wio.np, "savez", disk_full)
    with pytest.raises(OSError, match="No space"):
        wio.save(target, _arrays(), {"recipe": "second"})
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.npz"]
    assert wio.read(target)[1]["recipe"] == "first"
