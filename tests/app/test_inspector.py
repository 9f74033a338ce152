"""InspectorDock (S5/S6): name, explanation, formula, real and toy shapes, live values, follow one number."""
import re

import numpy as np
import pytest


@pytest.fixture(scope="module")
def traces():
    from compute.engine import ToyK3

    m = ToyK3()
    return m.run("로봇이 컵을 집었다", max_new_tokens=2)


@pytest.fixture
def dock(qtbot, traces):
    from app.docks.inspector import InspectorDock
    from app.state import AppState
    from compute.config import load_default

    state = AppState()
    state.set_config(load_default())  # the dock reads the config from the state, never from a parent window
    d = InspectorDock(state)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitExposed(d)
    return d


def test_empty_and_no_trace_messages(dock):
    assert dock.objectName() == "inspectorDock"
    assert "Click a block" in dock.name_label.text()
    dock.state.select_block("L37/kda.state")
    assert dock.name_label.text() == "state S (d_k × d_v)"
    assert "96 × 128 × 128" in dock.meta_label.text()
    assert "No trace yet" in dock.values_note.text() and dock.table.rowCount() == 0


def test_block_shows_text_formula_shapes_and_live_values(dock, traces):
    dock.state.set_trace(traces)
    dock.state.select_block("L37/kda.state")
    assert "delta rule" in dock.what.toPlainText()  # the block's explanation text (assets/texts)
    assert "S = (I − β k kᵀ) Diag(α) S + β k vᵀ" in dock.formula_label.text()
    S = np.asarray(traces.passes[0].layers[36].tensors["kda.state"])
    assert "toy shape (computed):</b> " + " × ".join(map(str, S.shape)) in dock.meta_label.text().lower()
    # live values: the state after the prefill, heads stacked as rows
    flat = S.reshape(-1, S.shape[-1])
    assert dock.table.rowCount() == min(8, flat.shape[0]) and dock.table.columnCount() == flat.shape[1]
    assert dock.table.item(1, 2).text() == f"{flat[1, 2]:.3f}"
    # a decode pass shows that pass's state
    dock.state.select_pass(1)
    S1 = np.asarray(traces.passes[1].layers[36].tensors["kda.state"]).reshape(-1, S.shape[-1])
    assert dock.table.item(0, 0).text() == f"{S1[0, 0]:.3f}"
    assert "decode 1" in dock.values_note.text()


@pytest.mark.parametrize("block_id, name, k3", [
    ("lm_head", "LM head", "7,168 → 163,840"), ("embedding", "Embedding", "163,840 × 7,168"),
    ("L4/mla.c_kv", "latent cache c_kv", "S × 512"), ("L37/moe.down/W", "W↓ · W", "7,168 → 3,584"),
    ("L1/mlp.down", "W_down", "33,792 → 7,168"), ("L50/stack.layer", "Layer 50", "KDA + moe"),
])
def test_global_weight_and_layer_blocks(dock, traces, block_id, name, k3):
    dock.state.set_trace(traces)
    dock.state.select_block(block_id)
    assert dock.name_label.text() == name
    assert k3 in dock.meta_label.text()
    assert dock.table.rowCount() > 0


def test_weight_plate_values_are_the_weight_matrix(dock, traces):
    dock.state.set_trace(traces)
    dock.state.select_block("L37/moe.down/W")
    W = np.asarray(traces.weights[36]["moe.down"])
    assert (dock.table.rowCount(), dock.table.columnCount()) == (min(8, W.shape[0]), min(12, W.shape[1]))
    assert dock.table.item(3, 1).text() == f"{W[3, 1]:.3f}"


def test_follow_one_number_for_w_down(dock, traces):
    dock.state.set_trace(traces)
    dock.show_cell("L37/moe.down", 4, 2)
    x = np.asarray(traces.passes[0].layers[36].tensors["norm.ffn"], np.float64)[4]
    W = np.asarray(traces.weights[36]["moe.down"], np.float64)
    terms = [x[i] * W[i, 2] for i in range(len(x))]
    text = dock.follow_label.text()
    assert len(re.findall(r"x\[\d+\] · W\[\d+,2\] = ", text)) == len(x)
    for i, t in enumerate(terms):
        assert f"x[{i}] · W[{i},2] = {x[i]:+.4f} × {W[i, 2]:+.4f} = <b>{t:+.4f}</b>" in text
    total = 0.0
    for t in terms:
        total += t
    assert f"{total:+.10f}" in text
    y = float(traces.passes[0].layers[36].tensors["moe.down"][4, 2])
    assert abs(total - y) < 1e-5  # the engine computed the same number


