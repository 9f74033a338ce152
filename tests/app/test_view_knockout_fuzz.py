"""Issue 44 build 6: a fixed-seed fuzz of a view file's `knockouts` and `explain3d` fields.

Every document either loads or is one ViewError naming a knockouts / explain3d field (no other exception, no
multi-line message). What loads is checked against an independent oracle: compute.explain's own knock-out
checker (make_ablation, with the positions up to the explained one, from the engine's tokenizer) accepts it, the
explained position is one of the trace's tokens, and it saves and reads back unchanged. For well-formed documents
(whole numbers in the right shapes) the converse holds too: the view refuses exactly what that oracle refuses.
A few accepted views run the real knock-out experiment on the toy engine."""
from __future__ import annotations

import json
import random

import pytest

from app.files import viewfile
from app.files.view_knockouts import MAX_KNOCKOUTS
from app.files.viewfile import ViewError
from compute.config import ModelConfig, available_configs
from compute.explain.knockout import make_ablation, stored_sources
from compute.language.tokenizer import ToyTokenizer

SEED = 44
N_DOCS = 1500
PROMPTS = ("로봇이 컵을 집었다", "The robot", "아이가 상자를 집었다. 그리고", "A", "x" * 40)
CONFIG = ModelConfig.from_json(available_configs()["kimi-k3"])
MOE_LAYERS = [i + 1 for i, f in enumerate(CONFIG.ffn_types) if f == "moe"]
DENSE_LAYERS = [i + 1 for i, f in enumerate(CONFIG.ffn_types) if f != "moe"]


class _Model:  # what make_ablation reads of a model: its config
    config = CONFIG


def _n_prompt(prompt: str) -> int:
    return len(ToyTokenizer(vocab_size=CONFIG.vocab_size).encode(prompt))  # the engine's own tokenizer


def _junk(rng: random.Random):
    return rng.choice([None, True, False, -1, 0.5, float(10 ** 6), "3", "", [], {}, [1, 2, 3], {"a": 1},
                       10 ** 30, -(10 ** 30), "mixer", [None], [[1]]])


def _int(rng: random.Random, lo: int, hi: int) -> int:
    """A whole number of lo..hi (mostly), else at or just past its edges or far off."""
    if rng.random() < 0.9:
        return rng.choice([lo, hi, rng.randint(lo, hi), rng.randint(lo, hi)])
    return rng.choice([lo - 1, hi + 1, rng.randint(-5, 400)])


def _knockouts(rng: random.Random, well_formed: bool, n_prompt: int):
    if not well_formed and rng.random() < 0.1:
        return _junk(rng)
    ko = {}
    if rng.random() < 0.9:
        ko["mode"] = rng.choice(["zero", "mean"]) if well_formed or rng.random() < 0.8 else _junk(rng)
    n = lambda: rng.choice([0, 0, 0, 1, 1, 2, 3]) if well_formed or rng.random() < 0.97 else 65  # noqa: E731
    ko["tokens"] = [_int(rng, 0, n_prompt - 1 + rng.choice([0, 0, 0, 2])) for _ in range(n())]
    ko["blocks"] = [[_int(rng, 1, CONFIG.num_hidden_layers), rng.choice(["mixer", "ffn"])] for _ in range(n())]
    ko["experts"] = [[rng.choice([None, rng.choice(MOE_LAYERS), rng.choice(DENSE_LAYERS),
                                  _int(rng, 1, CONFIG.num_hidden_layers)]),
                      _int(rng, 0, CONFIG.n_routed_experts - 1)] for _ in range(n())]
    if rng.random() < 0.5:
        ko["sources"] = [_int(rng, 0, stored_sources(CONFIG) - 1) for _ in range(n())]
    if not well_formed:  # break one thing in a random place
        key = rng.choice(["tokens", "blocks", "experts", "sources", "extra"])
        if key == "extra":
            ko[rng.choice(["x", "Tokens", "\u0000"])] = 1
        elif ko.get(key):
            item = ko[key][rng.randrange(len(ko[key]))]
            if isinstance(item, list):
                item[rng.randrange(2)] = _junk(rng)
            else:
                ko[key][0] = _junk(rng)
        else:
            ko[key] = _junk(rng)
    return ko


def _explain3d(rng: random.Random, well_formed: bool, n_trace: int):
    if rng.random() < 0.3:
        return None
    e = {"lens": rng.random() < 0.5, "arcs": rng.random() < 0.5, "route": rng.random() < 0.5,
         "route_threshold": rng.randint(0, 100),
         "position": None if rng.random() < 0.3 else _int(rng, 0, n_trace - 1)}
    if not well_formed and rng.random() < 0.5:
        e[rng.choice(["lens", "route_threshold", "position", "bogus"])] = _junk(rng)
    return e


