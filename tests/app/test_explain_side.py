"""Trained and random weights side by side in the Explain dock, with real clicks: the other weights'
explanation of the same tokens (compute.explain's own word and lens), both lens curves in one plot, the summary
columns, the other attention overview on screen (pixels), Korean headers."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from app import api, i18n
from app.docks.explain.dock import lens_series
from gui_helpers import image_array
from test_explain_dock import PROMPT, dock, open_page, wait_for  # noqa: F401 - the dock fixture


def test_side_by_side_with_random_weights(dock):
    side = dock.side
    open_page(dock, "side")
    assert not side.table.isVisible() and dock.result.other is None
    assert "random weights" in side.box.text()
    QTest.mouseClick(side.box, Qt.LeftButton, Qt.NoModifier, QPoint(8, side.box.height() // 2))
    wait_for(lambda: dock.result.other is not None and not dock.busy, dock=dock)
    res, other = dock.result, dock.result.other
    assert res.weights == "trained" and other.weights == "random" and other.position == res.position
    ref = api.explain(PROMPT, weights="random", position=res.position)
    assert other.word == ref.word and other.lens_rank == ref.lens_rank(ref.word)
    x, prob, _rank = lens_series(other)
    xs, ys = side.curve_prob.getData()
    assert np.allclose(xs, x) and np.allclose(ys, prob)
    assert side.table.isVisible() and side.att_plot.isVisible()
    assert side.table.item(0, 0).text() == "Word (T = 0)"  # a row's label spans both columns above its cells
    assert side.table.item(1, 0).text().startswith("' 상자'") and side.table.item(1, 1).text().startswith(
        "'" + other.word.replace("\n", "\\n") + "'")
    assert side.table.horizontalHeaderItem(0).text() == "trained weights"
    assert side.table.horizontalHeaderItem(1).text() == "random weights"
    dock.resize(560, 2600)
    img = image_array(side.att_plot.grab().toImage()).astype(int)
    coloured = (np.abs(img[..., 0] - img[..., 2]) > 60).sum()
    assert coloured > 200  # the other weights' overview is drawn (orange / blue cells)
    i18n.set_language("ko")
    dock.state.language_changed.emit("ko")
    assert "무작위 가중치" in side.box.text() and side.table.horizontalHeaderItem(1).text() == "무작위 가중치"
    i18n.set_language("en")
    dock.state.language_changed.emit("en")
    QTest.mouseClick(side.box, Qt.LeftButton, Qt.NoModifier, QPoint(8, side.box.height() // 2))
    wait_for(lambda: dock.result.other is None and not dock.busy, dock=dock)
    assert not side.table.isVisible() and len(side.curve_prob.getData()[0] or []) == 0


def test_per_head_overview(dock):
    """The overview per head (BertViz's layer x head grid): each head's row of compute.explain's attention,
    divided by its own size, side by side with a blank column between heads."""
    from app.docks.explain.side_by_side import attention_share

    res = dock.result
    T = res.position + 1
    QTest.mouseClick(dock.att_heads, Qt.LeftButton, Qt.NoModifier, QPoint(8, dock.att_heads.height() // 2))
    assert dock.att_heads.isChecked()
    img = dock.att_image.image
    H = res.attention[0].shape[0]
    assert img.shape[:2] == (len(res.attention), H * (T + 1) - 1)
    ex = api.explain(PROMPT, position=res.position)
    share = attention_share(res.attention, per_head=True)
    for layer in (1, 37, 93):
        A = ex.attention(layer)[:, res.position, :]  # heads x T, float64
        for h in range(H):
            want = A[h] / np.abs(A[h]).sum()
            np.testing.assert_allclose(share[layer - 1, h * (T + 1):h * (T + 1) + T], want, atol=1e-5)
    assert np.all(img[:, T, 3] == 0)  # the blank column between head 1 and head 2
    QTest.mouseClick(dock.att_heads, Qt.LeftButton, Qt.NoModifier, QPoint(8, dock.att_heads.height() // 2))
    assert dock.att_image.image.shape[:2] == (len(res.attention), T)


def test_summary_names_the_three_largest_blocks_of_each(dock):
    from app.docks.explain.side_by_side import summary_cells

    res = dock.result
    ex = api.explain(PROMPT, position=res.position)
    totals = ex.route.totals()
    top = sorted(totals, key=lambda k: -abs(totals[k]))[:3]
    cell = summary_cells(res)[3]
    assert [f"layer {ly} " in cell for ly, _ in top] == [True] * 3, (cell, top)


def test_a_model_without_a_trained_toy_has_nothing_to_compare(qtbot, tmp_path):
    """A user's config.json (K2's, cut to 5 layers) has no trained toy: 'trained' runs random weights too, so the comparison says so instead of
    showing two identical columns."""
    from app.docks.explain import ExplainDock
    from app.state import AppState
    from compute.config import ModelConfig, available_configs
    from compute.engine import ToyK3
    from compute.trace import Knobs

    import json

    raw = json.loads(available_configs()["kimi-k2"].read_text(encoding="utf-8"))
    raw.update(num_hidden_layers=5, name="my-model")
    (tmp_path / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    cfg = ModelConfig.from_json(tmp_path / "config.json")
    state = AppState()
    engine = ToyK3(config=cfg, device="cpu", weights="random")
    state.set_config(cfg)
    d = ExplainDock(state)
    qtbot.addWidget(d)
    d.resize(560, 1500)
    d.show()
    qtbot.waitExposed(d)
    state.set_trace(engine.run("the robot picks up the cup. it", 1, Knobs(temperature=0.0)))
    wait_for(lambda: d.result is not None and not d.busy, dock=d)
    assert "trained weights" in d.side.box.text()
    open_page(d, "side")
    QTest.mouseClick(d.side.box, Qt.LeftButton, Qt.NoModifier, QPoint(8, d.side.box.height() // 2))
    wait_for(lambda: d.result.other is not None and not d.busy, dock=d)
    assert d.result.other.weights == "random"  # what 'trained' gives a model without a trained file
    assert d.side.note.isVisible() and "no trained toy" in d.side.note.text()
    assert not d.side.table.isVisible() and not d.side.att_plot.isVisible()


def test_the_lens_legend_lists_only_the_curves_drawn_and_the_status_follows_the_language(dock):
    assert len(dock.legend.items) == 2  # probability and 1 / rank: no "other weights" entries while side by side is off
    assert dock.plot.getAxis("left").labelText == "probability · 1 / rank"
    # computed now, or remembered from an earlier test's dock in this process (the service's memo): said as such
    said = "explain.remembered" if dock.result.extra.get("remembered") else "explain.took"
    ms = f"{dock.result.seconds * 1000:.0f}"
    assert dock.status.text() == i18n.tr(said, ms=ms) and dock.status.text().startswith("Computed")
    i18n.set_language("ko")
    dock.state.language_changed.emit("ko")
    assert dock.status.text() == i18n.tr(said, ms=ms) and "계산" in dock.status.text()
    assert dock.plot.getAxis("left").labelText == "확률 · 1 / 순위"
    i18n.set_language("en")
    dock.state.language_changed.emit("en")
    open_page(dock, "side")
    QTest.mouseClick(dock.side.box, Qt.LeftButton, Qt.NoModifier, QPoint(8, dock.side.box.height() // 2))
    wait_for(lambda: dock.result.other is not None and not dock.busy, dock=dock)
    assert len(dock.legend.items) == 4
