"""The one explanation service (app/engine/explain_service.py): Qt-free, one engine cache shared by the window's
worker, the API and the command line, and `app.api.render(explain=...)` taking the Explanation that
`app.api.explain` returns."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app import api
from app.engine import explain_service

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "아이가 상자를 집었다. 그리고"


def test_the_service_runs_without_qt():
    """In a fresh interpreter where PySide6 / pyqtgraph / OpenGL cannot be imported, a request becomes a result
    and the 3D overlay's plain data."""
    code = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'OpenGL'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
from app.engine.explain_service import ExplainRequest, engine_for, explain_result, knobs_of, overlay_of
from compute.config import load_default
from compute.trace import Knobs
config = load_default()
tokens = tuple(engine_for(config, "trained").encode_prompt({PROMPT!r}))
res = explain_result(ExplainRequest(0, config, "trained", tokens, len(tokens) - 1, Knobs(temperature=0.0),
                                    (("token", 2),), "zero", sources=False))
ov = overlay_of(res, True, True, 30, True)
print('ok', res.word == ' 상자', res.knockout['word'] != res.word, len(ov.lens), len(ov.attention))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    ok, same, moved, n_lens, n_att = done.stdout.split()[-5:]
    assert (ok, same, moved) == ("ok", "True", "True"), done.stdout[-400:]
    assert int(n_lens) == int(n_att) + 1 > 2  # the embedding and every layer; the arcs of every layer


def test_the_api_and_the_dock_share_one_engine_cache():
    ex = api.explain(PROMPT)
    req_engine = explain_service.engine_for(ex.model.config, "trained")
    assert req_engine is ex.model  # the service hands the API's engine to the dock's worker, not a new one


def test_the_cache_keeps_at_most_max_engines():
    cache: dict = {}

    class Cfg:
        def __init__(self, name):
            self.name = name

    built = []

    class Fake:
        def __init__(self, config=None, device=None, weights=None):
            built.append((config.name, weights))

    import compute.engine

    real = compute.engine.ToyK3
    compute.engine.ToyK3 = Fake
    try:
        for i in range(explain_service.MAX_ENGINES + 2):
            explain_service.engine_for(Cfg(f"m{i}"), "random", cache=cache)
        explain_service.engine_for(Cfg(f"m{explain_service.MAX_ENGINES + 1}"), "random", cache=cache)
    finally:
        compute.engine.ToyK3 = real
    assert len(cache) == explain_service.MAX_ENGINES and len(built) == explain_service.MAX_ENGINES + 2
    assert ("m0", "random", "cpu", "") not in cache and ("m1", "random", "cpu", "") not in cache
    assert ("m2", "random", "cpu", "") in cache


def test_render_takes_the_explanation_explain_returns(qapp, monkeypatch):
    from app.engine.explain_render import PARTS, overlay_for, overlay_of_explanation
    from compute.config import load_default

    ex = api.explain(PROMPT)
    n = len(explain_service.ENGINES)
    drawn = []
    real = api.build_scene
    monkeypatch.setattr(api, "build_scene", lambda *a, **k: drawn.append(a[-1]) or real(*a, **k))
    given = api.render(size=(640, 360), explain=ex)
    assert len(explain_service.ENGINES) == n  # no new engine
    plain = api.render(PROMPT, size=(640, 360))
    assert drawn[1] is None and drawn[0] is not None
    assert (np.abs(given.astype(int) - plain.astype(int)).sum(-1) > 40).mean() > 0.002  # something is drawn
    mine = overlay_for(load_default(), api.run(PROMPT), PARTS)  # what explain="lens,arcs,route" draws
    assert drawn[0] == mine == overlay_of_explanation(ex, PARTS)
    assert drawn[0].lens and drawn[0].route and drawn[0].attention and drawn[0].word == ex.word


def test_render_refuses_an_explanation_of_another_prompt(qapp):
    ex = api.explain(PROMPT)
    with pytest.raises(ValueError, match="not of the prompt") as e:
        api.render("The robot picked up the cup", size=(320, 200), explain=ex)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="random"):
        api.render(size=(320, 200), explain=ex, weights="random")
