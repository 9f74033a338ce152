"""Scoring the toy's weights through the engine (compute.engine.ToyK3, the app's code path) for compute.training.train:
generation, held-out next-token accuracy, the grammatical-completion rate at a few temperatures / top-p, the
every-prefix table (`--score`), scores stored in a file's report (`--evaluate`) and the check of a rebuilt file
against the shipped toy (`--verify`, what `make weights` runs: compute.training.rebuild_check), and the provenance a written
file records. torch is optional here: with
it the engine's forwards run under inference_mode."""
from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from compute.training import prefix_score, sample_score
from compute.language import task
from compute import weights as weights_io
from compute.config import ModelConfig
from compute.engine import ToyK3
from compute.ops.sampling import pass_uniforms, sample_logits
from compute.language.tokenizer import TOY_PIECES
from compute.trace import Knobs


def piece_rows() -> dict[str, int]:
    """Toy piece → its row in the vocabulary (TOY_PIECES)."""
    return {p: i for i, p in enumerate(TOY_PIECES)}


def _no_grad():
    try:
        import torch
    except ImportError:
        return contextlib.nullcontext()
    return torch.inference_mode()


def generate(engine: ToyK3, prompt: str, knobs: Knobs, max_new: int = 16) -> list[str]:
    """The engine's pieces after `prompt` (its forward with caches, its sampling), stopping after "\\n"."""
    ids = [i for _, i in engine.tokenizer.encode(prompt)]
    us = pass_uniforms(knobs.sample_seed, max_new)
    out: list[str] = []
    caches = None
    start = 0
    with _no_grad():
        for i in range(max_new):
            _, caches, logits = engine.forward(ids, start, knobs, caches)
            _, tok = sample_logits(np.asarray(logits[-1]), knobs, us[i])
            piece, tid = engine.vocab[tok]
            out.append(piece)
            if piece == task.END:
                break
            start += len(ids)
            ids = [tid]
    return out


def next_token_accuracy(engine: ToyK3, docs: list[task.Document]) -> dict:
    """Teacher-forced next-token accuracy (argmax) over the documents' pieces, through the engine; also on
    the positions where the grammar allows exactly one next piece ("determined": particles, endings, the
    repeated object's particle, punctuation ...)."""
    rows = piece_rows()
    hit = n = hit_det = n_det = 0
    with _no_grad():
        for d in docs:
            ids = [engine.vocab[rows[p]][1] for p in d.pieces]
            _, _, logits = engine.forward(ids, 0, Knobs())
            pred = np.asarray(logits).argmax(-1)
            for t in range(len(ids) - 1):
                ok = int(pred[t] == rows[d.pieces[t + 1]])
                hit += ok
                n += 1
                if len(task.allowed_next(d.pieces[: t + 1])) == 1:
                    hit_det += ok
                    n_det += 1
    return {"next_token_acc": round(hit / n, 4), "determined_acc": round(hit_det / max(n_det, 1), 4),
            "positions": n, "determined_positions": n_det}


def completion_rate(engine: ToyK3, prompts: list[str], knobs: Knobs) -> dict:
    """Share of prompts whose completion (up to "\\n") makes a whole document; distinct completions."""
    ok = 0
    outs = []
    for i, p in enumerate(prompts):
        k = Knobs(temperature=knobs.temperature, top_p=knobs.top_p, sample_seed=knobs.sample_seed + i)
        comp = generate(engine, p, k)
        outs.append("".join(comp))
        ok += task.completion_grammatical(p, comp)
    return {"grammatical_rate": round(ok / len(prompts), 4), "n_prompts": len(prompts),
            "distinct_completions": len(set(outs))}


def evaluate(engine: ToyK3, seed: int = 0, prompt_stride: int = 2, sampling: bool = True) -> dict:
    """The report's scores for one engine (every `prompt_stride`-th held-out prompt)."""
    held = task.split(seed)[1]
    prompts = task.held_out_prompts(seed)[::prompt_stride]
    out = {"weights": engine.weights_name}
    out.update(next_token_accuracy(engine, held))
    out["t0"] = completion_rate(engine, prompts, Knobs(temperature=0.0))
    if sampling:
        # temperature / top-p on the prompts that open a sentence's free choices (after the object)
        free = [p for p in prompts if task._tokenizer().split(p)[-1] in ("을", "를") or
                task.piece_type(task._tokenizer().split(p)[-1]) == "object"]
        out["sampling"] = {f"T={t},top_p={tp}": completion_rate(engine, free, Knobs(temperature=t, top_p=tp))
                           for t, tp in ((0.0, 1.0), (0.7, 1.0), (1.0, 1.0), (1.5, 1.0), (1.5, 0.5), (3.0, 1.0))}
    return out


