"""Benchmark of the toy K3 engine. Prints one JSON object (not a test; see BRIEF "Performance").

    python bench/engine.py [--repeats 15] [--device cpu] [--threads 1] [--causal-only]

run: a full ToyK3.run (6-token prompt + 4 generated tokens → 1 prefill + 3 decode passes over 93 layers),
including the trace's numpy conversion. resample: ToyK3.resample after a temperature / top-p change that
keeps the sampled tokens (the common slider case: no layer re-runs). torch_ops_per_run: aten ops dispatched
during one run (TorchDispatchMode counter), the floor of the eager per-op overhead; with the numpy backend
(the default on a CPU device) none: weights, embeddings, layers and sampling are numpy and the engine never
imports torch there (torch_imported_by_engine); torch is only imported here to count ops when it is installed
(null without it). weights_load_ms: reading, checking and unpacking the trained weights file
(compute.weights; target ≤ 200 ms); init_ms: the whole ToyK3() (weights, conversion, fused plans, and with
numba the compiled kernels' warm-up: a compile on an install's first start, a disk-cache load later).
engine_path: "compiled" (compute.fused_nb: one numba call per pass; --compiled on, the default, compiles into
the disk cache first when it is cold, and init_ms then includes that) or "numpy" (the operators' layer loop:
--compiled off, K3_NO_NUMBA=1 or no numba); compiled_kernels says the same as a bool. numpy_run_ms_median /
numpy_resample_ms_median: the numpy operators measured in the same run (null with --compiled off: the main
figures are those). explain_lens_attention_ms_median: compute.explain at EXPLAIN_PROMPT — the prefill, the logit
lens and every layer's attention row for the last position (target ≤ 20 ms); explain_route_ms_median: that plus
the direct contributions and one knock-out re-run per token (target ≤ 150 ms); explain_patch_residual /
explain_patch_heads / explain_causal_route / explain_sources_100 (_ms_median, _cpu_ms_median): the causal views
(issue 39: the (L+1) x T residual patching grid and the heads grid of EXPLAIN_PROMPT, its causal route, the
resample-ablation sources of a 100-token prompt of the language; targets 1, 1, 1 and 3 s on 2 cores);
*_cpu_ms_median: process CPU time. calib_numpy_add_us: one tiny numpy add (a floor of this machine right now, to compare runs
on a loaded machine: run_in_numpy_adds = run_ms_median / calib, load-robust). compile_cache_ready: fused_nb.cache_ready() before start.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compute.engine import ToyK3  # noqa: E402
from compute.trace import Knobs  # noqa: E402

PROMPT = "Kimi K3 reads the next token"  # 6 toy tokens
EXPLAIN_PROMPT = "아이가 상자를 집었다. 그리고"  # the app's default prompt (8 toy tokens): predicts ' 상자'


_CONVERSION_OPS = {"aten.detach.default", "aten.to.dtype_layout", "aten.resolve_conj.default",
                   "aten.resolve_neg.default"}  # what Tensor.numpy() dispatches (C++ side, cheap)


def _op_counter():
    """A TorchDispatchMode counting aten ops (torch imported here, only when installed), or None."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return None

    class OpCounter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.count = 0
            self.conversion = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.count += 1
            if str(func) in _CONVERSION_OPS:
                self.conversion += 1
            return func(*args, **(kwargs or {}))

    return OpCounter()


def _median_ms(fn, repeats, cpu=None):
    """(median wall ms, min wall ms); appends the median process-CPU ms to `cpu` when given (load-robust:
    on a shared machine the wall clock includes time spent waiting for a core, CPU time does not)."""
    times, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)
    if cpu is not None:
        cpu.append(statistics.median(cpus))
    return statistics.median(times), min(times)


def sources_prompt(n: int = 100) -> str:
    """The first n pieces of the toy language's documents (task order, every fifth one), as text."""
    from compute.language import task

    pieces: list[str] = []
    for d in task.all_documents()[::5]:
        pieces += d.pieces
        if len(pieces) >= n:
            break
    return "".join(pieces[:n])


