"""Every bundled model's trained toy (compute.weights.SHIPPED_TOYS, issue 41.2): the file is there, is the one the
registry and assets/weights/SHA256SUMS record (bytes and weights digest), is for that config at the default toy
dims, is at most 20 MB and loads in at most 200 ms; the engine runs it by default for that bundled model, and a
user's config.json that borrows the name but not the layers runs random weights and says so."""
import json
import time

import pytest

from compute import weights as wio
from compute.config import ModelConfig, available_configs

MAX_BYTES = 20 * 1024 * 1024
MAX_LOAD_S = 0.2


def _sums() -> dict[str, str]:
    text = (wio.default_path().parent / "SHA256SUMS").read_text()
    return {name: digest for digest, name in (line.split() for line in text.splitlines() if line)}


def test_sha256sums_lists_every_shipped_toy():
    assert _sums() == {e["file"]: e["sha256"] for e in wio.SHIPPED_TOYS.values()}
    assert set(wio.SHIPPED_TOYS) <= set(available_configs())
    assert wio.SHIPPED_TOYS["kimi-k3"] is wio.SHIPPED_TOY


@pytest.mark.parametrize("name", sorted(wio.SHIPPED_TOYS))
def test_each_shipped_toy_is_the_recorded_file_for_its_model(name):
    entry = wio.shipped_toy(name)
    path = wio.shipped_path(name)
    assert path.name == entry["file"] and path.stat().st_size <= MAX_BYTES
    assert wio.file_sha256(path) == entry["sha256"]
    arrays, meta = wio.read(path)
    assert wio.weights_digest(arrays) == entry["weights_sha256"]
    assert (meta["config"], meta["seed"]) == (name, entry["seed"])
    # made by `--recipe NAME`, or as that recipe's stages one by one with --init (the same chain: test_train's
    # test_a_recipe_is_its_stages_run_one_by_one_with_init); either way the report's stages are the recipe's
    assert meta["provenance"]["recipe"] in (entry["recipe"], None)
    from compute.training.train_recipes import RECIPES, STAGE_KEYS

    chain = [{k: st.get(k) for k in STAGE_KEYS} for st in meta["report"]["stages"]]
    assert chain == [{k: st.get(k) for k in STAGE_KEYS} for st in RECIPES[entry["recipe"]]]
    assert meta["provenance"]["threads"] == 1 and meta["provenance"]["commit_dirty"] is False


@pytest.mark.parametrize("name", sorted(wio.SHIPPED_TOYS))
def test_the_engine_runs_each_models_toy_by_default_and_loads_it_fast(name):
    """Loading = reading, checking and unpacking the file for the engine (compute.engine_weights.trained_weights),
    timed as this process's CPU time (the shared test machine's load does not count), best of 3."""
    from compute.dims import ToyDims
    from compute.engine import ToyK3
    from compute.engine_weights import trained_weights
    from compute.language.tokenizer import TOY_PIECES

    cfg = ModelConfig.from_json(available_configs()[name])
    engine = ToyK3(cfg, device="cpu")
    assert engine.weights_name == "trained" and not engine.weights_note
    best = min(_cpu_timed(lambda: trained_weights(cfg, ToyDims(), list(TOY_PIECES))) for _ in range(3))
    assert best <= MAX_LOAD_S, f"{name}: {best * 1000:.0f} ms CPU to load its trained toy"


def _cpu_timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


@pytest.mark.parametrize("name", sorted(wio.SHIPPED_TOYS))
def test_a_users_config_with_a_shipped_name_but_other_layers_runs_random_weights(tmp_path, name):
    from compute.engine import ToyK3

    raw = json.loads(available_configs()[name].read_text(encoding="utf-8"))
    raw["num_hidden_layers"] = 5
    for key in ("linear_attn_config",):
        if raw.get(key):
            raw[key] = dict(raw[key], kda_layers=[1, 2, 4], full_attn_layers=[3, 5])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    engine = ToyK3(ModelConfig.from_json(path), device="cpu")
    assert engine.weights_name == "random" and engine.weights_fallback == "other_model"
    assert "no trained toy for this model" in engine.weights_note


def test_verify_checks_a_file_against_its_own_models_entry(tmp_path, capsys):
    from compute.training import rebuild_check

    for name in wio.SHIPPED_TOYS:
        assert rebuild_check.verify_file(str(wio.shipped_path(name))) == 0
    out = capsys.readouterr().out
    assert all(e["file"] in out for e in wio.SHIPPED_TOYS.values())


def test_make_weights_runs_each_toys_recorded_recipe():
    """`make weights MODEL=NAME` (the rebuild the registry's digest is for) trains NAME's recorded recipe into NAME's
    own file and verifies that file: the Makefile's RECIPE and WEIGHTS_FILE rules read back with `make -n`."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for name, entry in wio.SHIPPED_TOYS.items():
        out = subprocess.run(["make", "-n", "weights", f"MODEL={name}"], cwd=root, capture_output=True, text=True,
                             timeout=60).stdout
        train = [line for line in out.splitlines() if "-m compute.training.train --recipe" in line]
        assert len(train) == 1, out
        assert f"--recipe {entry['recipe']} " in train[0] and f"--config {name} " in train[0]
        assert train[0].endswith(f"--out assets/weights/{entry['file']}")
        assert f"-m compute.training.train --verify assets/weights/{entry['file']}" in out
