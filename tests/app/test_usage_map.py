"""The usage-by-token-type map (experts dock): counted from real engine traces over the held-out documents;
per MoE layer the counts sum to tokens × top-k; trained and random weights give different maps."""
import numpy as np
import pytest

from app.docks.experts import usage_model as um
from app.i18n import tr
from compute.language import task
from compute.engine import ToyK3
from tests.app.weights_helpers import trained_asset  # noqa: F401 - fixture

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def test_the_prompts_cover_every_held_out_prompt():
    prompts = um.usage_prompts()
    every = task.held_out_prompts()
    assert set(prompts) <= set(every) and len(prompts) < len(every)
    assert all(any(p.startswith(q) for p in prompts) for q in every)  # each is the start of a longest one


def test_counts_come_from_the_traces():
    engine = ToyK3(device="cpu", weights="random")
    prompts = um.usage_prompts()[:5]
    usage = um.compute_usage(engine, prompts)
    traces = [engine.run(p, max_new_tokens=1) for p in prompts]
    n_tokens = sum(t.prompt_len for t in traces)
    assert usage.n_tokens == n_tokens and usage.prompts == 5 and usage.weights_name == "random"
    assert usage.counts.shape == (len(task.PIECE_TYPES), 92, 896)
    for i in range(len(usage.moe_layers)):
        assert usage.layer_counts(i).sum() == n_tokens * 16  # tokens × top-k in every MoE layer
    li = usage.moe_layers.index(36)
    manual = np.zeros((len(task.PIECE_TYPES), 896), np.int64)
    for t in traces:
        idx = t.passes[0].layers[36].tensors["moe.topk_idx"]
        for pos, (piece, _) in enumerate(t.tokens[:t.prompt_len]):
            for e in idx[pos]:
                manual[task.PIECE_TYPES.index(task.piece_type(piece)), e] += 1
    assert (usage.layer_counts(li) == manual).all()
    types = {task.piece_type(p) for t in traces for p, _ in t.tokens[:t.prompt_len]}
    assert {task.PIECE_TYPES[i] for i in usage.seen_types()} == types
    shares = usage.shares(li)
    for i in usage.seen_types():
        assert np.isclose(shares[i].sum(), 16)  # each token of the type chose 16 experts


def test_specialisation_bits():
    assert um.specialisation_bits(np.ones((4, 8))) == pytest.approx(0.0)
    assert um.specialisation_bits(np.eye(4) * 5) == pytest.approx(2.0)
    assert um.top_experts(np.array([[0, 3, 1], [5, 0, 5]]), 2) == [[1, 2], [0, 2]]


def test_the_tab_maps_trained_and_random_weights(make_window, qtbot, trained_asset, monkeypatch):
    from app.docks.experts.usage import UsageTab

    monkeypatch.setattr(UsageTab, "max_prompts", 4)
    win = make_window()
    qtbot.waitUntil(lambda: "ExpertGridDock" in win.docks, timeout=30000)
    dock = win.docks["ExpertGridDock"]
    tab = dock.usage_tab
    assert tab.current_map() is None  # nothing ran while the tab was not shown
    dock.show_tab("usage")
    qtbot.waitUntil(lambda: tab.current_map() is not None, timeout=120000)
    trained = tab.current_map()
    assert trained.weights_name == "trained" and trained.prompts == 4
    m = tab.matrix()
    assert m.shape == (len(trained.seen_types()), 896) and m.max() > 0
    assert tab.image.image is not None and tab.image.image.shape == (m.shape[0], int((m.max(0) > 0).sum()))  # used experts only
    assert "bits" in tab.status.text() and tr("experts.usage.type.subject") in tab.top.text()
    tab.weights.setCurrentIndex(1)  # random
    qtbot.waitUntil(lambda: tab.current_map() is not None, timeout=120000)
    random = tab.current_map()
    assert random.weights_name == "random" and random.n_tokens == trained.n_tokens
    assert (random.counts != trained.counts).any()
    win.state.select_layer(10)  # a MoE layer: the map follows
    assert tab.layer.value() == 11 and trained.moe_layers[tab.moe_index()] == 10


def test_trained_and_random_side_by_side(make_window, qtbot, trained_asset, monkeypatch):
    """'Trained and random side by side': the other weights' map under this one, from real engine
    traces, with the same token-type rows; trained weights specialise more (more bits) than random ones."""
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    from app.docks.experts.usage import UsageTab

    monkeypatch.setattr(UsageTab, "max_prompts", 4)
    win = make_window()
    qtbot.waitUntil(lambda: "ExpertGridDock" in win.docks, timeout=30000)
    dock = win.docks["ExpertGridDock"]
    tab = dock.usage_tab
    dock.show_tab("usage")
    qtbot.waitUntil(lambda: tab.current_map() is not None, timeout=120000)
    QTest.mouseClick(tab.both, Qt.LeftButton, Qt.NoModifier, QPoint(8, tab.both.height() // 2))
    qtbot.waitUntil(lambda: tab.other_map() is not None and tab.heat2.isVisible(), timeout=120000)
    trained, random = tab.current_map(), tab.other_map()
    assert trained.weights_name == "trained" and random.weights_name == "random"
    assert list(trained.seen_types()) == list(random.seen_types())  # the same rows
    ref = um.compute_usage(ToyK3(device="cpu", weights="random"), um.usage_prompts()[:4])
    i = tab.moe_index()
    np.testing.assert_allclose(tab.other_matrix(), ref.shares(i)[ref.seen_types()])
    types = trained.seen_types()
    bits_t = um.specialisation_bits(trained.layer_counts(i)[types])
    bits_r = um.specialisation_bits(random.layer_counts(i)[types])
    assert f"{bits_r:.2f}" in tab.other_caption.text() and bits_t > bits_r
    assert tab.image2.image.shape[0] == len(types)
    QTest.mouseClick(tab.both, Qt.LeftButton, Qt.NoModifier, QPoint(8, tab.both.height() // 2))
    assert not tab.heat2.isVisible() and not tab.other_caption.isVisible()