def _causal(m, repeats: int) -> dict:
    """compute.explain's causal views at EXPLAIN_PROMPT on a fresh Explanation each time (wall and CPU ms
    medians): the residual patching grid (94 x 8), the heads grid (93 x 2), the causal route (186 block
    knock-outs and the prefix re-runs), and the sources of a 100-token prompt of the language (resample ablation)."""
    from compute.explain import Explanation

    def fresh(prompt=EXPLAIN_PROMPT):
        return Explanation.of_prompt(m, prompt)

    long_prompt = sources_prompt(100)
    assert len(m.encode_prompt(long_prompt)) == 100
    cases = {"patch_residual": lambda: fresh().patch(), "patch_heads": lambda: fresh().patch(sites="heads"),
             "causal_route": lambda: fresh().causal_route(), "sources_100": lambda: fresh(long_prompt).sources}
    out = {}
    for name, fn in cases.items():
        fn()  # warm-up (the float64 twin, the compiled MoE rows)
        cpu: list[float] = []
        med, _ = _median_ms(fn, repeats, cpu)
        out[f"explain_{name}_ms_median"] = round(med, 1)
        out[f"explain_{name}_cpu_ms_median"] = round(cpu[0], 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads for the torch backend (0 = leave torch's default)")
    ap.add_argument("--backend", default="auto", choices=("auto", "numpy", "torch"), help="ToyK3 backend")
    ap.add_argument("--compiled", default="on", choices=("on", "off", "auto"),
                    help="compiled pass (compute.fused_nb): on = compile if needed, auto = only if the disk cache "
                         "is ready (what the app's default engine does), off = the numpy operators")
    ap.add_argument("--causal-only", action="store_true",
                    help="only the causal views (explain_patch_* / causal_route / sources_100) and the load")
    args = ap.parse_args()
    from compute import fused_nb

    cache_ready = fused_nb.cache_ready()
    want = {"on": True, "off": False, "auto": None}[args.compiled]
    t0 = time.perf_counter()
    m = ToyK3(device=args.device, backend=args.backend, cpu_threads=args.threads or None, compiled=want)
    init_ms = (time.perf_counter() - t0) * 1e3
    if args.causal_only:
        out = {"engine_path": "compiled" if getattr(m, "compiled", False) else "numpy", "init_ms": round(init_ms, 1),
               **_causal(m, max(3, args.repeats // 5)), "cpu_count": os.cpu_count(),
               "load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}
        print(json.dumps(out))
        return
    wl_ms = None
    if m.weights_name == "trained":  # read + check + unpack the file again, as ToyK3 did (float64 dicts); the
        from compute.engine_weights import MEMO  # weights memo emptied first: a cold read, not a memo hit

        wl_ms, _ = _median_ms(lambda: (MEMO.clear(), m._load_trained(None)), 5)
    knobs = Knobs(temperature=0.8, top_p=0.95, sample_seed=0)
    m.run(PROMPT, 4, knobs)  # warm-up
    tr = m.run(PROMPT, 4, knobs)
    assert tr.prompt_len == 6 and len(tr.tokens) == 10
    run_cpu: list[float] = []
    run_med, run_min = _median_ms(lambda: m.run(PROMPT, 4, knobs), args.repeats, run_cpu)
    # a temperature / top-p change that keeps every sampled token (the common slider case)
    same = [q.final["sampled"] for q in tr.passes]
    cands = (Knobs(temperature=round(0.8 + d, 3), top_p=p, sample_seed=0)
             for p in (0.95, 0.96, 0.98, 0.99, 1.0) for d in (0.002, -0.002, 0.01, -0.01, 0.05, -0.05))
    kn2 = next((k for k in cands if [q.final["sampled"] for q in m.resample(tr, k).passes] == same), knobs)
    calls = m.layer_calls
    n_res = max(args.repeats, 50)
    res_cpu: list[float] = []
    res_med, res_min = _median_ms(lambda: m.resample(tr, kn2), n_res, res_cpu)
    layers_rerun = (m.layer_calls - calls) // n_res
    # a change that alters the first sampled token: the 3 decode passes re-run
    kn3 = next(k for k in (Knobs(temperature=3.0, sample_seed=s) for s in range(50))
               if m.resample(tr, k).passes[0].final["sampled"] != tr.passes[0].final["sampled"])
    rerun_med, _ = _median_ms(lambda: m.resample(tr, kn3), max(3, args.repeats // 2))
    torch_by_engine = "torch" in sys.modules  # before this script imports it to count ops
    oc = _op_counter()
    if oc is not None:
        import torch

        xa = torch.randn(1, 8)  # per-op cost of this machine right now (to compare runs on loaded machines)
        with torch.inference_mode():
            add_med, _ = _median_ms(lambda: [xa + xa for _ in range(1000)], 5)
        with torch.inference_mode(), oc:
            m.run(PROMPT, 4, knobs)
    # one decode pass alone (per-token cost)
    data, caches, _ = m.forward([tid for _, tid in tr.tokens[:6]], 0, knobs, None)
    ids = [tr.tokens[6][1]]
    dec_med, _ = _median_ms(lambda: m.forward(ids, 6, knobs, caches), args.repeats)
    pre_med, _ = _median_ms(lambda: m.forward([tid for _, tid in tr.tokens[:6]], 0, knobs, None), args.repeats)
    # "Why this word" at the default prompt, on this engine: the prefill + logit lens + every layer's
    # attention row for the last position; and the full route: that + direct contributions + every token's
    # knock-out re-run (compute.explain)
    from compute.explain import Explanation

    def _lens_attention():
        ex = Explanation.of_prompt(m, EXPLAIN_PROMPT)
        ex.lens, ex.attention_rows
        return ex

    def _route():
        ex = _lens_attention()
        ex.blocks, ex.sources

    _route()
    lens_cpu: list[float] = []
    lens_med, _ = _median_ms(_lens_attention, args.repeats, lens_cpu)
    route_cpu: list[float] = []
    route_med, _ = _median_ms(_route, max(5, args.repeats // 2), route_cpu)
    causal = _causal(m, max(3, args.repeats // 5))
    numpy_run = numpy_res = None
    if m.compiled:  # the numpy operators in the same run (same machine load)
        mn = ToyK3(device=args.device, backend=args.backend, cpu_threads=args.threads or None, compiled=False)
        mn.run(PROMPT, 4, knobs)
        numpy_run, _ = _median_ms(lambda: mn.run(PROMPT, 4, knobs), args.repeats)
        trn = mn.run(PROMPT, 4, knobs)
        numpy_res, _ = _median_ms(lambda: mn.resample(trn, kn2), n_res)
    import numpy as np

    xs = np.ones((1, 8), np.float32)
    calib_np, _ = _median_ms(lambda: [xs + xs for _ in range(1000)], 5)
    torch = sys.modules.get("torch")
    out = {
        "run_ms_median": round(run_med, 2),
        "run_ms_min": round(run_min, 2),
        "resample_ms_median": round(res_med, 3),
        "resample_ms_min": round(res_min, 3),
        "resample_layers_rerun": layers_rerun,
        "resample_knobs": {"temperature": kn2.temperature, "top_p": kn2.top_p},
        "resample_first_token_changed_ms_median": round(rerun_med, 2),
        "run_cpu_ms_median": round(run_cpu[0], 2),
        "resample_cpu_ms_median": round(res_cpu[0], 3),
        "calib_torch_add_us": round(add_med, 3) if oc is not None else None,
        "prefill_pass_ms_median": round(pre_med, 2),
        "decode_pass_ms_median": round(dec_med, 2),
        "torch_ops_per_run": oc.count if oc is not None else None,
        "torch_compute_ops_per_run": oc.count - oc.conversion if oc is not None else None,
        "numpy_conversion_ops_per_run": oc.conversion if oc is not None else None,
        "torch_ops_per_layer_pass": round(oc.count / (93 * 4), 1) if oc is not None else None,
        "torch_imported_by_engine": torch_by_engine,
        "passes_per_run": len(tr.passes),
        "layers": len(tr.passes[0].layers),
        "init_ms": round(init_ms, 1),
        "weights_load_ms": round(wl_ms, 1) if wl_ms is not None else None,
        "device": str(m.device),
        "backend": m.backend,
        "engine_path": "compiled" if getattr(m, "compiled", False) else "numpy",
        "compiled_kernels": getattr(m, "compiled", False),  # compute.fused_nb (numba; K3_NO_NUMBA=1: numpy)
        "compile_cache_ready": cache_ready,
        "numpy_run_ms_median": round(numpy_run, 2) if numpy_run is not None else None,
        "numpy_resample_ms_median": round(numpy_res, 3) if numpy_res is not None else None,
        "calib_numpy_add_us": round(calib_np, 3),
        "run_in_numpy_adds": round(run_med * 1e3 / calib_np),  # run time / one tiny numpy add (load-robust)
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        "torch": torch.__version__ if torch is not None else None,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "explain_lens_attention_ms_median": round(lens_med, 2),
        "explain_lens_attention_cpu_ms_median": round(lens_cpu[0], 2),
        "explain_route_ms_median": round(route_med, 2),
        "explain_route_cpu_ms_median": round(route_cpu[0], 2),
        **causal,
        "targets": {"run_ms_median": 15, "resample_ms_median": 1, "weights_load_ms": 200,
                    "explain_lens_attention_ms_median": 20, "explain_route_ms_median": 150,
                    "explain_patch_residual_ms_median": 1000, "explain_patch_heads_ms_median": 1000,
                    "explain_causal_route_ms_median": 1000, "explain_sources_100_ms_median": 3000},
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
