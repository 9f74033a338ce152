"""The trained toy's synthetic language (compute.language.task): documents, split, grammar checker, prompts, roles."""
import pytest

from compute.language import task
from compute.language.tokenizer import TOY_PIECES, ToyTokenizer

TOK = ToyTokenizer()


def test_every_document_is_toy_vocab_and_tokenizes_back():
    docs = task.all_documents()
    assert len(docs) == 912 and len({d.pieces for d in docs}) == 912
    assert set(task.WORLD_PIECES) <= set(TOY_PIECES)
    for d in docs:
        assert d.pieces[-1] == task.END and set(d.pieces) <= set(TOY_PIECES)
        assert tuple(TOK.split(d.text)) == d.pieces


@pytest.mark.parametrize("text", [
    "로봇이 컵을 집었다.", "아이가 상자를 테이블 위에 놓았다.", "고양이가 사과를 옮겼다.\n",
    "사람이 책을 집었다. 그리고 책을 선반 위에 내려놓았다.",
    "the robot picks up the cup.", "the cats put the ball on the desk.",
    "the robot picks up the cup. it puts the cup on the table.",
    "the robots pick up the box. they place the box on the shelf.\n로봇이 공을 밀었다.",
])
def test_grammatical_examples(text):
    assert task.is_grammatical(text)


@pytest.mark.parametrize("text", [
    "로봇가 컵을 집었다.",  # subject particle: 로봇 ends in a consonant → 이
    "아이이 컵을 집었다.",  # 아이 ends in a vowel → 가
    "로봇이 컵를 집었다.",  # object particle: 컵 → 을
    "로봇이 상자을 집었다.",  # 상자 → 를
    "로봇이 컵을 집았다.",  # verb ending: 집 → 었다
    "로봇이 컵을 놓었다.",  # 놓 → 았다
    "로봇이 컵을 테이블 위에 집었다.",  # a place goes with 놓았다 / 내려놓았다
    "로봇이 컵을 집었다. 그리고 공을 테이블 위에 놓았다.",  # the second sentence must repeat the object
    "the robot pick up the cup.",  # agreement
    "the robots picks up the cup.",
    "the robot picks up the cup. it puts the ball on the table.",  # the same object
    "the robots pick up the cup. it puts the cup on the table.",  # pronoun number
    "the robot puts the cup.",  # puts needs a place
    "the robot picks up the cup",  # unfinished sentence
    "로봇이 컵을 집었다. the robot picks up the cup.",  # a document is one language
])
def test_checker_rejects_ungrammatical(text):
    assert not task.is_grammatical(text)


def test_prefixes_and_completion():
    assert task.is_grammatical("로봇이 컵을", complete=False)
    assert not task.is_grammatical("로봇이 컵을", complete=True)
    assert not task.is_grammatical("로봇이 컵를", complete=False)
    assert task.allowed_next(["로봇"]) == {"이"}
    assert task.allowed_next(TOK.split("the robot picks up the cup. it puts the")) == {" cup"}
    assert task.completion_grammatical("로봇이 컵을", [" 집", "었다", ".", "\n"])
    assert not task.completion_grammatical("로봇이 컵을", [" 집", "았다", ".", "\n"])
    assert not task.completion_grammatical("로봇이 컵을", [" 집", "었다", "."])  # never finished its document
    assert task.completion_grammatical("로봇이 컵을", [" 집", "었다", ".", "\n", "the", " delta"])  # cut at \n


def test_split_holds_out_whole_pairs_and_keeps_every_word():
    train, held = task.split(0)
    pairs = task.held_out_pairs(0)
    assert len(pairs) == 8 and len(train) + len(held) == 912
    assert not {(d.subject, d.obj) for d in train} & pairs
    assert {(d.subject, d.obj) for d in held} == pairs
    assert {d.subject for d in train} == {d.subject for d in task.all_documents()}
    assert {d.obj for d in train} == {d.obj for d in task.all_documents()}
    assert task.split(0) == (train, held) and task.held_out_pairs(1) != pairs


def test_held_out_prompts():
    prompts = task.held_out_prompts(0)
    assert prompts == task.held_out_prompts(0) and len(prompts) == len(set(prompts)) > 100
    pairs = task.held_out_pairs(0)
    for p in prompts:
        pieces = TOK.split(p)
        assert task.is_grammatical(p, complete=False)
        assert task.allowed_next(pieces)  # something is left to say
        assert any(s == pieces[0] and o in pieces for s, o in pairs) or pieces[0] == "the"
    assert "로봇이 공을" in prompts or "로봇이 공을" not in {"".join(d.pieces[:4]) for d in task.split(0)[1]}


def test_piece_types():
    roles = [task.piece_type(p) for p in TOK.split("로봇이 컵을 테이블 위에 놓았다.")]
    assert roles == ["subject", "particle", "object", "particle", "place", "particle", "particle", "verb",
                     "verb ending", "punctuation"]
    roles = [task.piece_type(p) for p in TOK.split("the robot picks up the cup. it")]
    assert roles == ["particle", "subject", "verb", "verb ending", "particle", "object", "punctuation",
                     "connective"]
    assert task.piece_type(" delta") == "other"
    assert {task.piece_type(p) for p in TOY_PIECES} <= set(task.PIECE_TYPES)
