"""Child process of test_extremes_property: runs extreme cases through one engine path and prints one JSON line per
case, flushed before the next starts (so that a crash names its case). Not a test module.

    python tests/compute/_extremes_child.py PATH CASES_JSON
PATH: "numba" (compute.fused_nb's compiled pass) or "operators" (the layer loop: compute.ops.kda / mla / moe on numpy).
A case: {"name", "base": another shipped config's name | absent (kimi-k3), "config": {raw overrides} | null, "weights": [[target, op, value], ...],
"knobs": {...}, "tokens": n}. target: "all" | "router" | "router1" (one layer) | "bias" | "w13" | "embedding" |
"lm_head" | "kda" | "mla" | "norm"; op: "scale" | "set_some" (every 7th entry) | "set_all".
Outcome per case: "ok" (finite logits and probabilities, sampled ids in range, expert indices in range),
"nonfinite" (compute.guards.finite.NonFiniteError), "refused" (another ValueError, e.g. a knob out of range), or
"bad" with a reason (a silent NaN, an index out of range, another exception) — the parent fails on "bad".
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from compute.config import ModelConfig, available_configs, load_default  # noqa: E402
from compute.engine import ToyK3  # noqa: E402
from compute.guards.finite import NonFiniteError  # noqa: E402
from compute.trace import Knobs  # noqa: E402

PROMPT = "Kimi K3 reads the next token"


def _leaves(engine, target: str):
    """(dict, key) pairs of the float64 weights `target` names."""
    out = []
    g = {"embedding": "embedding64", "lm_head": "lm_head64"}
    if target in ("all", "embedding", "lm_head"):
        for name, attr in g.items():
            if target in ("all", name):
                out.append((engine.__dict__, attr))
        if target == "all":
            out += [(engine.__dict__, "final_norm64"), (engine.__dict__, "w_out64")]
    moe_layers = [w for w in engine._layers64 if "moe" in w]
    for li, w in enumerate(engine._layers64):
        for block, sub in w.items():
            if isinstance(sub, dict):
                for k, v in sub.items():
                    if v is None:
                        continue
                    hit = (target == "all" or (target == "router" and block == "moe" and k == "router")
                           or (target == "router1" and block == "moe" and k == "router" and w is moe_layers[0])
                           or (target == "bias" and block == "moe" and k == "bias")
                           or (target == "w13" and block == "moe" and k == "w13")
                           or (target == block and target in ("kda", "mla")))
                    if hit:
                        out.append((sub, k))
            elif target in ("all", "norm") and block.startswith("norm"):
                out.append((w, block))
    return out


def _apply(engine, ops) -> None:
    for target, op, value in ops:
        value = float(value)
        for d, k in _leaves(engine, target):
            a = np.array(d[k], dtype=np.float64)
            if op == "scale":
                with np.errstate(all="ignore"):
                    a = a * value
            elif op == "set_some":
                a.reshape(-1)[::7] = value
            else:
                a[...] = value
            d[k] = a


def _check(trace, engine) -> str | None:
    """None when the trace is sound, else what is wrong."""
    E = engine.config.n_routed_experts
    V = len(engine.vocab)
    for i, ps in enumerate(trace.passes):
        f = ps.final
        if not np.isfinite(f["lm_head"]).all():
            return f"pass {i}: non-finite logits were not reported"
        p = np.asarray(f["probs"])
        if not np.isfinite(p).all() or abs(p.sum() - 1.0) > 1e-6 or (p < 0).any():
            return f"pass {i}: probabilities not a distribution (sum {p.sum()})"
        if not 0 <= int(f["sampled"]) < V:
            return f"pass {i}: sampled {f['sampled']} outside 0..{V - 1}"
        for lt in ps.layers:
            idx = lt.tensors.get("moe.topk_idx")
            if idx is not None:
                idx = np.asarray(idx)
                if idx.size and (idx.min() < 0 or idx.max() >= E):
                    return f"pass {i} layer {lt.index}: expert index outside 0..{E - 1}"
                if idx.size and any(len(set(r)) != len(r) for r in idx.reshape(-1, idx.shape[-1]).tolist()):
                    return f"pass {i} layer {lt.index}: an expert chosen twice"
    return None


def main() -> int:
    path, cases = sys.argv[1], json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
    base = load_default()
    engines: dict = {}
    for case in cases:
        cfg_over = case.get("config")
        base_name = case.get("base")  # another shipped config (assets/configs/<name>.json) instead of kimi-k3
        key = json.dumps([base_name, cfg_over], sort_keys=True)
        result = {"name": case["name"]}
        try:
            if key not in engines:
                start = base if base_name is None else ModelConfig.from_json(available_configs()[base_name])
                cfg = start if not cfg_over else ModelConfig.from_dict(dict(start.raw, **cfg_over), "<case>")
                e = ToyK3(cfg, device="cpu", weights="random", compiled=path == "numba",
                          kernels="operators" if path == "operators" else "auto")
                pristine = (e.embedding64, e.lm_head64, e.final_norm64, e.w_out64,
                            [{b: (dict(s) if isinstance(s, dict) else s) for b, s in w.items()} for w in e._layers64])
                engines[key] = [e, pristine, "[]"]
            e, pristine, applied = engines[key]
            ops = case.get("weights") or []
            # the engine's converted weights, plans and compiled pass are those of the pristine weights with
            # `applied` (by its constructor, or the last case whose _to_device finished): a case with the same
            # faults (none; or the knobs on the NaN router) has nothing to rebuild, the same numbers would be
            # converted, planned and warmed again (~0.15 s a case)
            if json.dumps(ops) != applied:
                e.embedding64, e.lm_head64, e.final_norm64, e.w_out64 = pristine[:4]
                e._layers64 = [{b: (dict(s) if isinstance(s, dict) else s) for b, s in w.items()} for w in pristine[4]]
                engines[key][2] = None  # unknown until _to_device has finished (its warm-up may raise)
                _apply(e, ops)
                e._to_device()
                engines[key][2] = json.dumps(ops)
            if path == "numba" and not e.compiled:
                result.update(outcome="skipped", why="the compiled pass does not run this config")
            else:
                result["compiled"] = e.compiled
                try:
                    knobs = Knobs(**{k: ({int(a): b for a, b in v.items()} if k == "expert_bias" else v)
                                     for k, v in (case.get("knobs") or {}).items()})
                    trace = e.run(PROMPT, int(case.get("tokens", 3)), knobs)
                except NonFiniteError as exc:
                    result.update(outcome="nonfinite", why=str(exc))
                except ValueError as exc:
                    result.update(outcome="refused", why=str(exc))
                else:
                    bad = _check(trace, e)
                    if bad is None and trace.passes:  # a resample over the same passes must hold too
                        bad = _check(e.resample(trace, Knobs(temperature=0.5, top_p=0.5, sample_seed=3)), e)
                    result.update(outcome="bad" if bad else "ok", why=bad)
        except NonFiniteError as exc:  # the engine's own warm-up pass (compiled) on damaged weights
            result.update(outcome="nonfinite", why=str(exc))
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            result.update(outcome="bad", why=f"{type(exc).__name__}: {exc}")
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
