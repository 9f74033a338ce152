"""The sampled-answer scorer (compute.training.sample_score): checked with models whose answers are known by construction
(the language's own distribution, a model that always ends at once, a uniform model), against a plain step-by-step
draw without memo, and against the engine's own sampled generation (compute.training.train_eval.generate, the app's draw)."""
from __future__ import annotations

import numpy as np
import pytest

from compute.training import sample_score as ss
from compute.language import task
from compute.ops.sampling import pass_uniforms, sample_index, top_p_probs
from compute.language.tokenizer import TOY_PIECES

VOCAB = list(TOY_PIECES)
ROW = {p: i for i, p in enumerate(VOCAB)}


def grammar_model(pieces):
    """Logits 0 on every piece the grammar allows after each prefix, -50 elsewhere (a "\\n" outside it)."""
    out = np.full((len(pieces), len(VOCAB)), -50.0)
    for t in range(len(pieces)):
        allowed = task.allowed_next(pieces[: t + 1]) or {task.END}
        out[t, [ROW[p] for p in allowed]] = 0.0
    return out


def always_end(pieces):
    out = np.zeros((len(pieces), len(VOCAB)))
    out[:, ROW[task.END]] = 100.0
    return out


def uniform(pieces):
    return np.zeros((len(pieces), len(VOCAB)))


DOCS = task.all_documents()[::7]


def test_the_languages_own_distribution_is_always_a_whole_document_and_varied():
    r = ss.score_sampled(grammar_model, VOCAB, [(1.0, 1.0)], seeds=range(4), docs=DOCS)
    k = r["T=1,top_p=1"]
    assert k["n"] == 4 * sum(len(d.pieces) - 1 for d in DOCS)
    assert k["rate"] == 1.0 and k["by_lang"] == {"ko": 1.0, "en": 1.0}
    assert k["distinct_right"] > 1.5  # the free choices (verb, place, object) differ between seeds


def test_greedy_of_the_grammar_has_one_answer_per_prefix():
    r = ss.score_sampled(grammar_model, VOCAB, [(0.0, 1.0)], seeds=range(3), docs=DOCS)
    assert r["T=0,top_p=1"]["rate"] == 1.0 and r["T=0,top_p=1"]["distinct_right"] == 1.0
    assert r["T=0,top_p=1"]["distinct"] == 1.0


def test_a_model_that_always_ends_is_right_only_where_the_prompt_is_a_whole_sentence():
    r = ss.score_sampled(always_end, VOCAB, [(1.0, 1.0)], seeds=range(2), docs=DOCS)
    whole = {d.pieces for d in task.all_documents()}
    # the cut before "\n", and in K3/E3 also the cut after the first sentence's "." (a K1/E1 document ends there)
    ends = sum(d.pieces[:c] + (task.END,) in whole for d in DOCS for c in range(1, len(d.pieces)))
    assert ends > len(DOCS)
    assert r["T=1,top_p=1"]["right"] == 2 * ends
    assert r["T=1,top_p=1"]["n"] == 2 * sum(len(d.pieces) - 1 for d in DOCS)


def test_uniform_model_is_almost_never_right_and_top_p_does_not_save_it():
    r = ss.score_sampled(uniform, VOCAB, [(1.0, 1.0), (1.0, 0.5)], seeds=range(2), docs=DOCS)
    assert r["T=1,top_p=1"]["rate"] < 0.05
    assert r["T=1,top_p=0.5"]["rate"] < 0.05
    assert r["T=1,top_p=1"]["distinct"] > 1.9  # two seeds, (almost) always two different wrong answers


def plain_draw(logits_of, prompt, temperature, top_p, seed, max_new=24):
    """The same draw without memo or early stop: the whole text through the model each step."""
    us = pass_uniforms(seed, max_new)
    cur = list(prompt)
    for n in range(max_new):
        probs = top_p_probs(np.asarray(logits_of(tuple(cur)), np.float64)[-1], temperature, top_p)
        cur.append(VOCAB[sample_index(probs, float(us[n]))])
        if cur[-1] == task.END:
            break
    return tuple(cur)


def noisy_grammar(pieces):
    """The grammar model plus a fixed pseudo-random tilt: sometimes wrong, deterministic per prefix."""
    base = grammar_model(pieces)
    for t in range(len(pieces)):
        rng = np.random.default_rng(abs(hash(pieces[: t + 1])) % (2 ** 32))
        base[t] += rng.normal(0, 1.0, len(VOCAB)) + np.where(base[t] < 0, 46.5, 0.0)
    return base


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.6, 0.9), (1.5, 1.0)])
def test_memoised_draw_equals_the_plain_draw(temperature, top_p):
    whole = {d.pieces for d in task.all_documents()}
    c = ss.SampledCompleter(noisy_grammar, VOCAB)
    c.prime(DOCS[:10])
    checked = 0
    for d in DOCS[:10]:
        for cut in range(1, len(d.pieces)):
            for seed in range(3):
                ok, ans = c.sample(d.pieces[:cut], temperature, top_p, seed)
                full = plain_draw(noisy_grammar, d.pieces[:cut], temperature, top_p, seed)
                assert ok == (full in whole)
                assert full[cut: cut + len(ans)] == ans  # the memoised answer is the plain one, cut where it left
                checked += 1
    assert checked > 100


def test_engine_scorer_draws_what_the_app_draws():
    """The scorer's answer for an engine equals compute.training.train_eval.generate's (the engine with caches)."""
    from compute.config import load_default
    from compute.engine import ToyK3
    from compute.training.train_eval import generate
    from compute.trace import Knobs

    e = ToyK3(load_default(), seed=0, device="cpu", weights="trained")
    c = ss.SampledCompleter(ss.engine_logits(e), [p for p, _ in e.vocab])
    d = next(d for d in task.all_documents() if d.pattern == "E3")
    for cut, seed in ((3, 0), (7, 1), (9, 2)):
        prompt = d.pieces[:cut]
        ok, ans = c.sample(prompt, 1.0, 1.0, seed)
        gen = generate(e, "".join(prompt), Knobs(temperature=1.0, top_p=1.0, sample_seed=seed), max_new=24)
        assert tuple(gen[: len(ans)]) == ans
