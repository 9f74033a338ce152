"""The language check of "Why this word": does the explanation find the copy mechanism?

    python bench/explain_check.py [--weights trained random] [--limit N]

Prompts: every document of the third pattern of each language (compute.language.task K3 / E3: "S이 O을 집었다. 그리고 O을 …",
"the S picks up the O. it puts the O …"), cut right before the repeated object — "아이가 상자를 집었다. 그리고",
"the robot picks up the cup. it puts the" (distinct prompts only). For each, with trained and with random
weights, at the last position (compute.explain.Explanation):
  copies        the predicted word is the object (the right answer)
  top_source    the token whose knock-out (zero ablation of its embedding row) lowers the word's logit most is
                the earlier mention of the object (over every position, the last included)
  top_earlier   the same among the positions before the last one
  knockout_changes   knocking the earlier mention out changes the answer
  copies_and_knockout_loses_object   the word was the object and is not any more after that knock-out
  knockout_first_token_changes       control: knocking out token 0 (the subject / "the") changes the answer
  mention_effect_mean / other_earlier_effect_mean   mean logit drop for the mention / any other earlier token
  *_mean        the same with mean ablation (the toy vocabulary's mean embedding row)
  attention     per layer, the mean (over prompts) share of the last row's attention mass (|A|, head-summed)
                on the earlier mention; the 5 layers with the largest share are printed
  top_source_pieces  how often each piece role (compute.language.task.piece_type) is the top source
  block_scan    (--blocks N) every mixer and FFN knocked out on N prompts of each language: the blocks whose
                knock-out lowers the object's logit most
Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compute.language import task  # noqa: E402
from compute.engine import ToyK3  # noqa: E402
from compute.explain import Explanation  # noqa: E402


def prompts() -> list[tuple[str, list[str], int, str]]:
    """(language, pieces of the prompt, position of the earlier mention, object piece), distinct prompts."""
    out, seen = [], set()
    for d in task.all_documents():
        if d.pattern not in ("K3", "E3"):
            continue
        first = d.pieces.index(d.obj)
        second = d.pieces.index(d.obj, first + 1)
        pcs = list(d.pieces[:second])
        key = tuple(pcs)
        if key not in seen:
            seen.add(key)
            out.append((d.lang, pcs, first, d.obj))
    return out


def check(weights: str, cases, tok) -> dict:
    m = ToyK3(device="cpu", weights=weights)
    held = task.held_out_pairs()
    n = Counter()
    roles = Counter()
    share = np.zeros(m.config.num_hidden_layers)
    t0 = time.perf_counter()
    for lang, pcs, first, obj in cases:
        toks = [(p, tok.piece_id(p)) for p in pcs]
        ex = Explanation(m, toks, source_mode="zero", source_metric="logit")  # what this check measures
        em = Explanation(m, toks, source_mode="mean", source_metric="logit")
        n["prompts"] += 1
        n[f"prompts_{lang}"] += 1
        copies = ex.word == obj
        n["copies"] += copies
        n[f"copies_{lang}"] += copies
        top = ex.top_source(earlier_only=False).position
        n["top_source"] += top == first
        n[f"top_source_{lang}"] += top == first
        n["top_earlier"] += ex.top_source(earlier_only=True).position == first
        n["knockout_changes"] += ex.source_answers[first] != ex.word
        n[f"knockout_changes_{lang}"] += ex.source_answers[first] != ex.word
        n["copies_and_knockout_loses_object"] += copies and ex.source_answers[first] != obj
        # control: knocking out the first token (the subject / the article) instead
        n["knockout_first_token_changes"] += ex.source_answers[0] != ex.word
        effects = [s.effect for s in ex.sources[:-1]]
        n["mention_effect_sum"] += effects[first]
        n["other_earlier_effect_sum"] += (sum(effects) - effects[first]) / max(len(effects) - 1, 1)
        n["top_source_mean"] += em.top_source(earlier_only=False).position == first
        n["knockout_changes_mean"] += em.source_answers[first] != em.word
        subj = next(p for p in pcs if task.piece_type(p) == "subject")
        if (subj, obj) in held:
            n["held_out_prompts"] += 1
            n["held_out_top_source"] += top == first
        roles[task.piece_type(pcs[top]) if top != len(pcs) - 1 else "the last token"] += 1
        for li, row in enumerate(ex.attention_rows):
            a = np.abs(row).sum(0)
            share[li] += a[first] / max(a.sum(), 1e-12)
    k = max(n["prompts"], 1)
    share /= k
    n["mention_effect_mean"] = round(n.pop("mention_effect_sum") / k, 3)
    n["other_earlier_effect_mean"] = round(n.pop("other_earlier_effect_sum") / k, 3)
    best = np.argsort(-share)[:5]
    return {**dict(n), "top_source_pieces": dict(roles.most_common()),
            "attention_share_on_mention_top5": [{"layer": int(li + 1), "mixer": m.config.mixer_types[li],
                                                 "share": round(float(share[li]), 3)} for li in best],
            "attention_share_on_mention_mean": round(float(share.mean()), 3),
            "seconds": round(time.perf_counter() - t0, 1), "engine_weights": m.weights_name}


def block_scan(weights: str, cases, tok, n: int) -> dict:
    """Where the mechanism is, causally: on the first n prompts of each language, knock out every layer's mixer
    and every FFN (zero ablation, the layer loop, 186 re-runs a prompt) and rank the blocks by the mean drop of
    the object's logit; also how often each knock-out changes the answer."""
    m = ToyK3(device="cpu", weights=weights)
    L = m.config.num_hidden_layers
    drop = np.zeros((L, 2))
    changed = np.zeros((L, 2), int)
    chosen = [c for c in cases if c[0] == "ko"][:n] + [c for c in cases if c[0] == "en"][:n]
    for lang, pcs, first, obj in chosen:
        ex = Explanation(m, [(p, tok.piece_id(p)) for p in pcs])
        for li in range(L):
            for j, part in enumerate(("mixer", "ffn")):
                k = ex.knockout(blocks=[(li + 1, part)])
                drop[li, j] += k.effect
                changed[li, j] += k.changed
    drop /= max(len(chosen), 1)
    order = np.argsort(-drop.reshape(-1))[:8]
    return {"prompts": len(chosen),
            "top_blocks": [{"layer": int(i // 2 + 1), "part": ("mixer", "ffn")[i % 2],
                            "mixer": m.config.mixer_types[i // 2], "mean_logit_drop": round(float(drop.flat[i]), 3),
                            "answer_changed": int(changed.flat[i])} for i in order],
            "blocks_changing_any_answer": int((changed > 0).sum())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", nargs="+", default=["trained", "random"], choices=("trained", "random"))
    ap.add_argument("--limit", type=int, default=0, help="only the first N prompts (0 = all)")
    ap.add_argument("--blocks", type=int, default=0,
                    help="also knock out every mixer and FFN on the first N prompts of each language (block_scan)")
    args = ap.parse_args()
    cases = prompts()
    if args.limit:
        cases = cases[: args.limit]
    from compute.language.tokenizer import ToyTokenizer

    tok = ToyTokenizer()
    out = {"prompts": len(cases), "examples": ["".join(c[1]) for c in (cases[0], cases[-1])]}
    for w in args.weights:
        out[w] = check(w, cases, tok)
        if args.blocks:
            out[w]["block_scan"] = block_scan(w, cases, tok, args.blocks)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
