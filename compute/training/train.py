"""Train the toy K3 on the synthetic bilingual language of compute.language.task, and write the weights asset.

    python -m compute.training.train --recipe v2 --out assets/weights/toy-k3-v2.npz     # what `make weights` runs

The shipped recipe (RECIPES["v2"]) is one stage from the seed: 800 steps of batch 8 (20 pieces a row), lr 5e-3
(warm-up 20 steps, cosine decay), the two-sentence documents drawn twice as often (`--repeat-weight 2`), one torch
thread, and SOFT targets (`--soft`): each position is trained against the language's distribution of the next
piece given the document so far (next_piece_table, counted over the drawn training documents: held-out pairs never
enter) instead of the one piece the row happens to hold. The expected gradient is the same; the noise of the free
choices (which object, verb, place) is gone, and that is what taught the toy to repeat the object: the same 800
steps with one-hot targets (repeat weight 3) left English at 83.6 % on the every-prefix score below, soft targets
reach 100 % (by hand: `--seed 0 --steps 800 --lr 5e-3 --repeat-weight 2 --soft --out FILE`). A recipe of several
stages (v1, the toy shipped before) continues each from the previous stage's written file with a fresh Adam.
`make weights` runs the recipe from scratch into the shipped path and then `--verify`s it (compute.training.rebuild_check):
its weights against the digest the repository records (compute.weights.SHIPPED_TOY; assets/weights/SHA256SUMS has
the shipped file's sha256) on the shipped file's CPU class, its scores against the shipped file's elsewhere. Every
argument is checked before torch loads (compute.training.train_cli), and the file is written by compute.guards.safe_write. A
written file records the recipe, seed, threads, ATen's kernels, numpy / torch / numba / Python versions, machine,
CPU and git commit, and no wall-clock figure (without_timings: they go to the printed report), so
the same recipe at the same commit and library versions writes the same file, byte for byte, on the same CPU class
(compute.training.cpu_info: float32 matmuls go through MKL, whose kernels differ between Intel and AMD; the file records its
CPU, and `--verify` elsewhere compares scores: compute.training.rebuild_check).

Scores of the shipped file (`python -m compute.training.train --score`, through the engine, float32): greedy completion of
every proper prefix of every document (10,560 prompts) forms a whole document 100.0 % in Korean and in English,
99.9 % on the held-out pairs, the repeated object right 100 %; sampled answers (10 seeds x every prefix) at the
app's default knobs (T = 1, top-p = 1) 91.9 % whole documents, T = 0.5 98.2 %, T = 1.5 65.4 %.

`--config NAME|FILE` trains any config (a bundled name or a config.json); shipped toys: weights.SHIPPED_TOYS.

The model is the engine's: the config's 93 layers in K3's order (KDA ×69 and Gated MLA ×24, a dense first
layer, the latent MoE with the config's 896 experts and top-16 in the other 92, Block Attention Residuals every
12 layers), at the engine's toy dims (compute.engine.ToyDims), run through the engine's own operators
(compute.ops.kda, .mla, .moe, .attnres, .norms) on torch tensors with autograd, batched:

- per-token operators (RMSNorm, AttnRes, router, experts, dense MLP) take the B·T tokens as one [B·T, D] batch;
- the mixers are the engine's own compute.ops.kda.kda_layer and compute.ops.mla.mla_layer given a batch [B, T, D]
  (their batch axis: KDA's depthwise short conv takes the batch as extra channels, kda_chunked its batch
  dimension, one chunk of T tokens; MLA's causal attention takes the batch as extra heads — exact, as the conv
  is per channel and attention per head). Training has no layer code of its own.

`batch_forward` equals the engine's forward on each sequence — the operators on torch and numpy and
the numba pass, for K3 and tiny configs of every block kind (tests/compute/test_train.py).

The router bias is not trained by gradient: after every step each MoE layer's bias is set by Quantile
Balancing (compute.ops.moe.quantile_balance) from that batch's router scores, the bias for the next batch, as
in K3 (docs/spec/k3-math.md §3). Everything else is trained with Adam (warm-up, cosine decay, gradient clipping)
in float32. Deterministic from the seed on one CPU class (torch.manual_seed, fixed thread count, seeded data order,
ATen's AVX2 kernels on x86: the pin below; MKL's sgemm is the CPU's: compute.training.cpu_info).

At the end the weights are written (compute.weights: BF16 bits where it fits) and the WRITTEN file is scored
through the engine (ToyK3, float32, the app's path) next to the seeded random model (held-out next-token accuracy,
T=0 and sampled grammatical rates); one JSON report is printed.
"""
from __future__ import annotations

