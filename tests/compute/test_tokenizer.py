"""The toy tokenizer: deterministic, any Unicode round-trips, IDs in the real vocab range, readable vocab."""
from hypothesis import given, settings
from hypothesis import strategies as st

from compute.tokenizer import TOY_PIECES, ToyTokenizer

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
    assert len(TOK.vocab) == 64 and len({i for _, i in TOK.vocab}) == 64
    assert all(256 <= i < 163840 for _, i in TOK.vocab)
    assert any(any("\uac00" <= c <= "\ud7a3" for c in p) for p in TOY_PIECES)
    assert sum(p.strip().isascii() and p.strip().isalpha() for p in TOY_PIECES) >= 20
    assert ToyTokenizer(vocab_size=129280).piece_id("anything") < 129280
