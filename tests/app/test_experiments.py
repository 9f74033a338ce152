"""Experiments dock in a real window: numbers equal independently computed formulas, driven by real events."""
from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from app import i18n
from app.docks.experiments import TABS, ExperimentsDock
from app.docks.experiments.attention import MAX_LINE
from app.docks.experiments.sampling import ANSWER
from app.state import AppState
from tests.app.learn_helpers import assert_rendered, click_slider_at, drag_slider, key_to_value, set_lang, type_text


@pytest.fixture
def dock(qtbot):
    set_lang("en")
    state = AppState()
    d = ExperimentsDock(state)
    qtbot.addWidget(d)
    d.resize(760, 900)
    d.show()
    qtbot.waitExposed(d)
    yield d
    set_lang("en")


def _num(label) -> float:
    return float(label.text().replace("−", "-"))


def _open(dock, key):
    dock.tabs.setCurrentIndex(TABS.index(key))
    return dock.pages[key]


# --- KDA ------------------------------------------------------------------------------------------------------
def test_kda_seed_numbers_by_keyboard(dock, qtbot):
    p = _open(dock, "kda")
    click_slider_at(qtbot, p.alpha, 0.2)  # move away first, so the keyboard really sets the values
    click_slider_at(qtbot, p.beta, 0.9)
    click_slider_at(qtbot, p.v, 0.1)
    key_to_value(qtbot, p.alpha, 0.9)
    key_to_value(qtbot, p.beta, 0.5)
    key_to_value(qtbot, p.v, 1.0)
    rows = {k: v[2] for k, v in p.rows.items()}
    assert _num(rows["s_prev"]) == pytest.approx(0.3)
    assert _num(rows["s_bar"]) == pytest.approx(0.27, abs=5e-4)
    assert _num(rows["error"]) == pytest.approx(0.73, abs=5e-4)
    assert _num(rows["s_new"]) == pytest.approx(0.635, abs=5e-4)
    assert _num(rows["out"]) == pytest.approx(0.635, abs=5e-4)


def test_kda_mouse_click_and_drag_recompute(dock, qtbot):
    p = _open(dock, "kda")
    click_slider_at(qtbot, p.alpha, 0.3)
    drag_slider(qtbot, p.beta, 0.5, 0.85)
    a, b, v = p.alpha.value(), p.beta.value(), p.v.value()
    assert 0.2 < a < 0.4 and 0.75 < b < 0.95
    s_bar = a * 0.3
    err = v - s_bar
    s_new = s_bar + b * err
    assert _num(p.rows["s_bar"][2]) == pytest.approx(s_bar, abs=5e-4)
    assert _num(p.rows["error"][2]) == pytest.approx(err, abs=5e-4)
    assert _num(p.rows["s_new"][2]) == pytest.approx(s_new, abs=5e-4)
    # the many-steps curve is the repeated rule
    xs, ys = p.curve_s.getData()
    s = 0.3
    for t in range(16):
        vt = v if t < 8 else 0.0
        s = a * s + b * (vt - a * s)
        assert ys[t + 1] == pytest.approx(s, abs=1e-12)


def test_kda_see_in_3d_selects_state_block(dock, qtbot):
    p = _open(dock, "kda")
    seen = []
    dock.state.block_selected.connect(seen.append)
    dock.state.select_layer(36)  # layer 37: KDA
    qtbot.mouseClick(p.link, Qt.LeftButton)
    assert seen[-1] == "L37/kda.state" and dock.state.layer == 36
    dock.state.select_layer(3)  # layer 4: MLA -> the first KDA layer
    qtbot.mouseClick(p.link, Qt.LeftButton)
    assert seen[-1] == "L1/kda.state" and dock.state.layer == 0