import json
import math
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

if __name__ == "__main__":  # the command: every argument checked before torch loads (a typo costs no 30-s import)
    from compute.training.train_cli import parse as _parse, run_without_torch as _run_without_torch

    _ARGS = _parse(sys.argv[1:])
    if (_code := _run_without_torch(*_ARGS)) is not None:  # --verify, --score: no torch needed
        sys.exit(_code)

# Fewer differences across x86 CPUs: ATen's vectorised kernels round differently by instruction set (on AVX-512 the
# recipe left the shipped weights at step 2), so training runs its AVX2 ones, as the shipped file did, unless
# ATEN_CPU_CAPABILITY says otherwise (read at torch's first dispatch). MKL keeps its default, which is not the same
# on Intel and AMD (MKL_CBWR=AVX2 / COMPATIBLE did not make them agree: compute.training.cpu_info), so a rebuild is bit for
# bit on the shipped file's CPU class only.
if platform.machine() in ("x86_64", "AMD64"):
    os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")

try:
    import torch
except ImportError:  # --score needs no torch; training does (main() says how to install it)
    torch = None

from compute.language import task
from compute import weights as weights_io
from compute.ops.attnres import BlockAttnRes, PlainResidual
from compute.config import ModelConfig, load_default
from compute.dims import OpArgs
from compute.engine import ToyDims, ToyK3, dims_dict
from compute.ops.kda import kda_layer
from compute.ops.mla import mla_layer
from compute.ops.moe import dense_mlp, latent_moe, quantile_balance
from compute.ops.norms import rms_norm
from compute.language.tokenizer import TOY_PIECES
from compute.training.train_recipes import RECIPES, STAGE_KEYS  # noqa: F401 - API
from compute.training.rebuild_check import verify_file  # noqa: F401 - API
from compute.training.train_cli import parse, run_without_torch
from compute.training.train_eval import (evaluate, evaluate_file, generate, piece_rows,  # noqa: F401 - API
                                 provenance, score_file)

SEQ_LEN = 20  # pieces per training row: a whole document (at most 17) and the start of the next


