"""The every-prefix scorer (compute.training.prefix_score): checked with models whose answers are known by
construction (an oracle of the language, a model that swaps the repeated object, one that stops at once), and
against the engine's own step-by-step greedy decoding (ToyK3.run at T=0, the app's path)."""
from __future__ import annotations

import random

from compute.training import prefix_score as ps
from compute.language import task
from compute.engine import ToyK3
from compute.trace import Knobs

DOC_OF: dict[tuple[str, ...], task.Document] = {}
for _d in task.all_documents():
    for _c in range(1, len(_d.pieces)):
        DOC_OF.setdefault(_d.pieces[:_c], _d)


def oracle(swap_object: bool = False):
    """Follows one document of the language that has the prefix (so it is always right), except that with
    swap_object the repeated object of K3/E3 is replaced by another object (wrong on those slots)."""
    objects = list(task.KO_OBJECTS) + list(task.EN_OBJECTS)

    def nxt(prefix):
        d = DOC_OF[prefix]
        piece = d.pieces[len(prefix)]
        if swap_object and ps.repeat_slot(d) == len(prefix):
            same_lang = [o for o in objects if (o in task.KO_OBJECTS) == (d.lang == "ko") and o != d.obj]
            piece = same_lang[0]
        return piece

    def argmax_pieces(pieces):
        out = []
        for t in range(len(pieces)):
            pre = pieces[: t + 1]
            out.append(nxt(pre) if pre in DOC_OF else task.END)
        return out

    return argmax_pieces


def test_oracle_scores_every_prefix_right():
    r = ps.score_prefixes(oracle())
    n_expected = sum(len(d.pieces) - 1 for d in task.all_documents())
    assert r["total"]["n"] == n_expected
    assert r["total"]["rate"] == 1.0 and r["total"]["object_rate"] == 1.0
    # the object slots: cuts after the first mention up to the slot, in K3/E3 only
    # the object slots: cuts inside the second sentence up to the repeated object, in K3/E3 only:
    # Korean "… 그리고|" (1 cut), English "… it|", "… it puts|", "… it puts the|" (3 cuts)
    n_ko = sum(1 for d in task.all_documents() if d.pattern == "K3")
    n_en = sum(3 for d in task.all_documents() if d.pattern == "E3")
    assert r["by_lang"]["ko"]["object_n"] == n_ko and r["by_lang"]["en"]["object_n"] == n_en
    assert all(row["object_n"] == 0 for row in r["rows"] if row["pattern"] not in ("K3", "E3"))


def test_swapped_object_is_caught():
    r = ps.score_prefixes(oracle(swap_object=True))
    assert r["total"]["object_rate"] == 0.0
    assert r["by_lang"]["ko"]["rate"] < 1.0 and r["by_lang"]["en"]["rate"] < 1.0
    # prefixes past the slot are unaffected
    past = [row for row in r["rows"] if row["pattern"] == "E3" and row["cut"] >= 11]
    assert past and all(row["rate"] == 1.0 for row in past)


def test_model_that_stops_at_once_is_right_only_where_a_document_may_end():
    stop = lambda pieces: [task.END] * len(pieces)  # noqa: E731
    r = ps.score_prefixes(stop)
    whole = {d.pieces for d in task.all_documents()}
    expect = sum(1 for d in task.all_documents() for c in range(1, len(d.pieces)) if d.pieces[:c] + (task.END,) in whole)
    assert r["total"]["right"] == expect and expect > len(task.all_documents())  # K1/E1 ends inside K3/E3 too


def test_greedy_completion_equals_the_engines_own_decoding():
    engine = ToyK3(device="cpu", weights="trained")
    g = ps.GreedyCompleter(ps.engine_argmax(engine))
    rng = random.Random(3)
    docs = rng.sample(list(task.all_documents()), 12)
    for d in docs:
        c = rng.randrange(1, len(d.pieces))
        prompt = "".join(d.pieces[:c])
        want = g.complete(d.pieces[:c])
        trace = engine.run(prompt, max_new_tokens=len(want), knobs=Knobs(temperature=0.0))
        got = tuple(p for p, _ in trace.tokens[trace.prompt_len:])
        assert got == want, prompt
