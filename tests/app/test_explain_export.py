"""The 3D explanation in pictures made without the window: `k3-explorer export --explain
lens,arcs,route` and `app.api.render(explain=...)` draw the Explain panel's lens column, arcs and route for
the last prompt position — the explanation compute.explain gives — and refuse bad parts in one line."""
from __future__ import annotations

import numpy as np
import pytest

from app import api
from app.explain_render import overlay_for, parse_parts
from tests.app.test_cli_contract import error_lines, run_app

PROMPT = "아이가 상자를 집었다. 그리고"


def _amber(img) -> int:
    """Lens-strip pixels left of the stack, below the header (the header's note line is amber-ish text)."""
    h, w = img.shape[:2]
    part = img[int(0.2 * h):int(0.9 * h), :int(0.45 * w), :3].astype(float)
    r, g, b = part[..., 0], part[..., 1], part[..., 2]
    return int(((r > 120) & (g > 0.7 * r) & (b < 0.45 * r)).sum())  # the headlight shades the strip's amber


def test_render_draws_the_lens_column_and_route(qapp):
    plain = api.render(PROMPT, size=(1280, 720))
    drawn = api.render(PROMPT, size=(1280, 720), explain="lens,arcs,route", route_threshold=40)
    assert _amber(drawn) > _amber(plain) + 200  # the strip's lit boxes (the layers that have the answer)
    assert (np.abs(drawn.astype(int) - plain.astype(int)).sum(-1) > 40).mean() > 0.002


def test_the_overlay_is_compute_explain(qapp):
    from compute.config import load_default

    trace = api.run(PROMPT)
    ov = overlay_for(load_default(), trace, ("lens", "route"), 40)
    ex = api.explain(PROMPT)
    assert ov.word == ex.word and ov.position == ex.position
    assert [e[3] for e in ov.lens] == ex.lens_rank(ex.word)
    totals = ex.route.totals()
    largest = max(abs(v) for v in totals.values())
    assert set(ov.lit) == {k for k, v in totals.items() if abs(v) >= 0.4 * largest}
    assert not ov.attention  # arcs not asked for


@pytest.mark.parametrize("bad", ["bogus", "lens,x", 3, ["lens", 2]])
def test_bad_parts_raise_one_line(bad):
    with pytest.raises(ValueError) as e:
        parse_parts(bad)
    assert "\n" not in str(e.value) and "lens" in str(e.value)


def test_render_refuses_a_bad_threshold(qapp):
    with pytest.raises(ValueError, match="0..100"):
        api.render(PROMPT, size=(320, 200), explain="route", route_threshold=101)


def test_cli_export_with_explain(tmp_path):
    out = tmp_path / "why.png"
    r = run_app("export", "--prompt", PROMPT, "--size", "960x540", "--explain", "lens,route", "--out", str(out))
    assert r.returncode == 0, r.stderr.decode()[-800:]
    from PIL import Image

    assert _amber(np.asarray(Image.open(out).convert("RGB"))) > 150
    bad = run_app("export", "--explain", "lense", "--out", str(tmp_path / "x.png"))
    assert bad.returncode == 2 and any("lense" in line for line in error_lines(bad))
    assert not (tmp_path / "x.png").exists()
