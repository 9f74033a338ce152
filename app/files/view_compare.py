"""A view file's compared models (issue 41.3; view format 1.3, `stacks` 1.4), checked (Qt-free, no torch; app/files/viewfile.py reads
the rest). The Compare dock's two picked bundled models and, when it differs from the view's own prompt, the
prompt of its Same-prompt page:

    "compare": {"models": ["kimi-k3", "deepseek-v3"], "prompt": null, "stacks": true}

`prompt` null (or absent): the page takes the view's prompt. `stacks` (optional, false when absent; written only
when true): the compared model's stack stands beside the window's in the 3D view (View -> Side by side). A model that is not a bundled one, a list that is not
two names, an unknown key or a bad prompt is one ViewError naming the field, and nothing is applied (the window,
`k3-explorer export --view` and app.api read every view through the same check)."""
from __future__ import annotations

from typing import Any

KEYS = ("models", "prompt", "stacks")


def read_compare(reader, value: Any, models: tuple[str, ...]) -> dict | None:
    """The optional `compare` object, checked by `reader` (app.files.viewfile._Reader: object, fail, choice, prompt) against the
    bundled model names `models`; None when the view records no comparison."""
    if value is None:
        return None
    value = reader.object("compare", value, KEYS)
    pair = value.get("models")
    if not isinstance(pair, list) or len(pair) != 2:
        raise reader.fail("compare.models", "must be a list of two bundled model names")
    names = [reader.choice("compare.models", name, models) for name in pair]
    prompt = value.get("prompt")
    if prompt is not None:  # the same limits as the view's own prompt
        try:
            prompt = reader.prompt(prompt)
        except ValueError as exc:
            raise reader.fail("compare.prompt", getattr(exc, "problem", str(exc))) from exc
    stacks = value.get("stacks", False)
    if not isinstance(stacks, bool):
        raise reader.fail("compare.stacks", "must be true or false")
    return {"models": names, "prompt": prompt, **({"stacks": True} if stacks else {})}


def compare_json(compare: dict) -> dict:
    return {"models": [str(m) for m in compare["models"]], "prompt": compare.get("prompt"),
            **({"stacks": True} if compare.get("stacks") else {})}