# ---------------------------------------------------------------------------------------------------- model
def init_params(config: ModelConfig, dims: ToyDims, seed: int) -> dict:
    """Trainable float32 weights in the engine's layout ({"layers": [...], "embedding", ...}).

    The engine's random layout (shapes, order) with a training init: output projections small so each layer
    starts near the identity, norms at 1, AttnRes pseudo-queries at 0 (uniform mixing), router bias 0."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=1.0):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * scale

    def uni(n, lo, hi):
        return torch.empty(n, dtype=torch.float64).uniform_(lo, hi, generator=g)

    emb, head, fn, wo, layers = weights_io.draw_layout(config, dims, len(TOY_PIECES), rnd, uni)
    small = 0.1
    for w in layers:
        w["norm_mixer"].fill_(1.0)
        w["norm_ffn"].fill_(1.0)
        w["w_attn"].zero_()
        w["w_mlp"].zero_()
        if "kda" in w:
            w["kda"]["o"] *= small
            w["kda"]["o_norm"].fill_(1.0)
        if "mla" in w:
            w["mla"]["o"] *= small
            for k in ("q_a_norm", "kv_a_norm"):
                w["mla"][k].fill_(1.0)
        if "mlp" in w:
            w["mlp"]["down"] *= small
        if "moe" in w:
            mw = w["moe"]
            mw["bias"].zero_()
            if mw["up"] is not None:  # a latent MoE (K3)
                mw["up"] *= small
                mw["norm"].fill_(1.0)
            if mw["shared2"] is not None:
                mw["shared2"] *= small
    fn.fill_(1.0)
    wo.zero_()
    head *= 0.5

    def f32(obj):
        if isinstance(obj, dict):
            return {k: f32(v) for k, v in obj.items()}
        if obj is None:
            return None
        return obj.to(torch.float32).requires_grad_(True)

    P = {"layers": [f32(w) for w in layers], "embedding": f32(emb), "lm_head": f32(head),
         "final_norm": f32(fn), "w_out": f32(wo)}
    for w in P["layers"]:
        if "moe" in w:
            w["moe"]["bias"].requires_grad_(False)  # set by Quantile Balancing, not by gradient
    return P


def trainable(P: dict) -> list[torch.Tensor]:
    out = []

    def walk(o):
        if isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        elif isinstance(o, torch.Tensor) and o.requires_grad:
            out.append(o)

    walk(P)
    return out


def batch_forward(P: dict, ids: torch.Tensor, config: ModelConfig, dims: ToyDims
                  ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits [B, T, V] for token rows ids [B, T] (each row starts at position 0), and each MoE layer's router
    scores s [B·T, E] (for Quantile Balancing)."""
    c = config
    args = OpArgs.of(c, dims)  # as the engine
    B, T = ids.shape
    eps = c.rms_norm_eps
    ar = BlockAttnRes(c.attn_res_block_size, eps=1e-6) if c.attn_res_block_size else PlainResidual()
    positions = torch.arange(T)
    ar.start(P["embedding"][ids.reshape(-1)])
    scores = []
    for li, w in enumerate(P["layers"]):
        x, _ = ar.before_mixer(li, w["w_attn"])
        xn = rms_norm(x, w["norm_mixer"], eps).reshape(B, T, -1)
        if "kda" in w:  # the engine's operators with a batch axis: one chunk of T tokens
            a = kda_layer(xn, w["kda"], args, chunk_size=max(T, 1))[0]
        else:
            a = mla_layer(xn, w["mla"], args, positions)[0]
        a = a.reshape(B * T, -1)
        x2, _ = ar.after_mixer(a, w["w_mlp"])
        xn2 = rms_norm(x2, w["norm_ffn"], eps)
        if "mlp" in w:
            f, _ = dense_mlp(xn2, w["mlp"], args)
        else:
            mw = w["moe"]
            f, ft = latent_moe(xn2, mw, args, mw["bias"])
            scores.append(ft["moe.router"])
        ar.after_ffn(f)
    h, _ = ar.final(P["w_out"])
    logits = rms_norm(h, P["final_norm"], eps) @ P["lm_head"]
    return logits.reshape(B, T, -1), scores


def quantile_balance_step(P: dict, scores: list[torch.Tensor], top_k: int) -> None:
    """Every MoE layer's bias ← quantile_balance(this batch's scores, bias): the bias for the next batch."""
    moe = [w["moe"] for w in P["layers"] if "moe" in w]
    with torch.no_grad():  # the operator's numpy spelling: np.partition is ~6x faster than torch.topk on a CPU
        for mw, s in zip(moe, scores):
            mw["bias"].copy_(torch.from_numpy(quantile_balance(s.detach().numpy(), mw["bias"].numpy(), top_k)))


# ---------------------------------------------------------------------------------------------------- data
def batch_ids(docs: list[task.Document], B: int, T: int, rng: random.Random) -> torch.Tensor:
    rows = piece_rows()
    return torch.tensor([[rows[p] for p in task.sample_stream(docs, T, rng)] for _ in range(B)])


def next_piece_table(docs: list[task.Document]) -> dict[tuple[int, ...], tuple[list[int], list[float]]]:
    """The language's next-piece distribution as the training data draws it: every prefix of a document (as vocabulary
    rows, from the document's start) → (rows that follow it, their probabilities), counted over `docs` (a weighted
    list such as `weighted_docs`'s; the held-out documents are not in it)."""
    rows = piece_rows()
    counts: dict[tuple[int, ...], dict[int, int]] = {}
    for d in docs:
        r = [rows[p] for p in d.pieces]
        for i in range(len(r)):
            c = counts.setdefault(tuple(r[:i]), {})
            c[r[i]] = c.get(r[i], 0) + 1
    out = {}
    for k, c in counts.items():
        n = sum(c.values())
        out[k] = (list(c), [v / n for v in c.values()])
    return out


