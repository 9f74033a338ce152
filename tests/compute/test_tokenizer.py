"""The toy tokenizer: deterministic, any Unicode round-trips, IDs in the real vocab range, readable vocab."""
from hypothesis import given, settings
from hypothesis import strategies as st

from compute.language.tokenizer import TOY_PIECES, ToyTokenizer

TOK = ToyTokenizer()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_round_trip_any_unicode(text):
    enc = TOK.encode(text)
    assert TOK.decode([p for p, _ in enc]) == text
    assert all(0 <= i < 163840 for _, i in enc)
    assert TOK.encode(text) == enc


def test_korean_and_english_pieces():
    enc = TOK.encode("Kimi K3 reads the next token. 모델은 다음 토큰을 계산합니다")
    pieces = [p for p, _ in enc]
    assert pieces[:7] == ["Kimi", " K3", " reads", " the", " next", " token", "."]
    assert " 모델" in pieces and "은" in pieces and " 토큰" in pieces and "합" in pieces  # syllable fallback


def test_bytes_for_symbols():
    enc = TOK.encode("🙂")
    assert [p for p, _ in enc] == ["<0xF0>", "<0x9F>", "<0x99>", "<0x82>"]
    assert [i for _, i in enc] == [0xF0, 0x9F, 0x99, 0x82]


def test_vocab():
    assert len(TOK.vocab) == 117 and len({i for _, i in TOK.vocab}) == 117
    assert all(256 <= i < 163840 for _, i in TOK.vocab)
    assert any(any("\uac00" <= c <= "\ud7a3" for c in p) for p in TOY_PIECES)
    assert sum(p.strip().isascii() and p.strip().isalpha() for p in TOY_PIECES) >= 20
    assert ToyTokenizer(vocab_size=129280).piece_id("anything") < 129280


def test_world_pieces_appended_keep_earlier_ids():
    """The trained toy's world pieces come after the first 64, so every earlier piece keeps its ID."""
    assert ToyTokenizer(pieces=TOY_PIECES[:64]).vocab == TOK.vocab[:64]
    assert TOK.split("로봇이 컵을 집었다") == ["로봇", "이", " 컵", "을", " 집", "었다"]
    assert TOK.split("the robots put the book on the desk.") == [
        "the", " robots", " put", " the", " book", " on", " the", " desk", "."]
    assert TOK.split(" 책상") == [" 책상"] and TOK.split(" 책을") == [" 책", "을"]  # longest match
