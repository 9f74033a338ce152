"""in_language: a prompt is inside the toy language when its pieces are whole documents plus a document prefix;
Trace.summary() says so when a prompt is outside."""
from compute import task
from compute.engine import ToyK3

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
    assert not outside.prompt_in_language() and inside.prompt_in_language()
    assert NOTE in outside.summary()
    assert NOTE not in inside.summary()
