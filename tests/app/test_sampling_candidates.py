"""The trace player's sampling step lists the top candidates as words with their probabilities, before and
after temperature / top-p, and they are the trace's numbers."""
import html

import numpy as np
import pytest

from app import player
from app.i18n import tr
from compute.engine import ToyK3
from compute.trace import Knobs

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


@pytest.fixture(scope="module")
def engine():
    return ToyK3(device="cpu", weights="random")


@pytest.mark.parametrize("knobs", [Knobs(), Knobs(temperature=0.6, top_p=0.5), Knobs(temperature=0.0)])
def test_candidates_are_the_traces_probabilities(engine, knobs):
    trace = engine.run("로봇이 컵을", max_new_tokens=2, knobs=knobs)
    for i, ps in enumerate(trace.passes):
        cands = player.sampling_candidates(trace, i)
        assert len(cands) == 5
        logits = np.asarray(ps.final["lm_head"][-1], np.float64)
        softmax = np.exp(logits - logits.max())
        softmax /= softmax.sum()
        pieces = [p for p, _ in trace.vocab]
        befores = [b for _, b, _ in cands]
        assert befores == sorted(befores, reverse=True)
        assert sum(befores) <= 1 + 1e-9 and sum(a for _, _, a in cands) <= 1 + 1e-9
        assert np.isclose(befores[0], softmax.max())
        for word, before, after in cands:
            j = pieces.index(word)
            assert np.isclose(before, softmax[j]) and after == float(ps.final["probs"][j])
        if knobs.temperature == 0.0:  # greedy: everything on the most probable word
            assert cands[0][2] == 1.0 and all(a == 0.0 for _, _, a in cands[1:])


def test_the_sampling_step_shows_words_and_probabilities(main_window, qtbot):
    win = main_window
    dock = win.docks["TracePlayerDock"]
    trace = win.state.trace
    steps = win.state.player.steps
    index = next(i for i, s in enumerate(steps) if s.kind == "sampling")
    win.state.player.seek(index)
    qtbot.waitUntil(lambda: tr("weights.sampling.title") in html.unescape(dock.facts.text()), timeout=5000)
    text = html.unescape(dock.facts.text())
    ps = trace.passes[steps[index].pass_index]  # the five most probable words, from the trace's own logits
    logits = np.asarray(ps.final["lm_head"][-1], np.float64)
    softmax = np.exp(logits - logits.max())
    softmax /= softmax.sum()
    pieces = [p for p, _ in trace.vocab]
    for j in np.argsort(-softmax)[:5]:
        assert f"{pieces[j]!r}  {softmax[j]:.3f} → {float(ps.final['probs'][j]):.3f}" in text
    # a step that samples nothing lists no candidates
    win.state.player.seek(0)
    qtbot.waitUntil(lambda: tr("weights.sampling.title") not in html.unescape(dock.facts.text()), timeout=5000)


def test_an_mla_block_shows_what_the_decode_token_attends_to(main_window, qtbot):
    win = main_window
    trace = win.state.trace
    layer = next(i for i, L in enumerate(trace.passes[0].layers) if L.mixer == "mla")
    dock = win.docks["inspectorDock"]
    win.state.select_pass(1)  # the first decode step
    win.state.select_block(f"L{layer + 1}/mla.softmax")
    label = dock.attention_label
    qtbot.waitUntil(label.isVisible, timeout=5000)
    position, words, heads = player.attention_over_tokens(trace, 1, layer)
    assert position == trace.prompt_len and len(words) == trace.prompt_len + 1
    assert sum(w for _, w in words) == pytest.approx(1.0)
    text = html.unescape(label.text())
    assert tr("weights.attention.title", token=repr(trace.tokens[position][0]), layer=layer + 1, heads=heads) in text
    for piece, w in words:
        assert repr(piece) in text and f"{w:.3f}" in text
    assert "not Kimi K3" in dock.values_note.text()  # whose numbers these are
    win.state.select_block(f"L{layer + 1}/norm.ffn")  # not an attention block: no list
    assert not label.isVisible()
    win.state.select_pass(0)
