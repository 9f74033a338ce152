"""Every dock follows the opened model: after a switch through the Model menu of a real main window,
the expert grid has the model's routed experts (its top-k lit, read from the pixels), the pickers span its
experts and layers, the memory calculator's inputs and formula show its numbers, and the step texts (player
list, details, status bar, animation captions) name its layer and expert counts."""
import numpy as np
import pytest
from PySide6.QtWidgets import QLineEdit

from app.export import animate
from app import i18n, player
from compute.config import ModelConfig, available_configs
from gui_helpers import lit_cells


def wait_model(qtbot, win, name: str) -> None:
    qtbot.waitUntil(lambda: win.config.name == name and win.state.trace is not None
                    and win.state.trace.config_name == name and not win.engine.busy, timeout=120000)


@pytest.fixture
def docks(main_window, qtbot):
    win = main_window
    qtbot.waitUntil(lambda: "ExpertGridDock" in win.docks and "SiliconDock" in win.docks, timeout=60000)
    yield win.docks["ExpertGridDock"], win.docks["SiliconDock"]
    if win.config.name != "kimi-k3":  # leave the shared window on K3
        win.models.model_actions["kimi-k3"].trigger()
        wait_model(qtbot, win, "kimi-k3")


@pytest.mark.parametrize("stem", ["deepseek-v3", "kimi-k2", "kimi-linear-48b", "kimi-k3"])
def test_docks_follow_the_model_from_the_model_menu(main_window, docks, qtbot, stem):
    win = main_window
    experts, silicon = docks
    i18n.set_language("en")
    cfg = ModelConfig.from_json(available_configs()[stem])
    win.models.model_actions[stem].trigger()
    wait_model(qtbot, win, cfg.name)
    n, k, L = cfg.n_routed_experts, cfg.num_experts_per_tok, cfg.num_hidden_layers

    # --- experts dock: grid of n cells, k of them lit (pixels), pickers and texts of this model
    experts.show()
    experts.show_tab("grid")
    tab = experts.grid_tab
    layer = next(i for i, f in enumerate(cfg.ffn_types) if f == "moe")
    win.state.select_layer(layer)
    win.state.select_token(0)
    qtbot.waitUntil(lambda: tab.grid.has_data(), timeout=10000)
    assert tab.grid.n_experts() == n
    selected = set(int(e) for e in win.state.trace.passes[0].layers[layer].tensors["moe.topk_idx"][0])
    assert len(selected) == k and lit_cells(tab.grid, n) == selected
    assert tab.expert_spin.maximum() == n - 1 and tab.layer_spin.maximum() == L
    assert experts.layers_tab.expert.maximum() == n - 1
    assert str(n) in experts.windowTitle()
    assert f"top-{k} of s + b" in tab.legend.text() and "896" not in tab.legend.text() or n == 896
    assert f"renormalised over the selected {k}." in tab.note.text()
    assert f"+ {cfg.n_shared_experts} shared" in tab.shared_line.text()

    # --- memory calculator: the model mode's inputs and formula are this model's
    calc = silicon.calc.k3
    params = calc.findChild(QLineEdit, "k3_params_billion")
    context = calc.findChild(QLineEdit, "k3_context")
    assert params.text() == f"{cfg.total_params_billion:g}"
    assert context.text() == str(cfg.max_position_embeddings)
    mla = sum(1 for m in cfg.mixer_types if m == "mla")
    kda = sum(1 for m in cfg.mixer_types if m == "kda")
    formula = calc.formula.text()
    assert f"× {mla} MLA layers" in formula and f"× {kda} KDA layers" in formula
    assert cfg.display_name in silicon.calc.modes.tabText(1)
    assert calc.result is not None and calc.out_values["kda_gib"].text() == (
        "0.000 GiB" if kda == 0 else calc.out_values["kda_gib"].text())

    # --- step texts: the player's list and details, the status bar, an animation caption
    trace_dock = win.docks["TracePlayerDock"]
    steps = player.build_steps(win.state.trace)
    prefill = next(s for s in steps if s.kind == "prefill")
    moe = next(s for s in steps if s.kind == "moe")
    assert f"Prefill through {L} layers" in trace_dock.list.item(prefill.index).text()
    assert f"MoE routing: {k} of {n} experts" in trace_dock.list.item(moe.index).text()
    win.state.player.seek(prefill.index)
    qtbot.waitUntil(lambda: f"Prefill through {L} layers" in trace_dock.title.text(), timeout=5000)
    assert f"through the {L} layers" in trace_dock.explain.toMarkdown()
    assert f"{L} layers" in win.status.step_label.text()
    head, body = animate.caption_text(steps, moe.index, animate.AnimationSpec(lang="ko"), win.config)
    assert f"{n}개 중 {k}개" in head and f"{n}개" in body
    win.state.player.seek(0)
    win.state.select_layer(min(36, L - 1))


def test_step_text_arguments_name_each_model():
    """Qt-free: the texts' arguments are the config's numbers, the mixer phrase fits the model's layers."""
    from scene.steps import fill, text_args

    def tr(key, **fmt):
        return i18n.tr(key, lang="en", **fmt)

    for stem, path in available_configs().items():
        cfg = ModelConfig.from_json(path)
        a = text_args(cfg, tr)
        assert a["layers"] == cfg.num_hidden_layers and a["experts"] == cfg.n_routed_experts
        assert a["top_k"] == cfg.num_experts_per_tok and a["shared"] == cfg.n_shared_experts
        kda = sum(1 for m in cfg.mixer_types if m == "kda")
        assert ("KDA" in a["mixers"]) == bool(kda)
        filled = fill("for l in 1..{layers}: {unknown} {x}", a)
        assert filled == f"for l in 1..{cfg.num_hidden_layers}: {{unknown}} {{x}}"
    assert np.isclose(text_args(None, tr)["layers"], 93)


def test_a_model_switch_lays_the_docks_out_as_at_start(main_window, docks, qtbot):
    """After Model -> another model, docks a person floated or closed are back at their places,
    shown, as at start (what View -> Reset layout does)."""
    from PySide6.QtCore import Qt

    win = main_window
    experts, _ = docks
    controls = win.docks["ControlsDock"]
    area_before = win.dockWidgetArea(experts)
    experts.setFloating(True)
    controls.hide()
    qtbot.waitUntil(lambda: experts.isFloating() and not controls.isVisible(), timeout=5000)
    win.models.model_actions["deepseek-v3"].trigger()
    wait_model(qtbot, win, "deepseek-v3")
    qtbot.waitUntil(lambda: not experts.isFloating(), timeout=5000)
    assert win.dockWidgetArea(experts) == area_before != Qt.NoDockWidgetArea
    assert not controls.isHidden()
