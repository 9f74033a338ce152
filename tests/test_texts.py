"""Every block kind, trace step and dock has an explanation in both languages (X4); texts are well formed."""
import re

import pytest

from app.texts import explanation
from scene.block_kinds import ALL_KINDS

# The trace player's step kinds, as the player publishes them (app/player.py, Qt-free): a step added there
# without its two texts fails here.
from app.player import STEP_KINDS  # noqa: E402
DOCKS = ("scene", "inspector", "trace_player", "controls", "experts", "routing", "silicon", "experiments", "learn")
HANGUL = re.compile(r"[\uac00-\ud7a3]")


def _all(group, keys):
    return [(group, k, lang) for k in keys for lang in ("en", "ko")]


CASES = _all("block", ALL_KINDS) + _all("step", STEP_KINDS) + _all("dock", DOCKS)


@pytest.mark.parametrize("group,key,lang", CASES)
def test_explanation_exists_and_is_in_its_language(group, key, lang):
    text = explanation(group, key, lang)
    assert text is not None, f"missing assets/texts/{lang}/{group}/{key}.md"
    assert text.startswith("# ") and len(text) > 80
    prose = re.sub(r"`[^`]*`", "", text)  # examples in code spans may quote Korean
    has_hangul = bool(HANGUL.search(prose))
    assert has_hangul == (lang == "ko"), f"{lang}/{group}/{key} is in the wrong language"


def test_step_texts_are_exactly_the_published_steps():
    """No orphan step text (a step renamed in app/player.py leaves its old file behind) and 17 steps, in order."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "assets" / "texts"
    for lang in ("en", "ko"):
        assert {p.stem for p in (root / lang / "step").glob("*.md")} == set(STEP_KINDS), lang
    assert STEP_KINDS[0] == "input" and STEP_KINDS[-1] == "decode_cache" and len(STEP_KINDS) == 17


def test_block_texts_carry_formula_and_real_size():
    for kind in ALL_KINDS:
        en = explanation("block", kind, "en")
        ko = explanation("block", kind, "ko")
        # the real size is K3's, or the shown model's where the text is filled from its config ({model})
        assert "**What it computes:** `" in en and ("**Real K3 size:**" in en or "**Real size ({model}):**" in en), kind
        assert "**계산:** `" in ko and ("**실제 K3 크기:**" in ko or "**실제 크기 ({model}):**" in ko), kind


def test_key_facts_agree_with_k3_math():
    # spot checks against docs/spec/k3-math.md §0
    assert "14,336" in explanation("block", "embedding", "en")
    assert "7,168 → 3,584" in explanation("block", "moe.down", "en")
    assert "512 + 64 = 576" in explanation("block", "mla.kv_a", "en")
    assert "96 heads × 128 × 128" in explanation("block", "kda.state", "en")
    assert "e^−5" in explanation("block", "kda.alpha", "en")
    assert "33,792" in explanation("block", "mlp.gate", "en")
    assert "[emb, b1, …, b7]" in explanation("block", "stack.attnres_bracket", "en")


def test_topics_used_by_the_learn_dock_exist():
    for key in ("serving_traffic", "prefix_cache", "speculative", "fleet_affinity", "pd_disaggregation",
                "harness", "xtml", "attention_causality", "honesty", "quality_vs_throughput"):
        for lang in ("en", "ko"):
            assert explanation("topic", key, lang), (key, lang)
