"""Where each toy copies the repeated object (issue 41.4): compute.teaching.compare_run.side_run over repeated-object cuts
of the toy language (compute.explain.counterfactual.repeated_object_cuts), both languages, each with a distractor
sentence about another object before it, for one model; the figures summed over the cuts.

    python -m compute.teaching.compare_survey --config kimi-k3 --per-lang 4 [--weights FILE] [--experts]

Per model it prints one JSON line: how many cuts it answers right, the layers (and the same as a share of its
depth) where the copy leaves the mention and reaches the answer position (residual patching >= 0.5, medians), how
often the best single mixer site by patching is a KDA or an MLA mixer and the mean of the best restore of each
kind, and the heads (and with --experts the routed experts) that most often rank first by knock-out effect. The
cuts are the first `per-lang` of each language in the language's order (a fixed, reproducible choice, the same for
every model). A model without a trained toy runs random weights, and the line says so ("trained": false)."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter


def cuts(per_lang: int) -> list[tuple[str, str]]:
    """(prompt, answer): the first per_lang Korean and English repeated-object cuts with a distractor sentence."""
    from compute.explain.counterfactual import repeated_object_cuts

    out, seen = [], Counter()
    for prompt, answer, _ in repeated_object_cuts(distractor=True):
        lang = "en" if answer.isascii() else "ko"
        if seen[lang] < per_lang:
            seen[lang] += 1
            out.append((prompt, answer))
    return out


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def survey(model, per_lang: int = 4, experts: bool = False) -> dict:
    from compute.teaching.compare_run import side_run

    runs, right = [], 0
    t0 = time.perf_counter()
    for prompt, answer in cuts(per_lang):
        r = side_run(model, prompt, experts=experts)
        runs.append(r)
        right += r.word == answer
    L = runs[0].layers
    best_kind = Counter()
    for r in runs:
        kinds = {k: v for k, v in r.mixer_best.items() if v is not None}
        if kinds:
            best_kind[max(kinds, key=lambda k: kinds[k][0])] += 1
    mean_best = {k: (round(statistics.fmean(r.mixer_best[k][0] for r in runs), 3)
                     if runs[0].mixer_best.get(k) is not None else None) for k in ("kda", "mla")}
    leaves, arrives = _median(r.copy_leaves for r in runs), _median(r.copy_arrives for r in runs)
    out = {"model": runs[0].model, "trained": runs[0].trained, "layers": L, "cuts": len(runs), "right": right,
           "copy_leaves_median": leaves, "copy_arrives_median": arrives,
           "copy_leaves_depth": None if leaves is None else round(leaves / L, 3),
           "copy_arrives_depth": None if arrives is None else round(arrives / L, 3),
           "best_mixer_kind": dict(best_kind), "mean_best_mixer_restore": mean_best,
           "best_mixer_sites": Counter(f"L{r.mixer_best[k][1]} {k.upper()} @pos{'-' if r.mixer_best[k][2] == r.position else r.mixer_best[k][2]}"
                                       for r in runs for k in ("kda", "mla") if r.mixer_best.get(k) is not None
                                       and r.mixer_best[k][0] >= 0.5).most_common(4),
           "top_heads": Counter(f"L{h[0]} {h[2].upper()} h{h[1]}" for r in runs for h in r.heads[:1]).most_common(3),
           "mean_top_head_effect": round(statistics.fmean(r.heads[0][3] for r in runs if r.heads), 3),
           "seconds": round(time.perf_counter() - t0, 1)}
    if experts:
        out["top_experts"] = Counter(f"L{e[0]} e{e[1]}" for r in runs for e in r.experts[:1]).most_common(3)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compute.teaching.compare_survey", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="kimi-k3", help="a bundled model's name")
    ap.add_argument("--per-lang", type=int, default=4, help="cuts per language (1..48)")
    ap.add_argument("--weights", default=None, help="a weights file for that model (default: its shipped toy)")
    ap.add_argument("--experts", action="store_true", help="also the routed experts' knock-out effects (slow)")
    a = ap.parse_args(argv)
    from compute.config import available_configs

    if a.config not in available_configs() or not 1 <= a.per_lang <= 48:
        print(f"{ap.prog}: error: --config must be one of {', '.join(available_configs())} and --per-lang 1..48",
              file=sys.stderr)
        return 2
    from compute.engine import ToyK3
    from compute.model_defaults import config_named

    kw = {} if a.weights is None else {"weights_path": a.weights}
    print(json.dumps(survey(ToyK3(config_named(a.config), device="cpu", **kw), a.per_lang, a.experts),
                     ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
