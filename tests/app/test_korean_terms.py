"""The Korean texts name the model's experts one way: "Expert" (as the Experts panel, the steps and the 3D
view do), never "전문가" — except where a text speaks of human experts ('로봇 전문가' as people would name E0)."""
import json
import re

from assets import asset_path

HUMAN = re.compile(r"‘[^’]*전문가’")  # a quoted name a person would give, which the text says experts do not have


def test_korean_catalogues_say_expert_not_jeonmunga():
    found = []
    for path in sorted(asset_path("i18n").glob("*.ko.json")):
        for key, text in json.loads(path.read_text(encoding="utf-8")).items():
            if "전문가" in HUMAN.sub("", text):
                found.append(f"{path.name}: {key}: {text[:60]}")
    assert not found, "\n".join(found)


# Korean texts that speak of the experts without naming them (the sentence says "the lit {top_k}").
UNNAMED = {("routing", "routing.moe.from_trace")}


def test_every_korean_text_for_an_english_expert_text_names_them():
    """Key by key: where the English text names the model's experts, the Korean one says "Expert" (a count over
    all texts would let a translation drop the word in some)."""
    missing, checked = [], 0
    for en in sorted(asset_path("i18n").glob("*.en.json")):
        group = en.name.split(".")[0]
        ko = json.loads(en.with_name(f"{group}.ko.json").read_text(encoding="utf-8"))
        for key, text in json.loads(en.read_text(encoding="utf-8")).items():
            if re.search(r"\bexperts?\b", text, re.IGNORECASE) and (group, key) not in UNNAMED:
                checked += 1
                if "Expert" not in ko.get(key, ""):
                    missing.append(f"{en.name}: {key}: {ko.get(key, '(no Korean text)')[:60]}")
    assert checked > 0 and not missing, "\n".join(missing)
