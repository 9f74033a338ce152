"""`python -m compute.training.train`'s arguments are all checked before torch loads or anything trains (issue 44, N4/N5):
each bad value is one line naming the option and its limit, exit 2, no traceback; `--out` is checked as the
guarded writer will write it; `--init` / `--evaluate` / `--score` files go through the guarded reader."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from compute.training import train_cli
from compute.config import available_configs
from compute import weights as wio

ROOT = Path(__file__).resolve().parents[2]
CPUS = os.cpu_count() or 1


def _refused(argv, capsys) -> str:
    """The one line a refused command prints (asserting exit 2, one line, no traceback)."""
    with pytest.raises(SystemExit) as e:
        train_cli.parse(argv)
    assert e.value.code == 2, argv
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("python -m compute.training.train: error: "), lines[0]
    assert len(lines[0]) < 400
    return lines[0]


@pytest.fixture
def specials(tmp_path):
    """A FIFO, a link to a file, a folder, a missing file and a tampered weights file."""
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    real = tmp_path / "real.npz"
    real.write_bytes(b"old")
    link = tmp_path / "link.npz"
    link.symlink_to(real)
    tampered = tmp_path / "tampered.npz"
    data = bytearray(wio.default_path().read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    tampered.write_bytes(bytes(data))
    return {"fifo": fifo, "link": link, "real": real, "dir": tmp_path, "missing": tmp_path / "nope.npz",
            "tampered": tampered, "device": Path("/dev/null")}


# the hostile cases of issue 44 (N4, N5): (arguments, words the one line must hold)
BAD = [
    (["--threads", "100000"], ["--threads", f"at most {CPUS}", "CPU count"]),
    (["--threads", "0"], ["--threads", "at least 1"]),
    (["--hidden", "10000000"], ["--hidden", "at most 256"]),
    (["--hidden", "0"], ["--hidden", "at least 1"]),
    (["--batch", str(10 ** 9)], ["--batch", "at most 64"]),
    (["--batch", "0"], ["--batch", "at least 1"]),
    (["--steps", "0"], ["--steps", "at least 1"]),
    (["--lr", "nan"], ["--lr", "not a finite number"]),
    (["--lr", "0"], ["--lr", "above 0"]),
    (["--lr=-inf"], ["--lr", "not a finite number"]),
    (["--seed", str(10 ** 30)], ["--seed", "at most 4,294,967,295"]),
    (["--seed", "-1"], ["--seed", "at least 0"]),
    (["--time-limit", "-1"], ["--time-limit", "above 0"]),
    (["--repeat-weight", "0"], ["--repeat-weight", "at least 1"]),
    (["--steps", "abc"], ["--steps", "invalid int"]),
    (["--out", ""], ["--out", "empty"]),
    (["--recipe", "v9"], ["--recipe", "invalid choice"]),
    (["--batch", "64", "--hidden", "256"], ["--batch 64 with --hidden 256", "at most 4,096"]),
]


@pytest.mark.parametrize("argv,words", BAD, ids=[" ".join(a)[:30] for a, _ in BAD])
def test_each_bad_value_is_one_line_naming_its_limit(argv, words, capsys, tmp_path):
    line = _refused([*argv, "--out", str(tmp_path / "w.npz")] if "--out" not in argv else argv, capsys)
    for w in words:
        assert w in line, (w, line)
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("flag,what,words", [
    ("--out", "fifo", ["FIFO"]), ("--out", "link", ["symbolic link"]), ("--out", "dir", ["directory"]),
    ("--init", "missing", ["not found"]), ("--init", "fifo", ["FIFO"]), ("--init", "tampered", ["weights file"]),
    ("--init", "dir", ["directory"]), ("--evaluate", "missing", ["not found"]), ("--evaluate", "fifo", ["FIFO"]),
    ("--evaluate", "tampered", ["weights file"]), ("--evaluate", "link", ["symbolic link"]),
    ("--score", "fifo", ["FIFO"]), ("--score", "missing", ["not found"]), ("--score", "tampered", ["weights file"]),
    ("--init", "device", ["character device"]), ("--evaluate", "device", ["character device"]),
    ("--score", "device", ["character device"]), ("--out", "device", ["character device"]),
])
def test_files_that_cannot_be_used_are_refused_before_training(flag, what, words, specials, capsys, tmp_path):
    path = specials[what]
    if what == "link" and flag == "--evaluate":  # a link to a good weights file: readable, but not a target
        good = tmp_path / "good.npz"
        good.write_bytes(wio.default_path().read_bytes())
        path.unlink()
        path.symlink_to(good)
    argv = [flag, str(path)] + (["--out", str(tmp_path / "w.npz")] if flag != "--out" else [])
    line = _refused(argv, capsys)
    assert flag in line and all(w in line for w in words), line
    assert os.path.islink(specials["link"]) and specials["real"].read_bytes() == b"old"
    assert Path(specials["fifo"]).is_fifo() and not (tmp_path / "w.npz").exists()


def test_a_character_device_out_stays_a_device(tmp_path, capsys):
    """Issue 44 N1's repro: `mknod X c 1 3; python -m compute.training.train --out X` replaced the node with the file."""
    node = tmp_path / "X"
    try:
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 3))
    except (PermissionError, OSError):
        node = Path("/dev/null")  # not allowed to make a node here: the system's own one, only stat'ed
    line = _refused(["--no-eval", "--steps", "2", "--out", str(node)], capsys)
    assert "character device" in line
    assert Path(node).is_char_device()