def soft_targets(ids: torch.Tensor, table: dict, vocab: int) -> torch.Tensor:
    """Target distributions [B, T-1, V] for the next piece after each position of token rows ids [B, T] (each row
    starts at a document start): the language's distribution given the current document so far (table:
    `next_piece_table`), instead of the one piece the row happens to hold. Same expected gradient as the one-hot
    targets, far less noise: the object, verb and place choices stop pulling the weights around at random."""
    B, T = ids.shape
    end = piece_rows()[task.END]
    out = torch.zeros(B, T - 1, vocab)
    for b, row in enumerate(ids.tolist()):
        start = 0
        for t in range(T - 1):
            if row[t] == end:
                start = t + 1
            cols, probs = table[tuple(row[start:t + 1])] if t + 1 > start else table[()]
            out[b, t, cols] = torch.tensor(probs)
    return out


def weighted_docs(docs: list[task.Document], repeat_weight: int) -> list[task.Document]:
    """The documents to draw from, each two-sentence document (K3, E3) `repeat_weight` times (1: `docs`
    itself, so the draws are those of an unweighted run)."""
    if repeat_weight < 1:
        raise ValueError(f"repeat weight must be at least 1, got {repeat_weight}")
    return [d for d in docs for _ in range(repeat_weight if d.pattern in ("K3", "E3") else 1)]


def loss_of(P, ids, config, dims, targets: torch.Tensor | None = None):
    """Mean cross-entropy of the next piece: against the rows' own next pieces, or against `targets` [B, T-1, V]
    (soft_targets) when given."""
    logits, scores = batch_forward(P, ids, config, dims)
    V = logits.shape[-1]
    if targets is None:
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
    else:
        loss = -(targets * torch.log_softmax(logits[:, :-1], -1)).sum(-1).mean()
    return loss, logits, scores


# ---------------------------------------------------------------------------------------------------- training
def train(seed: int = 0, steps: int = 300, batch: int = 8, lr: float = 5e-3, warmup: int = 20,
          threads: int = 1, seq_len: int = SEQ_LEN, dims: ToyDims | None = None, config: ModelConfig | None = None,
          time_limit_s: float | None = None, log=None, init: str | Path | None = None,
          repeat_weight: int = 1, stop_after: int | None = None, soft: bool = False, portable: bool = False
          ) -> tuple[dict, dict]:
    """Train from the seed (from the weights file `init` instead of the fresh init when given: a later
    stage). `repeat_weight` draws the two-sentence documents (K3, E3: the object repeated) that many times as
    often as the others. stop_after: stop after that many of the `steps` steps (the schedule stays that of
    `steps`: the first steps of a recipe's stage, as the fast test runs them). Returns (params, report); the
    report's "losses" are every step's training loss. portable: every matmul without MKL (compute.training.train_portable:
    the same numbers on any CPU running ATen's AVX2 kernels; not the shipped file's numbers)."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    config = config or load_default()
    dims = dims or ToyDims()
    P = init_params(config, dims, seed)
    if init is not None:
        load_into(P, init, config, dims)
    params = trainable(P)
    opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-8, foreach=True)
    train_docs, held_docs = task.split(seed)
    mix = weighted_docs(train_docs, repeat_weight)
    table = next_piece_table(mix) if soft else None
    V = len(TOY_PIECES)
    rng = random.Random(seed)
    held = batch_ids(held_docs, 32, seq_len, random.Random(seed + 1))
    curve, losses = [], []
    t0 = time.perf_counter()
    step = 0
    with _portable_mode(portable):  # (portable: the matmuls without MKL)
        for step in range(1, (steps if stop_after is None else min(steps, stop_after)) + 1):
            f = min(1.0, step / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, step / steps)))
            for gr in opt.param_groups:
                gr["lr"] = lr * max(f, 0.02)
            ids = batch_ids(mix, batch, seq_len, rng)
            loss, _, scores = loss_of(P, ids, config, dims, None if table is None else soft_targets(ids, table, V))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
            opt.step()
            quantile_balance_step(P, scores, config.num_experts_per_tok)
            losses.append(round(float(loss.detach()), 6))
            if step % 25 == 0 or step == 1:
                with torch.no_grad():
                    hl, hlog, _ = loss_of(P, held, config, dims)
                    acc = float((hlog[:, :-1].argmax(-1) == held[:, 1:]).float().mean())
                rec = {"step": step, "loss": round(float(loss.detach()), 4), "held_loss": round(float(hl), 4),
                       "held_acc": round(acc, 4), "s": round(time.perf_counter() - t0, 1)}
                curve.append(rec)
                if log:
                    log(json.dumps(rec))
            if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
                break
    report = {"steps": step, "batch": batch, "seq_len": seq_len, "lr": lr, "repeat_weight": repeat_weight,
              "soft": soft, "threads": threads, "train_s": round(time.perf_counter() - t0, 1), "curve": curve,
              "first_loss": curve[0]["loss"], "final_loss": curve[-1]["loss"], "losses": losses,
              "n_train_docs": len(train_docs), "n_held_out_docs": len(held_docs)}
    if portable:
        report["portable"] = True
    return P, report


def _portable_mode(portable: bool):
    from compute.training import train_portable

    return train_portable.mode(portable)


def load_into(P: dict, path: str | Path, config: ModelConfig, dims: ToyDims) -> dict:
    """Overwrite the parameters (and router biases) with a weights file's; returns its metadata."""
    packed, meta = weights_io.read(path)
    weights_io.check_meta(meta, config.name, dims_dict(dims), list(TOY_PIECES), f"weights file {Path(path).name}")
    arrays = weights_io.unpack(packed, weights_io.layout_shapes(config, dims, len(TOY_PIECES)))
    with torch.no_grad():
        for k, v in weights_io.flatten_layout(P["layers"], {k: P[k] for k in weights_io.GLOBAL_KEYS}).items():
            v.copy_(torch.from_numpy(arrays[k]))
    return meta


