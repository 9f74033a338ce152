"""A trained-weights asset for tests: a real weights file in the shipped format (compute.training.train's layout, a
training-style init of another seed), put where the engine looks for the shipped asset. So a test sees
trained and random weights differ whether or not the real trained file is installed yet."""
import pytest


@pytest.fixture
def trained_asset(tmp_path, monkeypatch):
    from compute.training import train
    from compute import weights
    from compute.config import load_default
    from compute.engine import ToyDims

    path = tmp_path / "toy-k3-test.npz"
    train.write_asset(train.init_params(load_default(), ToyDims(), 3), path, load_default(), ToyDims(), 3,
                      {"note": "test asset"})
    monkeypatch.setattr(weights, "default_path", lambda: path)
    return path
