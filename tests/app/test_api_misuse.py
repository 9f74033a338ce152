"""API misuse: wrong types and values in app/api.py's public functions are one-line ValueErrors
naming the argument (were AttributeError / AssertionError / TypeError), raised before any engine or window."""
import os
import signal

import pytest

from app import api
from compute.trace import Knobs


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


MISUSE = [
    ("render", {"knobs": "hot"}, "knobs"), ("render", {"knobs": 5}, "knobs"), ("run", {"knobs": [1]}, "knobs"),
    ("render", {"view": 123}, "view"), ("run", {"view": b"x.k3view"}, "view"), ("run", {"view": [1]}, "view"),
    ("render", {"view": {"a": 1}}, "view"), ("run", {"view": ""}, "empty"), ("render", {"view": 3.5}, "view"),
    ("run", {"device": "tpu"}, "device"), ("render", {"device": 5}, "device"),
    ("run", {"knobs": {"expert_bias": {"5000": 1.0}}}, "knobs.expert_bias"),
    ("run", {"knobs": {"expert_bias": {-3: 1.0}}}, "knobs.expert_bias"),
    ("run", {"knobs": {"expert_bias": {(1, 2): 1.0}}}, "knobs.expert_bias"),
    ("run", {"knobs": Knobs(expert_bias={5000: 1.0})}, "knobs.expert_bias"),
    ("run", {"knobs": Knobs(sample_seed=10 ** 19)}, "knobs.sample_seed"),
    ("run", {"knobs": {"temperature": "hot"}}, "knobs.temperature"),
    ("run", {"prompt": 5}, "prompt"), ("run", {"tokens": "3"}, "tokens"), ("run", {"model": ["x"]}, "model"),
    ("render", {"layer": "3"}, "layer"), ("render", {"layer": 3.5}, "layer"), ("render", {"size": 5}, "size"),
    ("render", {"size": ("a", "b")}, "size"), ("render", {"camera": 5}, "camera"), ("render", {"camera": []}, "camera"),
    ("render", {"lang": 5}, "language"), ("render", {"theme": []}, "theme"),
    ("render", {"transparent": "yes"}, "transparent"), ("render", {"labels": None}, "labels"),
]
if not _cuda_available():
    MISUSE += [("run", {"device": "cuda"}, "CUDA is not available"),
               ("render", {"device": "cuda:0"}, "CUDA is not available")]


@pytest.mark.parametrize("fn, kwargs, words", MISUSE)
def test_misuse_is_a_one_line_value_error(fn, kwargs, words):
    with pytest.raises(ValueError) as err:
        getattr(api, fn)(**kwargs)
    assert words in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_resolve_view_refuses_what_is_not_a_view():
    for bad in (3.5, 0, object()):
        with pytest.raises(ValueError, match="view must be"):
            api.resolve_view(bad)


def test_an_int_keyed_expert_bias_dict_is_taken_as_knobs():
    view = api.resolve_view(None, knobs={"expert_bias": {17: 2.0}})
    assert view.knobs.expert_bias == {17: 2.0}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
def test_a_fifo_as_view_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "pipe.k3view")

    def fire(*_a):
        raise TimeoutError("render(view=FIFO) blocked")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(10)
    try:
        for fn in (api.render, api.run):
            with pytest.raises(ValueError, match="a FIFO"):
                fn(view=str(tmp_path / "pipe.k3view"))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