def params_to_arrays(P: dict) -> dict[str, np.ndarray]:
    return weights_io.flatten(P["layers"], {k: P[k] for k in weights_io.GLOBAL_KEYS})


TIMING_KEYS = ("train_s", "eval_s", "wall_s", "s")


def without_timings(obj):
    """The report without its wall-clock figures (TIMING_KEYS, at any depth): what the file keeps, so that the same
    recipe, seed, libraries and commit give the same file, byte for byte (the timings go to the printed report)."""
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj


def write_asset(P: dict, path: str | Path, config: ModelConfig, dims: ToyDims, seed: int, report: dict,
                recipe: str | None = None) -> Path:
    """Write the weights with their metadata: config, dims, seed, vocabulary, the training report and
    `provenance` (how to make the file again)."""
    meta = {"config": config.name, "dims": dims_dict(dims), "seed": seed, "vocab": list(TOY_PIECES),
            "asset_version": weights_io.ASSET_VERSION, "task": "compute.language.task", "report": without_timings(report),
            "provenance": provenance(recipe, RECIPES.get(recipe), seed, report.get("threads"), out=path)}
    return weights_io.save(path, params_to_arrays(P), meta)


# ---------------------------------------------------------------------------------------------------- stages
# RECIPES, STAGE_KEYS: compute.training.train_recipes (torch-free: the command checks --recipe before torch loads)


def train_stage(stage: dict, out: str | Path, seed: int, config: ModelConfig, dims: ToyDims,
                init: str | Path | None = None, threads: int = 1, time_limit_s: float | None = None, log=None,
                seq_len: int = SEQ_LEN, warmup: int = 20, recipe: str | None = None) -> tuple[dict, dict, Path]:
    """One training stage ({"steps", "batch", "lr", "repeat_weight"}) from the seed or from the file `init`,
    written to `out` with the chain of stages so far in its report. Returns (params, report, path)."""
    P, report = train(seed, stage["steps"], stage.get("batch", 8), stage["lr"], warmup=warmup, threads=threads,
                      seq_len=seq_len, dims=dims, config=config, time_limit_s=time_limit_s, log=log, init=init,
                      repeat_weight=stage.get("repeat_weight", 1), soft=stage.get("soft", False),
                      portable=stage.get("portable", False))
    if init is not None:
        first = weights_io.read(init)[1].get("report", {})
        report["stages"] = first.get("stages", [{k: first.get(k) for k in STAGE_KEYS}])
        report["stages"].append({k: report[k] for k in STAGE_KEYS})
    else:
        report["stages"] = [{k: report[k] for k in STAGE_KEYS}]
    return P, report, write_asset(P, out, config, dims, seed, report, recipe)


