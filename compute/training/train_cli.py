"""`python -m compute.training.train`: the command's arguments, all checked before torch loads or anything trains.

Each bad value is refused with one line naming the option and its limit, exit 2 (argparse's code), and nothing
is imported, trained or written: a typo costs no 30-s torch import, and an extra zero cannot take down a shared
machine (--threads 100000 once forked until every fork on the machine failed; --hidden 10^7 grew to 15 GiB).
The limits (LIMITS, MAX_BATCH_X_HIDDEN) are far above any recipe (v2: 800 steps, batch 8, hidden 8, lr 5e-3, one
thread) and keep one training step of K3's toy within what a 2-core, 8-GiB machine survives. Peak memory of one
step (`--steps 1 --no-eval`, maximum RSS with torch loaded, measured 2026-12-05 on the 2-core AMD EPYC): batch 8
0.83 GiB, batch 64 1.9 GiB, hidden 256 1.5 GiB, batch 64 with hidden 256 5.4 GiB; so batch x hidden is capped
as well, at 4,096 (batch 64 at the toy's hidden 8 ... 64, or batch 16 at hidden 256: about 2-3 GiB by those
four points).

`--out` is checked as the guarded writer will check it (compute.guards.safe_write.check_target: not empty, not a
folder, a device, a FIFO, a socket or a link, in a folder this user can write); `--init`, `--evaluate` and
`--score FILE` are read through compute.weights (the guarded reader: a regular file, bounded, every array and the
metadata checked) and must be for the model being trained or scored; `--evaluate` also rewrites its FILE, so it is
checked as a target too.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from compute.training.train_recipes import RECIPES

PROG = "python -m compute.training.train"

# option -> (lowest, highest, why the highest): ints and floats; a float must also be finite
LIMITS = {
    "threads": (1, None, "this machine's CPU count"),
    "hidden": (1, 256, "32 times the toy's 8; memory grows with it"),
    "batch": (1, 64, "8 times the recipe's 8"),
    "steps": (1, 100_000, "125 times the recipe's 800, ~1 s each"),
    "lr": (0.0, 1.0, "Adam with clipped gradients; the recipe's is 5e-3"),
    "seed": (0, 2 ** 32 - 1, "numpy's and torch's seed range"),
    "time_limit": (0.0, 7 * 86400.0, "a week"),
    "repeat_weight": (1, 100, "the recipe's is 2"),
}
MAX_BATCH_X_HIDDEN = 4096  # memory grows with their product (the module docstring's measurements)
OPEN_LOW = ("lr", "time_limit")  # must be above the lowest value, not equal to it


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block: the same form as the value checks
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    from compute.config import available_configs

    ap = _Parser(prog=PROG, description="Train the toy K3 on the synthetic bilingual language of compute.language.task, "
                                        "and write the weights asset.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None,
                    help="the weights file to write (default: the model's own toy file, default_out: K3's shipped "
                         "file only for K3)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1: the toy's ops are tiny; 2 threads on a busy 2-core machine is slower)")
    ap.add_argument("--hidden", type=int, default=None, help="toy hidden width (default: ToyDims)")
    ap.add_argument("--config", default=None, metavar="NAME|FILE",
                    help="the model to train: a bundled config's name (" + ", ".join(available_configs()) +
                         ") or a config.json path (default: kimi-k3)")
    ap.add_argument("--time-limit", type=float, default=None, help="stop training after this many seconds")
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--init", default=None, help="start from this weights file (a later training stage)")
    ap.add_argument("--repeat-weight", type=int, default=1,
                    help="draw the two-sentence documents (K3, E3: the object repeated) N times as often")
    ap.add_argument("--soft", action="store_true",
                    help="train against the language's next-piece distribution (soft targets) instead of the drawn piece")
    ap.add_argument("--portable", action="store_true",
                    help="every matmul without MKL (compute.training.train_portable): the same losses whatever MKL picks on "
                         "this CPU; not the shipped file's numbers, so not with --recipe")
    ap.add_argument("--recipe", choices=sorted(RECIPES), default=None,
                    help="run a shipped file's training stages in order (RECIPES; the stage options are ignored)")
    ap.add_argument("--evaluate", default=None, metavar="FILE",
                    help="do not train: score FILE (and the random model) and store the scores in its report")
    ap.add_argument("--verify", default=None, metavar="FILE",
                    help="do not train: compare FILE with the shipped toy (bit for bit where the CPU class is the "
                         "recording machine's, else its scores; exit 0 = it passes)")
    ap.add_argument("--score", nargs="?", const="", default=None, metavar="FILE",
                    help="do not train: greedy completion of every proper prefix of every document, for FILE (default:"
                         " the shipped weights) and the random model; prints the language x pattern x cut table")
    return ap


def _num(v) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def _limit_text(name: str) -> str:
    lo, hi, why = LIMITS[name]
    hi = (os.cpu_count() or 1) if hi is None else hi
    low = f"above {_num(lo)}" if name in OPEN_LOW else f"at least {_num(lo)}"
    return f"{low} and at most {_num(hi)} ({why})"


def check_values(a: argparse.Namespace, ap: argparse.ArgumentParser) -> None:
    """ap.error (one line, exit 2) for the first value outside LIMITS."""
    for name, (lo, hi, _) in LIMITS.items():
        v = getattr(a, name)
        if v is None:
            continue
        hi = (os.cpu_count() or 1) if hi is None else hi
        flag = "--" + name.replace("_", "-")
        if isinstance(v, float) and not math.isfinite(v):
            ap.error(f"{flag} {v}: not a finite number; it must be {_limit_text(name)}")
        if v < lo or v > hi or (name in OPEN_LOW and v == lo):
            ap.error(f"{flag} {_brief(v)}: out of range; it must be {_limit_text(name)}")
    hidden = 8 if a.hidden is None else a.hidden
    if a.batch * hidden > MAX_BATCH_X_HIDDEN:
        ap.error(f"--batch {a.batch} with --hidden {hidden}: batch x hidden is {a.batch * hidden:,}; it must be at "
                 f"most {MAX_BATCH_X_HIDDEN:,} (one step's memory grows with both)")


def _weights_ok(ap, flag: str, path: str, config, dims) -> None:
    """ap.error unless `path` is a weights file (read through the guarded reader) for this config and dims."""
    from compute import weights as weights_io
    from compute.engine import dims_dict
    from compute.guards.guarded_io import show_path
    from compute.language.tokenizer import TOY_PIECES

    if not path:
        ap.error(f"{flag}: the file name is empty")
    try:
        weights_io.read(path, expected=weights_io.layout_shapes(config, dims, len(TOY_PIECES)),
                        check=lambda m: weights_io.check_meta(m, config.name, dims_dict(dims), list(TOY_PIECES),
                                                              f"weights file {show_path(Path(path).name, 80)}"))
    except (weights_io.WeightsError, OSError) as e:
        ap.error(f"{flag} {show_path(path, 120)}: {_one_line(e)}")


def _brief(v) -> str:
    text = _num(v) if isinstance(v, float) else str(v)
    return text if len(text) <= 24 else text[:10] + "..." + text[-10:]


def _shown(path) -> str:
    from compute.guards.guarded_io import show_path

    return repr(path) if not str(path).strip() else show_path(path, 120)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 300 else text[:297] + "..."


def parse(argv: list[str] | None = None):
    """(args, config, dims) once every argument is checked; SystemExit(2) with one line on the first bad one.
    Imports no torch."""
    from compute.guards import safe_write
    from compute.config import ConfigError
    from compute.engine import ToyDims

    ap = parser()
    a = ap.parse_args(argv)
    check_values(a, ap)
    try:
        dims = ToyDims() if a.hidden is None else ToyDims(hidden=a.hidden)
    except (TypeError, ValueError) as e:
        ap.error(f"--hidden {a.hidden}: {_one_line(e)}")
    try:
        config = _config(a.config)
    except (ConfigError, OSError, ValueError) as e:
        ap.error(_one_line(e))
    if a.out is None:
        a.out = str(default_out(a.config, config))
    if a.verify is not None:
        if not a.verify:
            ap.error("--verify: the file name is empty")
        return a, config, dims
    if a.score is not None:
        if a.score:
            _weights_ok(ap, "--score", a.score, config, ToyDims())
        return a, config, dims
    if a.evaluate is not None:
        _weights_ok(ap, "--evaluate", a.evaluate, config, ToyDims())
        try:
            safe_write.probe(a.evaluate)  # its scores are written back into it
        except safe_write.WriteError as e:
            ap.error(f"--evaluate {_shown(a.evaluate)}: {e.reason}")
        return a, config, dims
    if a.recipe is not None and a.init is not None:
        ap.error("--recipe starts from the seed: it cannot take --init")
    if a.recipe is not None and a.portable:
        ap.error("--recipe runs a shipped file's stages as they were trained (through MKL): it cannot take --portable")
    if a.init is not None:
        _weights_ok(ap, "--init", a.init, config, dims)
    try:  # a file made and removed in its folder: the end of a long run cannot fail there
        safe_write.probe(a.out, make_folder=True)
    except safe_write.WriteError as e:
        ap.error(f"--out {_shown(a.out)}: {e.reason}")
    return a, config, dims


def default_out(name: str | None, config) -> Path:
    """Where a run without --out writes: a bundled model's own toy file in assets/weights (its SHIPPED_TOYS entry's,
    else toy-<name>-v2.npz, what `make weights MODEL=<name>` writes), K3's shipped file only for K3 itself (no
    --config, or --config kimi-k3); a config.json's run writes toy-<its name>-v2.npz in the current folder (the name
    cut to letters, digits, '.', '_' and '-'), never into the shipped assets whatever name the file gives itself."""
    import re

    from compute import weights as weights_io
    from compute.config import available_configs

    if name is None or name in available_configs():
        if weights_io.shipped_toy(config.name) is not None:
            return weights_io.shipped_path(config.name)
        from assets import asset_path

        return asset_path("weights", f"toy-{config.name}-{weights_io.ASSET_VERSION}.npz")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", config.name).strip(".-")[:64] or "model"
    return Path.cwd() / f"toy-{safe}-{weights_io.ASSET_VERSION}.npz"


def _config(name: str | None):
    """The bundled config of that name, a config.json path, or K3's (None)."""
    from compute.config import ModelConfig, available_configs, load_default

    if name is None:
        return load_default()
    bundled = available_configs()
    return ModelConfig.from_json(bundled[name] if name in bundled else Path(name))


def run_without_torch(a, config, dims) -> int | None:
    """Run --verify or --score (they need no torch) and return the exit code; None for the other commands."""
    if a.verify is not None:
        from compute.training.rebuild_check import verify_file

        return verify_file(a.verify)
    if a.score is not None:
        from compute.training.train_eval import score_file

        return score_file(a.score or None, config, a.seed)
    return None
