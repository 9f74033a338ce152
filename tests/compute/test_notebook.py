"""Jupyter's rich display of Explanation, Patching and Trace (issue 43.8, compute/notebook.py): the PNGs decode
to pictures that show the numbers (the lens curve where the lens probabilities put it, the strongest patching
cell the reddest), the HTML embeds that same picture beside a table, and every text that comes from a prompt, a
model config or the vocabulary stays text (no markup survives). No Qt, no display."""
from __future__ import annotations

import base64
import dataclasses
import io
import json
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image

from compute.config import ModelConfig, available_configs
from compute.engine import ToyK3
from compute.explain import Explanation
from compute.explain.patching import Patching
from compute.notebook import patching_panels
from compute.notebook_charts import LENS_SIZE, cell_colour, heatmap_layout

PROMPT = "아이가 상자를 집었다. 그리고"
HOSTILE = "<img src=x onerror=alert(1)><script>alert('k3')</script>&amp;\"'"
ALLOWED = {"div", "img", "table", "caption", "tr", "th", "td", "b", "u"}


@pytest.fixture(scope="module")
def model():
    return ToyK3(device="cpu")


@pytest.fixture(scope="module")
def ex(model):
    return Explanation.of_prompt(model, PROMPT)


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.imgs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(dict(attrs))
        for name, _ in attrs:
            assert not name.startswith("on"), (tag, name)

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> _Tags:
    p = _Tags()
    p.feed(html)
    p.close()
    assert set(p.tags) <= ALLOWED, set(p.tags) - ALLOWED
    return p


def decode(png: bytes) -> np.ndarray:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def embedded(p: _Tags) -> bytes:
    (img,) = p.imgs
    head, data = img["src"].split(",", 1)
    assert head == "data:image/png;base64"
    return base64.b64decode(data)


def test_an_explanation_shows_its_lens_curve_and_a_table(ex):
    png = ex._repr_png_()
    rgb = decode(png)
    assert rgb.shape == (LENS_SIZE[1], LENS_SIZE[0], 3)
    # the curve (the chart's blue) rises from the embedding to the last layer as the lens probabilities do
    probs = ex.lens_prob(ex.word)
    assert probs[0] < 0.05 and probs[-1] > 0.9  # the trained toy: noise at the embedding, the answer at the end
    blue = (np.abs(rgb - (31, 119, 180)).sum(-1) < 60)
    cols = np.flatnonzero(blue.any(0))
    assert cols.size > 400  # a line across the plot
    first_y = np.flatnonzero(blue[:, cols[0]]).mean()
    last_y = np.flatnonzero(blue[:, cols[-1]]).mean()
    assert last_y < first_y - 150  # high at the right, low at the left (y grows downwards)
    # the readable-from mark (orange) stands at readable_from's share of the width
    orange = (np.abs(rgb - (230, 120, 20)).sum(-1) < 60).sum(0)
    mark = int(np.argmax(orange))
    left, right = cols[0], cols[-1]
    assert abs((mark - left) / (right - left) * (len(probs) - 1) - ex.readable_from) < 1.5
    html = ex._repr_html_()
    p = parse(html)
    assert embedded(p) == png
    text = "".join(p.text)
    assert repr(ex.word) in text and f"{float(ex.probs[ex.word_index]):.3f}" in text
    assert f"readable from layer {ex.readable_from}" in text
    for piece in ex.pieces:
        assert repr(piece) in text


def test_a_knockout_explanation_says_before_and_after(ex):
    ko = ex.knockout(tokens=[2])
    text = "".join(parse(ko._repr_html_()).text)
    assert f"{ex.word!r} → {ko.word!r}" in text and ko.word != ex.word


def _synthetic(sites: str, scores: np.ndarray, **kw) -> Patching:
    axes = {"residual": ("layer", "position"), "blocks": ("layer", "part", "position"), "heads": ("layer", "head"),
            "experts": ("moe layer", "expert"), "sources": ("source",)}[sites]
    return Patching(sites, scores, "clean", "corrupted", " a", " b", "metric", axes=axes, **kw)


