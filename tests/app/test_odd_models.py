"""Issue 44 N6 / build 4: docks that meet odd models. Each odd config is written as a config.json file and
dropped on the window, as a user opens one; then every dock and every tab is shown, a block selected and some
steps walked. The suite's slot-guard watch (tests/app/conftest.py) fails the test on any exception a dock's
slot raised, so this walk asserts 0 slot-guard reports; the Experts dock's "why" text is read for the routing
cases (one expert, top-k = the expert count, no MoE)."""
import json

import pytest
from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from compute.config import ModelConfig, available_configs
from gui_helpers import flush_layouts
from test_untrusted_text import _visit_everything

BASE = "kimi-k3"


def odd_config(name: str, n_layers: int = 4, kda=None, mla=None, **changes) -> dict:
    """A small K3-shaped config (n_layers, every 4th layer MLA, AttnRes blocks of 2) with `changes`."""
    doc = json.loads(available_configs()[BASE].read_text(encoding="utf-8"))
    doc.pop("_comment", None)
    doc.pop("total_params_billion", None)
    doc.pop("active_params_billion", None)
    kda = [i for i in range(1, n_layers + 1) if i % 4] if kda is None else kda
    mla = [i for i in range(1, n_layers + 1) if i not in kda] if mla is None else mla
    doc.update(name=name, display_name=name, num_hidden_layers=n_layers, attn_res_block_size=2,
               linear_attn_config=dict(doc["linear_attn_config"], kda_layers=kda, full_attn_layers=mla))
    doc.update(changes)
    return doc


ODD = {
    "one-expert": odd_config("one-expert", n_routed_experts=1, num_experts_per_tok=1),
    "top-k-all": odd_config("top-k-all", n_routed_experts=8, num_experts_per_tok=8),
    "no-moe": odd_config("no-moe", first_k_dense_replace=4),
    "one-layer": odd_config("one-layer", n_layers=1, kda=[], mla=[1], first_k_dense_replace=0),
    "no-mla": odd_config("no-mla", kda=[1, 2, 3, 4], mla=[]),
    "no-kda-no-attnres": odd_config("no-kda-no-attnres", kda=[], mla=[1, 2, 3, 4], attn_res_block_size=None),
}


def drop_file(win, path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    pos = win.scene.mapTo(win, win.scene.rect().center())
    enter = QDragEnterEvent(pos, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(win, enter)
    assert enter.isAccepted()
    QApplication.sendEvent(win, QDropEvent(pos.toPointF(), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))


def wait_model(qtbot, win, name: str) -> None:
    qtbot.waitUntil(lambda: win.config.name == name and win.state.trace is not None
                    and win.state.trace.config_name == name and not win.engine.busy, timeout=120000)


@pytest.mark.parametrize("name", list(ODD))
def test_every_dock_meets_an_odd_model_without_a_slot_guard_report(main_window, qtbot, tmp_path, name):
    win = main_window
    path = tmp_path / "config.json"
    path.write_text(json.dumps(ODD[name]), encoding="utf-8")
    cfg = ModelConfig.from_json(path)
    try:
        drop_file(win, path)
        wait_model(qtbot, win, cfg.name)
        _visit_everything(win, qtbot)
        for layer in range(cfg.num_hidden_layers):  # every layer once (the docks follow the layer picked)
            win.state.select_layer(layer)
            qtbot.wait(20)
        grid_tab = win.docks["ExpertGridDock"].grid_tab
        assert win.show_dock("ExpertGridDock", "grid")
        moe = [i for i, f in enumerate(cfg.ffn_types) if f == "moe"]
        if moe:
            win.state.select_layer(moe[0])
            qtbot.wait(50)
        flush_layouts()
        text = grid_tab.why.text()
        if name in ("one-expert", "top-k-all"):
            assert "every expert" in text and "selected" in text and "vs the" not in text, text
            assert f"top {cfg.num_experts_per_tok} of {cfg.n_routed_experts} expert" in text, text
        if name == "no-moe":  # messages, not empty panels: the title, the grid's bias text, the per-layer tab
            dock = win.docks["ExpertGridDock"]
            assert "No router" in text and dock.windowTitle() == "Experts · no MoE", (text, dock.windowTitle())
            assert grid_tab.grid._message.startswith("no-moe has no MoE layer"), grid_tab.grid._message
            assert win.show_dock("ExpertGridDock", "layers")
            flush_layouts()
            layers = dock.layers_tab
            assert "no MoE layer" in layers.info.text() and not layers.heat.isVisible(), layers.info.text()
    finally:
        win.models.model_actions[BASE].trigger()  # back to K3 for the other tests
        wait_model(qtbot, win, ModelConfig.from_json(available_configs()[BASE]).name)