# --- AttnRes --------------------------------------------------------------------------------------------------
def test_attnres_weights_and_mix(dock, qtbot):
    p = _open(dock, "attnres")
    qtbot.mouseClick(p.radios[1], Qt.LeftButton, pos=QPoint(6, p.radios[1].height() // 2))
    assert p.group.checkedId() == 1
    click_slider_at(qtbot, p.strength, 0.5)
    w = p.strength.value()
    vals = [0.9, -0.6, 0.3, 1.5]
    e = [1.0, math.exp(w), 1.0, 1.0]
    expect = [x / sum(e) for x in e]
    np.testing.assert_allclose(p.bars.values, expect, atol=1e-12)
    assert sum(p.bars.values) == pytest.approx(1.0)
    mixed = sum(a * b for a, b in zip(expect, vals))
    assert f"{mixed:.3f}".replace("-", "−") in p.mixed.text()
    assert "2.100" in p.plain.text()
    # the important block's bar is the tallest drawn
    rects = p.bars.bar_rects()
    assert max(range(4), key=lambda i: rects[i].height()) == 1


# --- MoE ------------------------------------------------------------------------------------------------------
def test_moe_bias_pulls_expert_17_in_weights_stay_unbiased(dock, qtbot):
    p = _open(dock, "moe")
    click_slider_at(qtbot, p.bias, 0.5)  # bias ~ 0
    assert 17 not in p.grid.selected().tolist()
    click_slider_at(qtbot, p.bias, 1.0)  # +0.3
    assert p.bias.value() == pytest.approx(0.3)
    sel = p.grid.selected().tolist()
    assert 17 in sel and len(sel) == 16
    r = p.result()
    s = r.scores
    np.testing.assert_allclose(r.weights, s[r.idx] / s[r.idx].sum(), atol=1e-12)
    assert "selected" in p.status.text() and "not selected" not in p.status.text()
    assert p.table.rowCount() == 16 and {p.table.item(i, 0).text() for i in range(16)} >= {"17"}


# --- sampling -------------------------------------------------------------------------------------------------
def test_sampling_probabilities_and_seeded_token(dock, qtbot):
    p = _open(dock, "sampling")
    click_slider_at(qtbot, p.temperature, 0.35)
    click_slider_at(qtbot, p.top_p, 0.6)
    t, top_p = p.temperature.value(), p.top_p.value()
    logits = np.array([3.1, 2.4, 1.7, 0.6, -0.4])
    pr = np.exp(logits / t); pr /= pr.sum()
    np.testing.assert_allclose(p.bars.ghost, pr, atol=1e-12)
    order = np.argsort(-pr); keep = []; mass = 0.0
    for j in order:
        keep.append(j); mass += pr[j]
        if mass >= top_p - 1e-12:
            break
    after = np.zeros(5); after[keep] = pr[keep]; after /= after.sum()
    np.testing.assert_allclose(p.bars.values, after, atol=1e-9)
    idx = p.sampled_index()
    assert after[idx] > 0
    # seeded: the same seed gives the same token; "sample again" moves the seed
    first = p.sampled.text()
    qtbot.mouseClick(p.resample, Qt.LeftButton)
    assert p.seed.value() == 1
    p.seed.setValue(0)
    assert p.sampled.text() == first


def test_stream_chunks_are_not_tokens(dock, qtbot):
    p = _open(dock, "sampling")
    qtbot.mouseClick(p.play, Qt.LeftButton)
    qtbot.waitUntil(lambda: not p.timer.isActive(), timeout=15000)
    assert p.screen.toPlainText() == "".join(ANSWER["en"])
    chunks = p.chunks()
    assert p.log.count() == len(chunks) + 1  # + the summary line
    assert len(chunks) < len(ANSWER["en"]) and any(len(c) > 1 for c in chunks)


# --- attention ------------------------------------------------------------------------------------------------
def test_attention_click_token_and_switch_head(dock, qtbot):
    p = _open(dock, "attention")
    v = p.view
    r = v.token_rect(2, 0)
    qtbot.mouseClick(v, Qt.LeftButton, pos=r.center().toPoint())
    assert v.query == 2
    before = v.weights.copy()
    np.testing.assert_allclose(v.weights.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(v.line_widths(), 1.0 + v.weights[2] * MAX_LINE)
    assert v.weights[2, 3] == 0.0  # causal mask
    b = p.head_buttons[2]
    qtbot.mouseClick(b, Qt.LeftButton, pos=QPoint(6, b.height() // 2))
    assert p.head() == 2
    assert not np.allclose(before, v.weights)
    np.testing.assert_allclose(v.weights.sum(axis=1), 1.0, atol=1e-12)
    # independent Q·K softmax for the clicked row
    from compute.teaching.experiments import attention_inputs
    x, wq, wk = attention_inputs()
    q, k = x @ wq[2], x @ wk
    s = q[2] @ k[:3].T / 2.0
    e = np.exp(s - s.max())
    np.testing.assert_allclose(v.weights[2, :3], e / e.sum(), atol=1e-12)
    assert "causal" in p.warning.text()
    assert p.matrix.item(2, 0).text() == f"{v.weights[2, 0]:.3f}"


def test_context_map_switch(dock, qtbot):
    p = _open(dock, "attention")
    qtbot.mouseClick(p.ctx_b, Qt.LeftButton, pos=QPoint(6, p.ctx_b.height() // 2))
    assert p.map.context == "b"
    qtbot.waitUntil(lambda: p.map.t == 1.0, timeout=3000)  # "컵" has moved to its context-B position
    assert p.map.cup_position() == pytest.approx((0.55, -0.30))


# --- tokenizer ------------------------------------------------------------------------------------------------
def test_tokenizer_typing_and_bad_input(dock, qtbot):
    p = _open(dock, "tokenizer")
    p.input.clear()
    assert p.error.isVisible() and p.table.rowCount() == 0
    type_text(p.input, "컵 cup")
    assert not p.error.isVisible()
    data = "컵 cup".encode("utf-8")
    assert " ".join(f"{b:02X}" for b in data) in p.bytes.text()
    toks = p.tokens()
    assert p.table.rowCount() == len(toks)
    assert "".join(x for x, _ in toks) == "컵 cup"
    assert "14,336" in p.facts.text() and "163,840" in p.facts.text()


# --- all panels, both languages ---------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_all_panels_render_in_both_languages(dock, qtbot, lang):
    set_lang(lang)
    dock.retranslate()
    for i, key in enumerate(TABS):
        dock.tabs.setCurrentIndex(i)
        qtbot.waitUntil(lambda key=key: assert_rendered(dock.pages[key].widget()), timeout=5000)
        assert dock.pages[key].badge.text() == i18n.tr("learn.exp.badge")
    assert dock.windowTitle() == i18n.tr("learn.exp.dock_title")


def test_tokenizer_rows_come_from_the_engine_trace(dock, qtbot):
    """With a trace published, the rows shown are the engine's: its actual input rows for the traced prompt,
    its toy embedding table for toy-vocab pieces of other text (plain Trace data built here by hand)."""
    from app.docks.experiments.tokenizer import ROW_ROLE
    from compute.language.tokenizer import TOY_PIECES, ToyTokenizer
    from compute.trace import Knobs, PassTrace, Trace

    tok = ToyTokenizer()
    prompt = "the model reads"
    toks = tok.encode(prompt)
    rng = np.random.default_rng(5)
    vocab = [(p, tok.piece_id(p)) for p in TOY_PIECES]
    table = rng.normal(size=(len(vocab), 8))
    emb = rng.normal(size=(len(toks), 8))
    trace = Trace(tokens=toks, prompt_len=len(toks), text=prompt,
                  passes=[PassTrace(kind="prefill", positions=np.arange(len(toks)), embedding=emb)],
                  knobs=Knobs(), weights=[], weights_global={"embedding": table, "lm_head": table.T}, vocab=vocab)
    p = _open(dock, "tokenizer")
    dock.state.set_trace(trace)
    qtbot.mouseClick(p.use_prompt, Qt.LeftButton)
    assert p.input.text() == prompt
    for r in range(len(toks)):
        np.testing.assert_allclose(p.table.item(r, 3).data(ROW_ROLE), emb[r], atol=1e-12)
        assert p.table.item(r, 4).text() == "trace"
    # clicking a row spells out the lookup with the shown numbers
    rect = p.table.visualItemRect(p.table.item(1, 0))
    qtbot.mouseClick(p.table.viewport(), Qt.LeftButton, pos=rect.center())
    assert p.table.currentRow() == 1
    assert f"W_emb[{toks[1][1]:,}]" in p.detail.text()
    assert ", ".join(f"{v:.2f}" for v in emb[1]).replace("-", "−") in p.detail.text()
    assert "빵" not in TOY_PIECES  # a word outside the toy vocabulary (the world's nouns such as " 컵" are in it)
    p.input.setText(" model 빵")
    rows = {p.table.item(r, 0).text(): r for r in range(p.table.rowCount())}
    r_model = rows["␣model"]
    np.testing.assert_allclose(p.table.item(r_model, 3).data(ROW_ROLE), table[TOY_PIECES.index(" model")], atol=1e-12)
    assert p.table.item(r_model, 4).text() == "table"
    assert p.table.item(rows["빵"], 4).text().startswith("seeded")


def _hand_trace(prompt: str, seed: int, knobs=None):
    """A plain Trace of `prompt` with seeded embedding rows (no engine)."""
    from compute.language.tokenizer import TOY_PIECES, ToyTokenizer
    from compute.trace import Knobs, PassTrace, Trace

    tok = ToyTokenizer()
    toks = tok.encode(prompt)
    rng = np.random.default_rng(seed)
    vocab = [(p, tok.piece_id(p)) for p in TOY_PIECES]
    table = rng.normal(size=(len(vocab), 8))
    emb = rng.normal(size=(len(toks), 8))
    return Trace(tokens=toks, prompt_len=len(toks), text=prompt,
                 passes=[PassTrace(kind="prefill", positions=np.arange(len(toks)), embedding=emb)],
                 knobs=knobs or Knobs(), weights=[], weights_global={"embedding": table, "lm_head": table.T},
                 vocab=vocab)


def test_tokenizer_rebuilds_for_a_new_trace_only_once_its_tab_is_seen(dock, qtbot, monkeypatch):
    """Rebuilding the table takes the UI thread for tens of ms; a trace that arrives while the tab is
    covered (every slider step of a drag) must not pay for it, and knob-only changes never do."""
    from app.docks.experiments.tokenizer import ROW_ROLE
    from compute.trace import Knobs

    p = _open(dock, "tokenizer")
    calls = []
    real = p.recompute
    monkeypatch.setattr(p, "recompute", lambda *a: (calls.append(1), real(*a)))
    _open(dock, "kda")  # the tokenizer's tab is covered
    trace = _hand_trace(p.input.text(), 7)
    dock.state.set_trace(trace)
    assert calls == []
    p = _open(dock, "tokenizer")  # seen again: rebuilt once, with the trace's rows
    qtbot.waitUntil(lambda: calls == [1], timeout=2000)
    emb = np.asarray(trace.passes[0].embedding)
    for r in range(len(trace.tokens)):
        np.testing.assert_allclose(p.table.item(r, 3).data(ROW_ROLE), emb[r], atol=1e-12)
        assert p.table.item(r, 4).text() == "trace"
    same_rows = _hand_trace(p.input.text(), 7, Knobs(alpha=0.3))  # a knob change: same embedding rows
    dock.state.set_trace(same_rows)
    assert calls == [1] and not p._dirty  # not rebuilt, and no rebuild postponed for later either