@pytest.mark.parametrize("sites", ["residual", "blocks", "heads", "experts", "sources"])
def test_a_patching_heat_map_paints_each_cell_by_its_score(sites):
    rng = np.random.default_rng(3)
    shape = {"residual": (11, 6), "blocks": (10, 2, 6), "heads": (10, 4), "experts": (5, 40), "sources": (7,)}[sites]
    scores = rng.uniform(-0.4, 0.6, shape)
    scores.flat[min(17, scores.size - 1)] = 0.95  # the strongest site
    scores.flat[5] = np.nan  # not measured
    kw = {"moe_layers": (2, 4, 6, 8, 10)} if sites == "experts" else {}
    p = _synthetic(sites, scores, **kw)
    rgb = decode(p._repr_png_())
    panels, labels, _, _ = patching_panels(p)
    lay = heatmap_layout(panels)
    assert rgb.shape[:2] == (lay.size[1], lay.size[0])
    # every cell shown has the colour of its score: white 0, red +1, blue -1, grey NaN
    reddest, where = -1, None
    for k, (_, grid, _) in enumerate(panels):
        for r in range(grid.shape[0]):
            for c in range(grid.shape[1]):
                x0, y0, x1, y1 = lay.cell(k, r, c)
                got = rgb[(y0 + y1) // 2, (x0 + x1) // 2]
                v = grid[r, c]
                want = (200, 200, 200) if np.isnan(v) else (
                    255 + (np.array((178, 24, 43) if v >= 0 else (33, 102, 172)) - 255) * min(abs(v), 1))
                assert np.abs(got - want).max() <= 2, (k, r, c, v, got)
                if np.isfinite(v) and 255 - got[1] > reddest and v > 0:
                    reddest, where = 255 - got[1], v
    assert where == pytest.approx(0.95)
    assert cell_colour(float("nan")) == (200, 200, 200)
    text = "".join(parse(p._repr_html_()).text)
    top_idx, top_val = p.top(1)[0]
    assert f"{top_idx} {top_val:+.2f}" in text


def test_the_experts_map_keeps_the_strongest_experts_by_id():
    scores = np.full((3, 200), np.nan)
    scores[0, 150], scores[1, 7], scores[2, 99] = 0.9, -0.8, 0.01
    panels, labels, _, _ = patching_panels(_synthetic("experts", scores, moe_layers=(3, 5, 9)), most=2)
    ((_, grid, rows),) = panels
    assert rows == [7, 150] and labels == [3, 5, 9]
    assert grid[1, 0] == 0.9 and grid[0, 1] == -0.8


def test_a_real_residual_grid_restores_the_last_layer_at_the_explained_position(ex):
    p = ex.patch(sites="residual")
    rgb = decode(p._repr_png_())
    panels, _, _, _ = patching_panels(p)
    lay = heatmap_layout(panels)
    # docs/spec/k3-math.md §11: after the last layer at the explained position the final mix reads only the
    # clean state, so the restored fraction there is 1: the darkest red
    x0, y0, x1, y1 = lay.cell(0, ex.position, len(ex.run.layers))
    assert np.abs(rgb[(y0 + y1) // 2, (x0 + x1) // 2] - (178, 24, 43)).max() <= 3
    text = "".join(parse(p._repr_html_()).text)
    assert repr(p.clean_word) in text and f"layer {p.decided_at()}" in text


def test_a_trace_shows_a_summary_table(model):
    trace = model.run(PROMPT, max_new_tokens=3)
    p = parse(trace._repr_html_())
    assert not p.imgs
    cells = p.text
    assert repr(trace.generated_text) + f" ({len(trace.tokens) - trace.prompt_len} tokens)" in "".join(cells)
    assert cells.count("prefill") == 1 and cells.count("decode") == len(trace.passes) - 1


def test_hostile_prompt_pieces_and_model_names_stay_text(tmp_path):
    raw = json.loads(available_configs()["kimi-k3"].read_text())
    raw["name"] = raw["display_name"] = HOSTILE
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(raw))
    m = ToyK3(ModelConfig.from_json(path), device="cpu", weights="random")
    ids = [tid for _, tid in m.encode_prompt(PROMPT)]
    ex = Explanation(m, [(HOSTILE, ids[0]), *[(f"{HOSTILE}{i}", t) for i, t in enumerate(ids[1:])]])
    for html in (ex._repr_html_(), m.run(HOSTILE, max_new_tokens=1)._repr_html_(),
                 _synthetic("sources", np.zeros(3), swap=HOSTILE)._repr_html_(),
                 dataclasses.replace(_synthetic("residual", np.zeros((2, 2))), clean=HOSTILE, clean_word=HOSTILE,
                                     corrupted=HOSTILE, corrupted_word=HOSTILE, metric=HOSTILE)._repr_html_()):
        p = parse(html)  # only the table's own tags: no <script>, no second <img>, no on* attribute
        assert HOSTILE in "".join(p.text) or repr(HOSTILE) in "".join(p.text)
        assert "<script>" not in html and "<img src=x" not in html
