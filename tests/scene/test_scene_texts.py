"""Every text key the scene's own code asks for exists in the catalogues its default translator reads, so a view
without the app's translator (the Python API, benches) never shows a raw '[key]'."""
import re
from pathlib import Path

from scene.view import SCENE_CATALOGUES, _default_translator

ROOT = Path(__file__).resolve().parents[2]


def test_scene_text_keys_resolve_without_the_app():
    tr = _default_translator()
    keys = set()
    for path in (ROOT / "scene").glob("*.py"):
        keys |= set(re.findall(r'tr\("([a-z_]+\.[A-Za-z0-9_.]+)"', path.read_text(encoding="utf-8")))
    assert keys, "the scan found no keys"
    assert {k.split(".")[0] for k in keys} <= set(SCENE_CATALOGUES)
    missing = sorted(k for k in keys if tr(k) == f"[{k}]")
    assert missing == []
