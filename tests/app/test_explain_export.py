"""The 3D explanation in pictures made without the window: `k3-explorer export --explain
lens,arcs,route` and `app.api.render(explain=...)` draw the Explain panel's lens column, arcs and route for
the last prompt position — the explanation compute.explain gives — and refuse bad parts in one line."""
from __future__ import annotations

import numpy as np
import pytest

from app import api
from app.engine.explain_render import overlay_for, parse_parts
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
    route = ex.causal_route(0.4)  # the causal route is the route drawn: the blocks causal_route names
    assert ov.route_kind == "causal" and set(ov.lit) == set(route.blocks)
    assert np.array(ov.lanes).shape == (len(ov.lens), len(ex.pieces))  # the patching grid: (L + 1) x T
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


def test_export_view_of_a_window_view_with_a_knockout_and_the_route_matches(make_window, qtbot, tmp_path):
    """Issue 40.8: File -> Save view in the window with a token knocked out and the causal route drawn; then
    `k3-explorer export --view` at the window export's size draws the same picture (within 1 % of the pixels):
    the knock-out's cross and before -> after, the route's lanes and the lens column included."""
    from PySide6.QtGui import QImage

    from app import cli
    from app.export.image import ExportChoice, perform
    from tests.app.gui_helpers import changed_fraction, image_array, wait_idle
    from tests.app.test_explain_dock import wait_for

    win = make_window()
    dock = win.docks["ExplainDock"]
    dock.show3d.set_values(True, True, 30, False)
    dock.add_knockout(("token", 1), "zero")
    wait_for(lambda: dock.result is not None and dock.result.knockout is not None and dock.result.causal
             and not dock.busy and win.scene.explanation is not None and win.scene.explanation.knockout
             and win.scene.explanation.lanes, timeout_s=400, dock=dock)
    win.scene.set_camera_preset("front", animate=False)
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: win.scene.camera.path is None, timeout=5000)
    view_path = str(tmp_path / "ko.k3view")
    assert win.views.save_to(view_path)
    gui = image_array(perform(ExportChoice("view", 640, 360, False, "file", str(tmp_path / "gui.png")), win.scene, win))
    win.close()
    cli_png = str(tmp_path / "cli.png")
    assert cli.main(["--view", view_path, "--size", "640x360", "--out", cli_png]) == 0
    out = image_array(QImage(cli_png))
    assert out.shape == gui.shape == (360, 640, 4)
    fraction = changed_fraction(gui, out)
    print(f"GUI export vs export --view with a knock-out and the causal route: {fraction:.5f} of the pixels differ")
    assert fraction < 0.01, fraction
