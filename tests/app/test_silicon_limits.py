"""The Silicon calculator takes every total_params_billion the config loader accepts (1e5-1e6 raised
MemoryInputError out of the hierarchy tab's slot and left the K3 calculator showing K3's old figures)."""
import json

import pytest

from compute.teaching import memory as M
from compute.config import LIMITS, ModelConfig, available_configs


def test_the_calculator_range_is_the_loader_range():
    assert M.K3_LIMITS["params_billion"][:2] == LIMITS["total_params_billion"]
    for params in (1e5, 5e5, 1e6, 0.0005):
        assert M.k3_estimate(params_billion=params)["weights_gb"] == pytest.approx(params * 1e9 * 0.53125 / 1e9)
    with pytest.raises(M.MemoryInputError):
        M.k3_estimate(params_billion=LIMITS["total_params_billion"][1] * 1.01)


@pytest.fixture
def dock(qtbot):
    """As tests/app/test_silicon.py builds it (the state kept alive by the dock; torn down after the test)."""
    from app.docks.silicon import SiliconDock
    from app.state import AppState

    state = AppState()
    d = SiliconDock(state)
    d._test_state = state
    qtbot.addWidget(d)
    d.resize(1100, 820)
    d.show()
    qtbot.waitExposed(d)
    yield d


@pytest.mark.parametrize("params", [5e5, 1e6, 0.0005])
def test_a_model_with_that_many_parameters_opens_in_every_silicon_tab(dock, tmp_path, params):
    raw = json.loads(open(available_configs()["kimi-k3"], encoding="utf-8").read())
    raw["total_params_billion"] = params
    raw["active_params_billion"] = min(params, raw["active_params_billion"])
    path = tmp_path / "big.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    dock._test_state.set_config(ModelConfig.from_json(path))
    for tab in ("hier", "calc"):
        dock.show_tab(tab)
    dock.calc.modes.setCurrentIndex(1)
    k = dock.calc.k3
    assert not k.fields["params_billion"].error.isVisible()
    expected = params * 1e9 * 0.53125 / 1e9  # MXFP4: 4.25 bits a weight
    assert k.out_values["weights_gb"].text().startswith(f"{expected:,.1f} GB")
    fmt = dock.hier._model_fmt()
    assert fmt["gb"] == f"{expected:,.1f}"