def test_good_arguments_pass_unchanged(tmp_path):
    a, config, dims = train_cli.parse(["--threads", str(CPUS), "--hidden", "16", "--batch", "2", "--steps", "3",
                                       "--lr", "1e-3", "--seed", str(2 ** 32 - 1), "--time-limit", "5",
                                       "--repeat-weight", "3", "--out", str(tmp_path / "sub" / "w.npz")])
    assert (a.threads, a.batch, a.steps, a.lr, a.seed, a.time_limit, a.repeat_weight) == \
        (CPUS, 2, 3, 1e-3, 2 ** 32 - 1, 5.0, 3)
    assert dims.hidden == 16 and config.name == "kimi-k3"
    assert [p.name for p in tmp_path.iterdir()] == ["sub"] and list((tmp_path / "sub").iterdir()) == []
    a, _, _ = train_cli.parse(["--init", str(wio.default_path()), "--out", str(tmp_path / "w.npz")])
    assert a.init == str(wio.default_path())


TORCH_CHECK = """
import runpy, sys
sys.argv = ["compute.training.train", *sys.argv[1:]]
try:
    runpy.run_module("compute.training.train", run_name="__main__", alter_sys=True)
except SystemExit as e:
    print("exit", e.code, "torch" in sys.modules)
"""