def test_follow_on_a_decoded_token_and_on_a_non_linear_block(dock, traces):
    dock.state.set_trace(traces)
    P = traces.prompt_len
    dock.show_cell("L37/kda.o_proj", P, 1)  # position P was processed by decode pass 1
    x = np.asarray(traces.passes[1].layers[36].tensors["kda.o_norm"], np.float64)[0]
    W = np.asarray(traces.weights[36]["kda.o_proj"], np.float64)
    assert f"{float(x @ W[:, 1]):+.10f}" in dock.follow_label.text()
    dock.show_cell("L37/kda.state", 0, 0)
    assert "not a plain matmul" in dock.follow_label.text()
    last = len(traces.tokens) - 1  # the last sampled token never went through the layers
    dock.show_cell("L37/kda.q_proj", last, 0)
    assert "no number" in dock.follow_label.text()


def test_korean(dock, traces):
    from app import i18n

    dock.state.set_trace(traces)
    dock.state.select_block("L4/mla.c_kv")
    try:
        i18n.set_language("ko")
        assert dock.windowTitle() == "검사기"
        assert dock.name_label.text() == "잠재 캐시 c_kv"
        assert "실제 Kimi K3 크기" in dock.meta_label.text()  # the shown model's real shape
        assert re.search("[가-힣]", dock.what.toPlainText())
    finally:
        i18n.set_language("en")


def test_a_cell_chosen_in_the_state_is_followed(dock, traces):
    """The scene reports a clicked cell to AppState; the inspector reads it from there (no parent lookups)."""
    dock.state.set_trace(traces)
    dock.state.select_cell("L37/moe.down", 4, 2)
    assert dock.state.block == "L37/moe.down" and dock.state.cell == ("L37/moe.down", 4, 2)
    x = np.asarray(traces.passes[0].layers[36].tensors["norm.ffn"], np.float64)[4]
    W = np.asarray(traces.weights[36]["moe.down"], np.float64)
    assert f"{float(x @ W[:, 2]):+.10f}" in dock.follow_label.text()
    dock.state.select_block("lm_head")  # another block: the cell is no longer chosen
    assert dock.state.cell is None and dock.name_label.text() == "LM head"


def test_retranslated_once_per_language_switch_in_the_main_window(qtbot, tmp_path):
    from app import i18n
    from app.window.main_window import MainWindow

    i18n.set_language("en")
    win = MainWindow(settings_path=str(tmp_path / "s.ini"), start_engine=False, language="en")
    qtbot.addWidget(win)
    inspector = win.docks["inspectorDock"]
    calls = []
    real = inspector.retranslate
    inspector.retranslate = lambda: (calls.append(1), real())
    try:
        win.registry.actions["lang_ko"].trigger()
        assert inspector.windowTitle() == "검사기" and len(calls) == 1
    finally:
        i18n.set_language("en")
        win.close()


def test_caption_says_what_rows_and_columns_are(dock, traces):
    """Under MLA scores the rows are heads × query tokens, under the KDA state head × d_k — not tokens;
    the caption reads the block-kind table, in both languages."""
    from app import i18n

    dock.state.set_trace(traces)
    dock.state.select_pass(0)
    dock.state.select_block("L4/mla.scores")
    assert "Rows = head × query token, columns = cache positions so far" in dock.values_note.text()
    S = np.asarray(traces.passes[0].layers[3].tensors["mla.scores"])
    assert dock.table.rowCount() == min(8, S.shape[0] * S.shape[1])
    assert dock.table.verticalHeaderItem(0).text() == "0"  # a head's row, not a token's piece
    dock.state.select_pass(1)  # one query per head in a decode step
    assert "Rows = head × query token" in dock.values_note.text() and "decode 1" in dock.values_note.text()
    dock.state.select_block("L37/kda.state")
    assert "Rows = head × d_k, columns = d_v" in dock.values_note.text()
    assert "tokens" not in dock.values_note.text().split(";")[0]
    dock.state.select_block("L37/norm.ffn")
    assert "Rows = tokens, columns = features" in dock.values_note.text()
    assert dock.table.verticalHeaderItem(0).text() != "0"  # rows are the pass's tokens: position and piece
    try:
        i18n.set_language("ko")
        dock.state.select_block("L4/mla.scores")
        dock.state.select_block("L37/kda.state")
        assert "행 = 헤드 × d_k, 열 = d_v" in dock.values_note.text()
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("block_id", ["L37/kda.state", "L4/mla.scores", "lm_head"])
def test_the_explanation_box_is_as_tall_as_its_text(dock, traces, qtbot, block_id):
    """The box had a fixed 110 px and scrolled while the lower half of the dock was empty. In a
    tall dock it now shows its whole text without a scroll bar; in a short one it is capped and scrolls."""
    dock.state.set_trace(traces)
    dock.resize(440, 1000)
    dock.state.select_block(block_id)
    what = dock.what
    # these explanations are longer than the old fixed box (110 px)
    qtbot.waitUntil(lambda: what.document().size().height() > 110, timeout=5000)
    doc_h = what.document().size().height()
    qtbot.waitUntil(lambda: not what.verticalScrollBar().isVisible() or what.verticalScrollBar().maximum() == 0,
                    timeout=2000)
    assert what.height() >= doc_h
    dock.resize(440, 300)
    qtbot.waitUntil(lambda: what.height() <= 0.6 * 300 + 1, timeout=5000)
