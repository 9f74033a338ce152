"""Count phrases (assets/plurals.py): English singular / plural from the count, Korean counters, and the
catalogues use them wherever a count meets its noun ("1 candidates kept" was the bug)."""
import json
import re
import string

import pytest

from assets import asset_path
from assets.plurals import count_phrase, format_text

COUNT_NOUNS = ("candidates", "tokens", "characters", "bytes", "frames", "rows", "prompts", "experts", "positions",
               "parts", "chunks", "updates", "blocks", "pieces", "layers", "stages", "GPUs", "sessions", "turns",
               "values", "entries", "numbers", "steps", "slots", "heads", "destinations", "parameters")
NOT_YET: set[str] = set()  # every catalogue is checked (the Explain dock's joined once its rebuild landed)


@pytest.mark.parametrize("n,want", [(0, "0 tokens"), (1, "1 token"), (2, "2 tokens"), (1.5, "1.5 tokens"),
                                    (1.0, "1.0 tokens"), ("1", "1 token"), (21, "21 tokens"), (-1, "-1 tokens")])
def test_english_count_phrases(n, want):
    assert count_phrase(n, "token", "tokens") == want
    assert format_text("{n:|token|tokens} arrived", n=n) == f"{want} arrived"


def test_number_specs_counters_and_plain_fields():
    assert format_text("{m:,|token|tokens} · {r:.3f}", m=4088, r=1.0) == "4,088 tokens · 1.000"
    assert format_text("{m:,|token|tokens}", m=1) == "1 token"
    assert format_text("후보 {k:|개} 유지", k=1) == "후보 1개 유지"  # Korean: one form, a counter, no space
    assert format_text("a | b {x}", x=1) == "a | b 1"  # a bar outside a placeholder is text
    with pytest.raises(ValueError):
        format_text("{n:|a|b|c}", n=1)
    assert format_text("{text} · {template:|x|xs}", text="t", template=1) == "t · 1 x"  # any placeholder name


def test_the_bug_reads_right_in_both_languages():
    from app import i18n

    try:
        assert i18n.tr("learn.exp.sampling.sampled", "en", token="x", kept=1, seed=0) == \
            "Sampled token: x (1 candidate kept, seed 0)"
        assert "(3 candidates kept" in i18n.tr("learn.exp.sampling.sampled", "en", token="x", kept=3, seed=0)
        assert "후보 1개 유지" in i18n.tr("learn.exp.sampling.sampled", "ko", token="x", kept=1, seed=0)
        assert i18n.tr("app.fact.layers", "en", t=1, n=93).startswith("1 position through 93 layers")
        i18n.set_language("ko")
        assert "후보 2개" in i18n.tr("learn.exp.sampling.sampled", token="x", kept=2, seed=0)
    finally:
        i18n.set_language("en")


def _catalogue(lang: str) -> dict[str, tuple[str, str]]:
    out = {}
    for path in sorted(asset_path("i18n").glob(f"*.{lang}.json")):
        for key, text in json.loads(path.read_text(encoding="utf-8")).items():
            out[key] = (path.name, text)
    return out


def test_english_counts_meet_their_nouns_through_count_phrases():
    bare = re.compile(r"\{\w+(?::[^}|]*)?\}[ \u00a0](" + "|".join(COUNT_NOUNS) + r")\b|\{\w+(?::[^}]*)?\} ?\w+\(s\)")
    offenders = [(key, m.group(0)) for key, (name, text) in _catalogue("en").items() if name not in NOT_YET
                 for m in bare.finditer(text)]
    assert offenders == [], offenders


def test_every_count_phrase_reads_singular_for_one_and_plural_for_two():
    checked = 0
    for key, (_, text) in _catalogue("en").items():
        fields = {name: spec for _, name, spec, _ in string.Formatter().parse(text) if name}
        counts = {name: spec.split("|")[1:] for name, spec in fields.items() if spec and "|" in spec}
        if not counts:
            continue
        for n in (1, 2):
            shown = format_text(text, **{name: n for name in fields})
            for name, (one, other) in counts.items():
                assert f"{n} {one if n == 1 else other}" in shown, (key, shown)
        checked += 1
    assert checked > 40


def test_korean_has_no_plural_forms():
    two_forms = [key for key, (_, text) in _catalogue("ko").items()
                 for _, name, spec, _ in string.Formatter().parse(text) if name and spec and spec.count("|") > 1]
    assert two_forms == []