def test_torch_is_not_imported_when_the_arguments_are_bad(tmp_path):
    """`python -m compute.training.train` with a bad value exits before torch loads (a typo cost a 23-40 s import)."""
    for argv in (["--threads", "0"], ["--out", str(tmp_path)], ["--lr", "nan"], ["--init", str(tmp_path / "x")]):
        p = subprocess.run([sys.executable, "-c", TORCH_CHECK, *argv], cwd=ROOT, capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert p.stdout.split() == ["exit", "2", "False"], (argv, p.stdout, p.stderr[-800:])
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------------- fuzz
# each option's values, labelled by hand: (text, good?)
POOLS = {
    "--threads": [("1", True), (str(CPUS), True), ("0", False), ("-3", False), (str(CPUS + 1), False),
                  ("100000", False), ("2.5", False), ("", False)],
    "--hidden": [("1", True), ("8", True), ("256", True), ("0", False), ("257", False), ("10000000", False),
                 ("-8", False), ("eight", False)],
    "--batch": [("1", True), ("8", True), ("64", True), ("0", False), ("65", False), (str(10 ** 9), False)],
    "--steps": [("1", True), ("800", True), ("100000", True), ("0", False), ("100001", False), ("-1", False),
                ("1e3", False)],
    "--lr": [("5e-3", True), ("1", True), ("1e-12", True), ("0", False), ("-1e-3", False), ("nan", False),
             ("inf", False), ("1.0001", False), ("x", False)],
    "--seed": [("0", True), ("4294967295", True), ("-1", False), ("4294967296", False), (str(10 ** 30), False),
               ("0x10", False)],
    "--time-limit": [("0.5", True), ("604800", True), ("0", False), ("-1", False), ("nan", False),
                     ("604801", False), ("1e308", False)],
    "--repeat-weight": [("1", True), ("100", True), ("0", False), ("101", False), ("-2", False)],
    "--recipe": [("v2", True), ("v1", True), ("v3", False), ("", False)],
}


def test_fuzz_training_arguments_fixed_seed(tmp_path, capsys):
    """300 random combinations (seed 44): a combination with any bad value (or batch x hidden over 4,096) is
    refused with one line naming one of its bad options, exit 2, nothing written; every all-good one parses to exactly its values. Nothing trains."""
    rng = random.Random(44)
    out = tmp_path / "w.npz"
    refused = accepted = 0
    for _ in range(300):
        opts = rng.sample(sorted(POOLS), rng.randint(1, 4))
        chosen = {o: rng.choice(POOLS[o]) for o in opts}
        argv = [x for o, (v, _) in chosen.items() for x in (o, v)] + ["--out", str(out)]
        bad = [o for o, (_, good) in chosen.items() if not good]
        if not bad and int(chosen.get("--batch", ("8",))[0]) * int(chosen.get("--hidden", ("8",))[0]) > 4096:
            bad = ["--batch"]  # each within its own limit, together past the memory cap
        if bad:
            line = _refused(argv, capsys)
            assert any(o in line for o in bad), (argv, line)
            refused += 1
        else:
            a, _, _ = train_cli.parse(argv)
            for o, (v, _) in chosen.items():
                got = getattr(a, o[2:].replace("-", "_"))
                assert got == (v if o == "--recipe" else type(got)(float(v) if "e" in v or "." in v else int(v)))
            accepted += 1
        assert list(tmp_path.iterdir()) == []
    assert refused > 100 and accepted > 20, (refused, accepted)


@pytest.mark.parametrize("name", sorted(available_configs()))
def test_without_out_each_bundled_model_writes_its_own_file(name):
    """`--config NAME` without --out writes NAME's toy file (what `make weights MODEL=NAME` writes: the Makefile's
    WEIGHTS_FILE rule, restated here), never K3's shipped file unless NAME is K3."""
    shipped = wio.default_path()
    a, config, _ = train_cli.parse(["--config", name, "--steps", "1"])
    want = shipped if name == "kimi-k3" else shipped.parent / f"toy-{name}-v2.npz"
    assert Path(a.out) == want and config.name == name
    entry = wio.shipped_toy(name)
    if entry is not None:
        assert Path(a.out).name == entry["file"]
    a, _, _ = train_cli.parse(["--steps", "1"])  # no --config: K3, `make weights`
    assert Path(a.out) == shipped


def test_a_users_config_named_like_k3_trains_into_the_current_folder(tmp_path):
    """A config.json that calls itself "kimi-k3" (or a path-like name) without --out: one step trained, the file in
    the current folder, K3's shipped file untouched (its bytes compared before and after)."""
    raw = json.loads(wio.default_path().parent.parent.joinpath("configs", "kimi-k3.json").read_text(encoding="utf-8"))
    raw.update(num_hidden_layers=2, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
               attn_res_block_size=1, name="kimi-k3")
    raw["linear_attn_config"] = dict(raw["linear_attn_config"], kda_layers=[1], full_attn_layers=[2])
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(raw), encoding="utf-8")
    before = wio.default_path().read_bytes()
    a, _, _ = train_cli.parse(["--config", str(cfg)])
    assert Path(a.out) == Path.cwd() / "toy-kimi-k3-v2.npz"
    raw["name"] = "../../x/kimi k3"
    cfg.write_text(json.dumps(raw), encoding="utf-8")
    a, _, _ = train_cli.parse(["--config", str(cfg)])
    assert Path(a.out) == Path.cwd() / "toy-x-kimi-k3-v2.npz"
    raw["name"] = "kimi-k3"
    cfg.write_text(json.dumps(raw), encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    r = subprocess.run([sys.executable, "-m", "compute.training.train", "--config", str(cfg), "--steps", "1", "--no-eval"],
                       cwd=run, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [p.name for p in run.iterdir()] == ["toy-kimi-k3-v2.npz"]
    assert wio.read(run / "toy-kimi-k3-v2.npz")[1]["config"] == "kimi-k3"
    assert wio.default_path().read_bytes() == before