def _documents():
    rng = random.Random(SEED)
    for i in range(N_DOCS):
        well_formed = i % 2 == 0
        doc = {"format": "k3-explorer-view", "version": "1.2", "prompt": rng.choice(PROMPTS),
               "tokens": rng.choice([1, 2, 4]), "layer": 1}
        n_prompt = len(ToyTokenizer().split(doc["prompt"]))
        doc["knockouts"] = _knockouts(rng, well_formed, n_prompt)
        e = _explain3d(rng, well_formed, n_prompt + doc["tokens"])
        if e is not None:
            doc["explain3d"] = e
        yield well_formed, doc


def _oracle_problem(doc: dict) -> str | None:
    """Why compute.explain (and the trace) would not take a well-formed document's knock-outs, or None."""
    n_prompt = _n_prompt(doc["prompt"])
    n_trace = n_prompt + doc["tokens"]
    at = (doc.get("explain3d") or {}).get("position")
    if at is not None and not 0 <= at < n_trace:
        return "position"
    explained = at if at is not None else n_prompt - 1
    ko = doc["knockouts"]
    if any(len(ko.get(k, [])) > MAX_KNOCKOUTS for k in ("tokens", "blocks", "experts", "sources")):
        return "too many"
    if any(not 1 <= ly <= CONFIG.num_hidden_layers for ly, _ in ko.get("blocks", [])):
        return "block layer"  # (make_ablation says so too; checked here first as the view reads blocks first)
    try:
        make_ablation(_Model(), explained + 1, ko.get("tokens"), [tuple(b) for b in ko.get("blocks", [])],
                      [e if ly is None else (ly, e) for ly, e in ko.get("experts", [])], ko.get("mode", "zero"),
                      ko.get("sources"))
    except ValueError as exc:
        return str(exc)
    return None


def test_the_fuzz_corpus_is_varied():
    docs = list(_documents())
    accepted = sum(1 for _, d in docs if _loads_or_none(d) is not None)
    assert 0.15 * N_DOCS < accepted < 0.85 * N_DOCS  # both sides of every check are reached


def _loads_or_none(doc):
    try:
        return viewfile.loads(json.dumps(doc))
    except ViewError:
        return None


def test_every_fuzzed_document_loads_or_is_one_view_error_and_what_loads_the_engine_takes(tmp_path):
    checked = refused = 0
    for well_formed, doc in _documents():
        text = json.dumps(doc)
        try:
            view = viewfile.loads(text, "fuzz.k3view")
        except ViewError as exc:
            refused += 1
            assert "\n" not in str(exc), str(exc)
            if exc.kind == "format":  # the bounded JSON reader's own limit (a 31-digit integer), before any field
                assert "integer literal" in str(exc) and not well_formed, str(exc)
                continue
            assert exc.kind == "field" and exc.field.split(".")[0].split("[")[0] in ("knockouts", "explain3d"), str(exc)
            if well_formed:
                assert _oracle_problem(doc) is not None, f"refused a document the engine takes: {text}: {exc}"
            continue
        checked += 1
        if well_formed:
            assert _oracle_problem(doc) is None, f"accepted {text}: {_oracle_problem(doc)}"
        ko = view.knockouts or {}
        n_prompt = _n_prompt(view.prompt)
        at = (view.explain3d or {}).get("position")
        assert at is None or 0 <= at < n_prompt + view.tokens
        explained = at if at is not None else n_prompt - 1
        make_ablation(_Model(), explained + 1, ko.get("tokens"), [tuple(b) for b in ko.get("blocks", [])],
                      [e if ly is None else (ly, e) for ly, e in ko.get("experts", [])], ko.get("mode", "zero"),
                      ko.get("sources"))  # the engine's checker takes all of it (ValueError would fail the test)
        if checked % 50 == 0:  # and it saves and reads back unchanged
            path = tmp_path / f"{checked}.k3view"
            viewfile.save(view, path)
            again = viewfile.load(path)
            assert (again.knockouts, again.explain3d) == (view.knockouts, view.explain3d)
    assert checked > 200 and refused > 200


@pytest.mark.parametrize("pick", range(4))
def test_accepted_fuzzed_knockouts_run_on_the_toy_engine(pick):
    from compute.engine import ToyK3
    from compute.explain import Explanation

    accepted = [v for v in (_loads_or_none(d) for w, d in _documents() if w) if v is not None and v.knockouts]
    view = accepted[pick * (len(accepted) // 4)]
    model = ToyK3(config=CONFIG, device="cpu", weights="random")
    trace = model.run(view.prompt, max_new_tokens=view.tokens)
    at = (view.explain3d or {}).get("position")
    at = at if at is not None else trace.prompt_len - 1
    ex = Explanation(model, list(trace.tokens), at)
    ko = view.knockouts
    after = ex.knockout(tokens=ko["tokens"], blocks=[tuple(b) for b in ko["blocks"]],
                        experts=[e if ly is None else (ly, e) for ly, e in ko["experts"]], mode=ko["mode"],
                        sources=ko.get("sources"))
    assert after.word and after.position == at
