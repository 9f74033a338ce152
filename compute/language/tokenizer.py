"""A TOY tokenizer (honestly labelled): deterministic pieces and IDs, NOT Kimi K3's real tokenizer.

K3's real tokenizer is a tiktoken-based BPE with 163,840 entries. This toy one only imitates its shape:

- at each position the longest piece of the 117-entry toy vocabulary is taken when one matches;
- otherwise the next unit becomes a piece: the rest of an ASCII word as one word piece, one Hangul syllable per piece, one
  character for other letters/digits, and UTF-8 byte pieces "<0xE2>" for everything else (emoji, symbols) —
  so any Unicode text round-trips;
- IDs lie in the real vocab range: bytes are 0..255, every other piece gets a stable hash (CRC-32) modulo
  the vocab size, moved past collisions. They are NOT the real K3 token IDs.

The 117 toy-vocab pieces (a mix of English and Korean) are the rows of the toy LM head, so a generated
sequence reads as text. The first 64 are general pieces; the 53 after them are the world of the trained toy's
task (compute.language.task: robots, cups, tables, particles, verb stems and endings). New pieces are only ever
appended, so every earlier piece keeps its ID (IDs are assigned in order, collisions moved forward).
"""
from __future__ import annotations

import re
import unicodedata
import zlib

TOY_PIECES: tuple[str, ...] = (
    # English (leading space = word start, as in BPE vocabularies)
    " the", " model", " token", " layer", " expert", " memory", " state", " attention",
    " Kimi", " K3", " is", " a", " of", " and", " to", " in",
    " reads", " writes", " next", " each", " one", " new", " cache", " router",
    " delta", " gate", " learns", " fast", " GPU", " text", "s", "ing",
    # Korean
    " 모델", "은", "는", "이", "가", "을", "를", "의",
    " 토큰", " 전문가", " 메모리", " 상태", " 계산", " 다음", " 한국어", "입니다",
    " 층", " 주의", " 캐시", " 그리고", " 빠르게", " 읽고", " 씁니다", "에서",
    # punctuation / layout
    ".", ",", "!", "?", " ", "\n", ":", " —",
    # the trained toy's world (compute.language.task): Korean subjects (sentence-initial), objects, places, verbs
    "로봇", "아이", "사람", "고양이", " 컵", " 공", " 책", " 블록", " 상자", " 사과",
    " 테이블", " 선반", " 의자", " 책상", " 위", "에", " 집", "었다", " 밀", " 옮", "겼다", " 놓", "았다", " 내려놓",
    # English
    "the", " robot", " robots", " cat", " cats", " cup", " ball", " book", " box", " apple", " block",
    " table", " shelf", " chair", " desk", " on", " up", " picks", " pushes", " moves", " pick", " push", " move",
    " puts", " places", " put", " place", " it", " they",
)
assert len(TOY_PIECES) == 117 and len(set(TOY_PIECES)) == 117

_PRE = re.compile(r" ?[A-Za-z]+| ?[\uac00-\ud7a3]+| ?[0-9]|\s+|.", re.S)
_BYTE = re.compile(r"<0x([0-9A-F]{2})>")


def _is_hangul(ch: str) -> bool:
    return "\uac00" <= ch <= "\ud7a3"


class ToyTokenizer:
    """Deterministic toy tokenizer. `encode(text) -> list[(piece, id)]`, `decode(pieces) -> str`."""

    def __init__(self, vocab_size: int = 163840, pieces: tuple[str, ...] = TOY_PIECES):
        self.vocab_size = vocab_size
        self.pieces = pieces
        self._ids: dict[str, int] = {}
        used: set[int] = set(range(256))
        for p in pieces:
            self._ids[p] = self._fresh_id(p, used)
        self.vocab: list[tuple[str, int]] = [(p, self._ids[p]) for p in pieces]
        self.vocab_ids = {i: row for row, (_, i) in enumerate(self.vocab)}
        self._max_len = max(len(p) for p in pieces)
        self._cache: dict[str, int] = {}

    def _fresh_id(self, piece: str, used: set[int]) -> int:
        i = zlib.crc32(piece.encode("utf-8")) % self.vocab_size
        while i in used:
            i = (i + 1) % self.vocab_size
            if i < 256:
                i = 256
        used.add(i)
        return i

    def piece_id(self, piece: str) -> int:
        """ID of any piece: toy-vocab id, byte id (0..255) for "<0xNN>", else a stable hash."""
        if piece in self._ids:
            return self._ids[piece]
        m = _BYTE.fullmatch(piece)
        if m:
            return int(m.group(1), 16)
        if piece not in self._cache:
            used = set(range(256)) | set(self._ids.values())
            self._cache[piece] = self._fresh_id(piece, used)
        return self._cache[piece]

    def split(self, text: str) -> list[str]:
        """Text → pieces (see the module docstring)."""
        out: list[str] = []
        i, n = 0, len(text)
        while i < n:
            for L in range(min(self._max_len, n - i), 0, -1):
                if text[i: i + L] in self._ids:
                    out.append(text[i: i + L])
                    i += L
                    break
            else:
                pre = _PRE.match(text, i).group()
                lead = " " if pre[0] == " " and len(pre) > 1 else ""
                j = i + len(lead)
                ch = text[j]
                if ch.isascii() and ch.isalpha():
                    k = j
                    while k < n and text[k].isascii() and text[k].isalpha():
                        k += 1
                    out.append(text[i:k])
                    i = k
                elif _is_hangul(ch) or unicodedata.category(ch)[0] in "LN" or ch.isspace():
                    out.append(text[i: j + 1])
                    i = j + 1
                else:
                    if lead:
                        out.append(lead)
                    out.extend(f"<0x{b:02X}>" for b in ch.encode("utf-8"))
                    i = j + 1
        return out

    def encode(self, text: str) -> list[tuple[str, int]]:
        return [(p, self.piece_id(p)) for p in self.split(text)]

    def decode(self, pieces: list[str]) -> str:
        """Pieces → text; consecutive byte pieces are joined and decoded as UTF-8."""
        out: list[str] = []
        buf = bytearray()
        for p in pieces:
            m = _BYTE.fullmatch(p)
            if m:
                buf.append(int(m.group(1), 16))
                continue
            if buf:
                out.append(buf.decode("utf-8", errors="replace"))
                buf.clear()
            out.append(p)
        if buf:
            out.append(buf.decode("utf-8", errors="replace"))
        return "".join(out)
