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

    monkeypatch.setattr(wio, "_write_npz", lambda f, data: disk_full(f, **data))
    with pytest.raises(OSError, match="No space"):
        wio.save(target, _arrays(), {"recipe": "second"})
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.npz"]
    assert wio.read(target)[1]["recipe"] == "first"


def test_the_same_weights_and_metadata_give_the_same_bytes(tmp_path):
    """No write time in the file (fixed zip timestamps): what `make weights` needs to rebuild a file bit for bit;
    numpy reads it as the .npz it is."""
    import time

    a = wio.save(tmp_path / "a.npz", _arrays(), {"recipe": "same"})
    time.sleep(2.1)  # a later second: a zip timestamp taken from the clock would differ
    b = wio.save(tmp_path / "b.npz", _arrays(), {"recipe": "same"})
    assert a.read_bytes() == b.read_bytes()
    assert wio.save(tmp_path / "c.npz", _arrays(), {"recipe": "other"}).read_bytes() != a.read_bytes()
    with np.load(a, allow_pickle=False) as z:
        assert sorted(z.files) == ["__meta__", "embedding"] and z["embedding"].dtype == np.uint16
