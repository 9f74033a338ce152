"""bench/soak.py's options for the soak where users are (issue 44 build 5): --size parsing, --model and
--knockout-every refused in one line, and the --why experiment's turns (token, mixer, Restore) and counts."""
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def soak():
    spec = importlib.util.spec_from_file_location("soak_bench_options", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("text, size", [("1280x720", (1280, 720)), ("1920×1080", (1920, 1080)),
                                        ("800X600", (800, 600))])
def test_size_parses(soak, text, size):
    assert soak.parse_size(text) == size


@pytest.mark.parametrize("text", ["1280", "x720", "12x7", "1280x720x3", "-1280x720", "1e3x720", ""])
def test_a_bad_size_is_one_line(soak, text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError) as info:
        soak.parse_size(text)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("args, words", [(["--model", "nope"], "--model must be one of"),
                                         (["--knockout-every", "0"], "--knockout-every must be > 0"),
                                         (["--lang", "fr"], "invalid choice"),
                                         (["--size", "10x10"], "each side"),
                                         (["--samples", "/dev/null"], "character device, not a regular file"),
                                         (["--samples", "/no/such/folder/s.json"], "does not exist")])
def test_bad_options_exit_2_before_any_window(args, words):
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), *args], capture_output=True, text=True,
                       timeout=120, env={"PATH": "/usr/bin:/bin", "DISPLAY": ""})
    assert r.returncode == 2 and words in r.stderr, r.stderr[-500:]


def test_the_why_experiment_turns_and_counts(soak):
    calls = []
    dock = SimpleNamespace(add_knockout=lambda item, mode: calls.append((item, mode)),
                           restore=SimpleNamespace(click=lambda: calls.append("restore")))
    bench = soak.Soak.__new__(soak.Soak)  # only what _knock, _explained and _explain_failed use
    bench.win = SimpleNamespace(docks={"ExplainDock": dock}, state=SimpleNamespace(layer=6))
    bench.handlers, bench.knockouts = {}, 0
    bench.explanations, bench.explain_failures = {"done": 0, "failed": 0, "knockout_results": 0}, []
    bench.elapsed_s = lambda: 1.0
    for _ in range(4):
        bench._knock()
    assert calls == [(("token", 0), "zero"), (("block", 7, "mixer"), "mean"), "restore", (("token", 0), "zero")]
    assert bench.knockouts == 4 and bench.handlers["knockout"][0] == 4
    bench._explained(1, SimpleNamespace(knockout={"word": "x"}))  # (serial, result) as the explain lane sends them
    bench._explained(2, SimpleNamespace(knockout=None))
    bench._explain_failed(3, "ValueError: token position 9 is outside 0..5")
    assert bench.explanations == {"done": 2, "failed": 1, "knockout_results": 1}
    assert bench.explain_failures == ["ValueError: token position 9 is outside 0..5"]
