"""Opening another model: the Model menu's bundled configs, File -> Open model config…, a dropped
config.json. The scene re-lays for the model (its layer types are the config's), the engine runs it, the
docks and the status bar follow; a bad file names its field and the current model stays."""
import json

import pytest
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from compute.config import ModelConfig, available_configs


def scene_layer_types(scene) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(mixer per layer, ffn per layer) as the scene draws the stack: each slab's colour role, and whether it
    carries the dense-FFN marker."""
    slabs = sorted((b for b in scene.layout.blocks if b.part == "slab"), key=lambda b: b.layer)
    dense = {b.layer for b in scene.layout.blocks if b.part == "marker" and b.role == "dense"}
    return tuple(b.role for b in slabs), tuple("dense" if b.layer in dense else "moe" for b in slabs)


def wait_model(qtbot, win, name: str) -> None:
    qtbot.waitUntil(lambda: win.config.name == name and win.state.trace is not None
                    and win.state.trace.config_name == name and not win.engine.busy, timeout=120000)


@pytest.mark.parametrize("stem", ["kimi-linear-48b", "kimi-k2", "deepseek-v3", "kimi-k3"])
def test_each_bundled_config_from_the_model_menu_re_lays_the_scene(main_window, qtbot, stem):
    win = main_window
    cfg = ModelConfig.from_json(available_configs()[stem])
    menu = win.findChild(type(win.models.menu), "menu_model")
    assert menu is not None and win.models.model_actions[stem] in menu.actions()
    win.models.model_actions[stem].trigger()  # what a click on the menu item does
    wait_model(qtbot, win, cfg.name)
    mixers, ffns = scene_layer_types(win.scene)
    assert mixers == cfg.mixer_types and ffns == cfg.ffn_types
    assert len(win.state.trace.passes[0].layers) == cfg.num_hidden_layers
    assert win.state.config == cfg and win.models.model_actions[stem].isChecked()
    # the scene's slabs: one per layer, and the expert grid holds this model's experts
    assert len([b for b in win.scene.layout.blocks if b.part == "slab"]) == cfg.num_hidden_layers
    assert win.state.layer < cfg.num_hidden_layers
    assert f"/ {cfg.num_hidden_layers}" in win.status.layer_label.text()
    inspector = win.docks.get("inspectorDock")
    if inspector is not None:
        assert inspector.config == cfg


def test_a_bad_config_names_the_field_and_the_model_stays(main_window, qtbot, tmp_path):
    win = main_window
    before, trace = win.config, win.state.trace
    raw = json.loads(available_configs()["kimi-k3"].read_text())
    raw["n_routed_experts"] = -3
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    assert win.models.open_path(str(bad)) is False
    box = win.models.message_box
    assert box is not None and box.isVisible()
    assert "n_routed_experts" in box.text() and "negative" in box.text()
    assert "n_routed_experts" in win.statusBar().currentMessage()
    box.accept()
    assert win.config is before and win.state.config is before and win.state.trace is trace
    assert scene_layer_types(win.scene) == (before.mixer_types, before.ffn_types)
    assert not win.engine.busy


def test_a_dropped_config_json_opens_that_model(main_window, qtbot, tmp_path):
    win = main_window
    src = available_configs()["kimi-k2"]
    path = tmp_path / "config.json"
    path.write_text(src.read_text())
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    pos = win.scene.mapTo(win, win.scene.rect().center())
    enter = QDragEnterEvent(pos, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(win, enter)
    assert enter.isAccepted()
    drop = QDropEvent(pos.toPointF() if hasattr(pos, "toPointF") else pos, Qt.CopyAction, mime, Qt.LeftButton,
                      Qt.NoModifier)
    QApplication.sendEvent(win, drop)
    cfg = ModelConfig.from_json(path)
    wait_model(qtbot, win, cfg.name)
    assert scene_layer_types(win.scene) == (cfg.mixer_types, cfg.ffn_types)
    # back to K3 for the other tests of this module
    win.models.model_actions["kimi-k3"].trigger()
    wait_model(qtbot, win, ModelConfig.from_json(available_configs()["kimi-k3"]).name)


def test_a_dropped_non_config_is_not_taken(main_window):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile("/tmp/picture.png")])
    enter = QDragEnterEvent(QPoint(50, 50), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(main_window, enter)
    assert not enter.isAccepted()


def test_open_model_is_in_the_file_menu_and_opens_a_file_dialog(main_window):
    win = main_window
    action = win.registry.actions["open_model"]
    assert action in win.registry.menus["file"].actions()
    action.trigger()
    dialog = win.models.file_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.reject()
