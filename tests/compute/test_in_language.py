"""in_language: a prompt is inside the toy language when its pieces are whole documents plus a document prefix;
the trace records it once (Trace.prompt_in_language) and Trace.summary() says so when a prompt is outside."""
from compute.language import task
from compute.engine import ToyK3
from compute.trace import Knobs

NOTE = "outside the toy language: the answer is not meaningful"


def test_language_prompts_are_inside_and_others_outside():
    tok = task._tokenizer()
    assert task.in_language(tok.split("아이가 상자를 집었다. 그리고"))
    for d in task.all_documents()[:: 37]:
        for cut in range(len(d.pieces) + 1):
            assert task.in_language(d.pieces[:cut])
    assert not task.in_language(tok.split("hello world"))
    assert not task.in_language(tok.split("The robot picked up the cup"))
    assert not task.in_language(list(reversed(task.all_documents()[0].pieces)))


def test_summary_notes_a_prompt_outside_the_language():
    engine = ToyK3(device="cpu", weights="random")
    outside = engine.run("hello world", max_new_tokens=1)
    inside = engine.run("아이가 상자를 집었다. 그리고", max_new_tokens=1)
    assert outside.prompt_in_language is False and inside.prompt_in_language is True
    assert NOTE in outside.summary()
    assert NOTE not in inside.summary()


def test_the_trace_computes_it_once(monkeypatch):
    """A field filled when the trace is made: reading it, the summary, the notebook view and a resampled trace
    (same prompt) ask the language no more."""
    engine = ToyK3(device="cpu", weights="random")
    calls = []
    real = task.in_language
    monkeypatch.setattr(task, "in_language", lambda pieces: calls.append(list(pieces)) or real(pieces))
    trace = engine.run("hello world", max_new_tokens=2)
    assert calls == [[p for p, _ in trace.tokens[:trace.prompt_len]]]
    for _ in range(3):
        assert trace.prompt_in_language is False and NOTE in trace.summary() and NOTE in trace._repr_html_()
    again = engine.resample(trace, Knobs(temperature=0.5, sample_seed=3))
    assert again is not trace and again.prompt_in_language is False
    assert len(calls) == 1