def provenance(recipe: str | None, stages, seed: int, threads: int | None = None, out=None) -> dict:
    """What a written file was made with: the recipe (its name and stages; None for a hand-run stage), the seed,
    the torch thread count and ATen's CPU kernels (the instruction set: compute.training.train pins AVX2), the numpy / torch /
    numba / Python versions, the machine, the CPU (compute.training.cpu_info: vendor, model, flags, its class: where a
    rebuild is bit for bit), and the git commit of the checkout (with `commit_dirty`: tracked files
    other than `out`, the file being written, differed from it; None outside a git checkout)."""
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    def ver(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    root = Path(__file__).resolve().parents[2]
    commit = dirty = None
    try:
        run = dict(cwd=root, capture_output=True, text=True, timeout=10, check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.strip() or None
        skip = []
        if out is not None and Path(out).resolve().is_relative_to(root):
            skip = [f":(exclude){Path(out).resolve().relative_to(root).as_posix()}"]
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *skip],
                                    **run).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    from compute.training.cpu_info import cpu_info

    cpu = cpu_info()
    return {"recipe": recipe, "stages": None if stages is None else [dict(s) for s in stages],
            "seed": seed, "threads": threads, "numpy": ver("numpy"), "torch": ver("torch"), "numba": ver("numba"),
            "python": platform.python_version(), "machine": platform.machine(),
            "aten_cpu_capability": cpu["aten_cpu_capability"], "cpu": cpu, "commit": commit, "commit_dirty": dirty}


def score_file(path: str | None, config: ModelConfig, seed: int) -> int:
    """Every-prefix greedy scores (compute.training.prefix_score) of a weights file and of the random model, and the
    trained one's sampled answers at SAMPLED_KNOBS (compute.training.sample_score): the tables on stderr, one JSON line on
    stdout."""
    out = {}
    for name, weights in (("trained", "trained"), ("random", "random")):
        engine = ToyK3(config, seed=seed, device="cpu", weights=weights,
                       weights_path=path if weights == "trained" else None)
        t0 = time.perf_counter()
        # random weights rarely reach a newline, so every prefix costs up to 24 fresh forwards of a growing text:
        # every 50th document is enough to show the floor (every 10th took 28 min on a loaded 2-core machine)
        docs = None if name == "trained" else task.all_documents()[::50]
        r = prefix_score.score_prefixes(prefix_score.engine_argmax(engine), docs=docs)
        note = "" if docs is None else f", every 50th document ({len(docs)})"
        print(f"# {name} weights ({engine.weights_name}{note})\n{prefix_score.format_table(r)}", file=sys.stderr)
        out[name] = {k: r[k] for k in ("by_lang", "held_out", "total", "forwards")}
        out[name]["failures"] = r["failures"][:10]
        if name == "trained":
            sampled = sample_score.score_sampled(sample_score.engine_logits(engine), [p for p, _ in engine.vocab],
                                                 SAMPLED_KNOBS, seeds=range(10))
            print(f"# sampled answers, 10 seeds x every prefix (whole%: whole documents; distinct: different whole "
                  f"answers / different answers a prefix gets)\n{sample_score.format_sampled(sampled)}", file=sys.stderr)
            out[name]["sampled"] = {k: v for k, v in sampled.items() if k != "forwards"}
        out[name]["score_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out, ensure_ascii=False))
    return 0


# (temperature, top_p) of the sampled table: the app's default first (Knobs()), then temperature and top-p apart
SAMPLED_KNOBS = tuple(dict.fromkeys([(Knobs().temperature, Knobs().top_p), (0.5, 1.0), (1.0, 1.0), (1.5, 1.0),
                                     (1.0, 0.9), (1.5, 0.9)]))


def evaluate_file(path: str, config: ModelConfig, seed: int) -> int:
    """Score a weights file through the engine next to the random model; write the scores into its report."""
    t0 = time.perf_counter()
    packed, meta = weights_io.read(path)
    trained = ToyK3(config, seed=seed, device="cpu", weights="trained", weights_path=path)
    random_ = ToyK3(config, seed=seed, device="cpu", weights="random")
    report = dict(meta.get("report", {}))
    report["eval"] = {"trained": evaluate(trained, seed),
                      "random": evaluate(random_, seed, prompt_stride=4, sampling=False)}
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version")}
    meta["report"] = report  # no timing in the file (compute.training.train.without_timings): same weights, same bytes
    weights_io.save(path, weights_io.unpack(packed, trained.weight_shapes()), meta)
    print(json.dumps({**report["eval"], "eval_s": round(time.perf_counter() - t0, 1)}, ensure_ascii=False))
    return 0


__all__ = ["generate", "next_token_accuracy", "completion_rate", "evaluate", "score_file", "evaluate_file",
           "piece_rows", "provenance"]