def run_recipe(stages: tuple[dict, ...], out: str | Path, seed: int, config: ModelConfig, dims: ToyDims,
               threads: int = 1, log=None, seq_len: int = SEQ_LEN, warmup: int = 20, recipe: str | None = None
               ) -> tuple[dict, dict, Path]:
    """The stages in order, each written to `out` and continued from there (what running them one by one with
    --init does). Returns the last stage's (params, report, path). recipe: its name in RECIPES, recorded in the
    file's provenance."""
    path = None
    for i, stage in enumerate(stages):
        if log:
            log(json.dumps({"stage": i + 1, **stage}))
        P, report, path = train_stage(stage, out, seed, config, dims, init=path, threads=threads, log=log,
                                      seq_len=seq_len, warmup=warmup, recipe=recipe)
    return P, report, path


def main(argv: list[str] | None = None, parsed=None) -> int:
    """The command: every argument checked first (compute.training.train_cli.parse: one line and exit 2 for a bad one, before
    anything trains), then --verify / --score / --evaluate, or the training run (run_command). parsed: parse's
    result when the caller has it already."""
    a, config, dims = parse(argv) if parsed is None else parsed
    code = run_without_torch(a, config, dims)
    if code is not None:
        return code
    if torch is None:
        print("python -m compute.training.train: training needs PyTorch; its CPU build is enough: pip install torch "
              "--index-url https://download.pytorch.org/whl/cpu, then pip install '.[train]'", file=sys.stderr)
        return 2
    if a.evaluate is not None:
        return evaluate_file(a.evaluate, config, a.seed)
    return run_command(a, config, dims)


def run_command(a, config: ModelConfig, dims: ToyDims) -> int:
    """Train as the checked arguments `a` say (compute.training.train_cli.parse), write `a.out`, score the written file
    (unless --no-eval) and print the JSON report."""
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    from compute.training import cpu_info

    if a.recipe is not None and not cpu_info.is_recording_class():
        log(f"python -m compute.training.train: this CPU's class is {cpu_info.cpu_class()}, not the shipped file's "
            f"{cpu_info.SHIPPED_TOY_CPU_CLASS}: float32 rounds differently here, so the weights will not be the shipped "
            "file's bit for bit (--verify then compares their scores)")
    wall0 = time.perf_counter()
    try:
        if a.recipe is not None:
            P, report, path = run_recipe(RECIPES[a.recipe], a.out, a.seed, config, dims, threads=a.threads, log=log,
                                         recipe=a.recipe)
            report["recipe"] = a.recipe
        else:
            stage = {"steps": a.steps, "batch": a.batch, "lr": a.lr, "repeat_weight": a.repeat_weight, "soft": a.soft,
                     "portable": a.portable}
            P, report, path = train_stage(stage, a.out, a.seed, config, dims, init=a.init, threads=a.threads,
                                          time_limit_s=a.time_limit, log=log)
        if not a.no_eval and dims == ToyDims():
            trained = ToyK3(config, seed=a.seed, device="cpu", weights="trained", weights_path=path)
            random_ = ToyK3(config, seed=a.seed, device="cpu", weights="random")
            report["eval"] = {"trained": evaluate(trained, a.seed),
                              "random": evaluate(random_, a.seed, prompt_stride=4, sampling=False)}
            write_asset(P, path, config, dims, a.seed, report, a.recipe)  # the report travels with the weights
    except (OSError, weights_io.WeightsError) as e:  # e.g. the disk filled up: the old file is kept
        print(f"python -m compute.training.train: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    report["wall_s"] = round(time.perf_counter() - wall0, 1)
    report["file"] = str(path)
    report["file_bytes"] = Path(path).stat().st_size
    summary = dict(report)
    summary["curve"] = report["curve"][:: max(1, len(report["curve"]) // 8)] + report["curve"][-1:]
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(parsed=_ARGS))
