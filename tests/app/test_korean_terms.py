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


def test_the_korean_catalogues_still_name_experts():
    texts = [t for p in asset_path("i18n").glob("*.ko.json") for t in json.loads(p.read_text(encoding="utf-8")).values()]
    assert sum("Expert" in t for t in texts) > 50
