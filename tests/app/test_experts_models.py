"""The Experts dock on every bundled model and on a small user model: its pickers start on the model's own default
expert (compute.model_defaults: K3's 17, the others' 0 unless their config names one), never on K3's 17 clamped
into a smaller model, and the bias slider biases that expert.

The expected experts are read from the config files here, not from the code under test."""
import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow

from app import i18n
from app.state import AppState
from compute.config import ModelConfig, available_configs


def own_default(path) -> int:
    """The config file's k3_explorer.default_expert where the model has that expert, else 0 (read here by hand)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    value = raw.get("k3_explorer", {}).get("default_expert", 0)
    n = raw.get("n_routed_experts", raw.get("num_experts"))  # Kimi Linear spells it num_experts
    return value if 0 <= value < n else 0


def show_dock(qtbot, state):
    from app.docks.experts import ExpertGridDock

    win = QMainWindow()
    dock = ExpertGridDock(state, win)
    win.addDockWidget(Qt.RightDockWidgetArea, dock)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    dock.keep = win  # the window lives as long as the test holds the dock
    return dock


def pickers(dock) -> tuple[int, int]:
    return dock.grid_tab.expert_spin.value(), dock.layers_tab.expert.value()


@pytest.mark.parametrize("name", sorted(available_configs()))
def test_each_bundled_model_opens_on_its_own_default_expert(qtbot, name):
    i18n.set_language("en")
    path = available_configs()[name]
    want = own_default(path)
    assert want == (17 if name == "kimi-k3" else 0)
    state = AppState()
    state.set_config(ModelConfig.from_json(path))
    dock = show_dock(qtbot, state)
    assert pickers(dock) == (want, want) and state.expert == want
    asked = []
    state.knobs_requested.connect(asked.append)
    dock.grid_tab.slider.setFocus()
    qtbot.keyClick(dock.grid_tab.slider, Qt.Key_PageUp)
    assert asked and set(asked[-1].expert_bias) == {want}


def test_switching_to_a_smaller_model_takes_its_default_not_a_clamped_k3_number(qtbot, tmp_path):
    """K3 at expert 500 -> Kimi Linear (256 experts): its default 0, not 255; -> a user's 8-expert model made from
    K3's file (which names expert 17): 0, not 7; an expert both models have stays the user's."""
    i18n.set_language("en")
    configs = available_configs()
    state = AppState()
    state.set_config(ModelConfig.from_json(configs["kimi-k3"]))
    dock = show_dock(qtbot, state)
    dock.grid_tab.expert_spin.setValue(500)
    assert state.expert == 500 and pickers(dock) == (500, 500)
    state.set_config(ModelConfig.from_json(configs["kimi-linear-48b"]))
    assert pickers(dock) == (0, 0) and state.expert == 0
    dock.grid_tab.expert_spin.setValue(40)
    state.set_config(ModelConfig.from_json(configs["kimi-k2"]))  # 384 experts: 40 stays
    assert pickers(dock) == (40, 40) and state.expert == 40
    raw = json.loads(configs["kimi-k3"].read_text(encoding="utf-8"))
    assert raw["k3_explorer"]["default_expert"] == 17
    raw.update(name="small-user-model", n_routed_experts=8, num_experts_per_tok=2)
    small = tmp_path / "config.json"
    small.write_text(json.dumps(raw), encoding="utf-8")
    dock.grid_tab.expert_spin.setValue(300)
    state.set_config(ModelConfig.from_json(small))
    assert pickers(dock) == (0, 0) and state.expert == 0
    assert dock.grid_tab.expert_spin.maximum() == 7
