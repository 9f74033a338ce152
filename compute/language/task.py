"""The toy K3's training task: a small synthetic bilingual language of the app's world (robots, cups, tables).

Every sentence is a sequence of toy-vocabulary pieces (compute.language.tokenizer.TOY_PIECES), so the toy tokenizer
splits its text back into exactly these pieces. A DOCUMENT is one or two sentences followed by "\\n".

Korean (particles chosen by the preceding noun: 이/가 and 을/를 by its final consonant; verb endings by the
stem: 집+었다, 옮+겼다, 놓+았다):

    K1  S이/가 O을/를 V.                    로봇이 컵을 집었다.           V ∈ 집었다 밀었다 옮겼다
    K2  S이/가 O을/를 L 위에 P.             아이가 상자를 테이블 위에 놓았다.  P ∈ 놓았다 내려놓았다
    K3  S이/가 O을/를 집었다. 그리고 O을/를 L 위에 P.   the SAME object O again (a fact from 6+ tokens back)

English (the verb agrees with the subject's number; the pronoun of the second sentence too):

    E1  the S V the O.                      the robot picks up the cup.   V ∈ picks up / pushes / moves
    E2  the S P the O on the L.             the cats put the ball on the desk.  P ∈ puts / places
    E3  the S picks up the O. it/they P the O on the L.   the SAME object O, pronoun by S's number

`split(seed)` holds out whole (subject, object) pairs per language: no training document contains them, so
held-out prompts test composition, not memory. `is_grammatical(text)` checks text against the language
(documents separated by "\\n"); `piece_type(piece)` names a piece's role for the app's usage maps.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from functools import lru_cache

END = "\n"  # end of a document
DOT = "."

# ---------------------------------------------------------------------------------------------------- Korean
KO_SUBJECTS = {"로봇": "이", "아이": "가", "사람": "이", "고양이": "가"}  # sentence-initial (no leading space)
KO_OBJECTS = {" 컵": "을", " 공": "을", " 책": "을", " 블록": "을", " 상자": "를", " 사과": "를"}
KO_PLACES = (" 테이블", " 선반", " 의자", " 책상")
KO_TAKE = ((" 집", "었다"), (" 밀", "었다"), (" 옮", "겼다"))  # stem + ending (ending fixed by the stem)
KO_PUT = ((" 놓", "았다"), (" 내려놓", "았다"))
KO_PICK = (" 집", "었다")
KO_AND = " 그리고"
KO_ON = (" 위", "에")

# ---------------------------------------------------------------------------------------------------- English
EN_THE = "the"  # sentence-initial article
EN_SUBJECTS = {" robot": False, " robots": True, " cat": False, " cats": True}  # piece → plural?
EN_OBJECTS = (" cup", " ball", " book", " box", " apple", " block")
EN_PLACES = (" table", " shelf", " chair", " desk")
EN_TAKE = {False: ((" picks", " up"), (" pushes",), (" moves",)), True: ((" pick", " up"), (" push",), (" move",))}
EN_PUT = {False: (" puts", " places"), True: (" put", " place")}
EN_PICK = {False: (" picks", " up"), True: (" pick", " up")}
EN_PRONOUN = {False: " it", True: " they"}

WORLD_PIECES: tuple[str, ...] = tuple(dict.fromkeys(
    list(KO_SUBJECTS) + list(KO_OBJECTS) + list(KO_PLACES) + list(KO_ON)
    + [p for v in KO_TAKE + KO_PUT for p in v] + ["the"] + list(EN_SUBJECTS) + list(EN_OBJECTS) + list(EN_PLACES)
    + [" on", " up"] + [p for s in (False, True) for v in EN_TAKE[s] for p in v] + list(EN_PUT[False])
    + list(EN_PUT[True]) + [" it", " they"]))
"""The pieces this language needs beyond the tokenizer's first 64 (particles, " the", " 그리고", "." are there)."""


@dataclass(frozen=True)
class Document:
    lang: str  # "ko" | "en"
    subject: str  # the subject piece
    obj: str  # the object piece
    pattern: str  # "K1".."K3" | "E1".."E3"
    pieces: tuple[str, ...]  # the document's pieces, ending with END

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def _ko_docs(s: str, o: str) -> list[Document]:
    subj = (s, KO_SUBJECTS[s])
    obj = (o, KO_OBJECTS[o])
    out = [Document("ko", s, o, "K1", subj + obj + v + (DOT, END)) for v in KO_TAKE]
    for place, put in itertools.product(KO_PLACES, KO_PUT):
        out.append(Document("ko", s, o, "K2", subj + obj + (place,) + KO_ON + put + (DOT, END)))
    for place, put in itertools.product(KO_PLACES, KO_PUT):
        out.append(Document("ko", s, o, "K3", subj + obj + KO_PICK + (DOT, KO_AND) + obj + (place,) + KO_ON
                            + put + (DOT, END)))
    return out


def _en_docs(s: str, o: str) -> list[Document]:
    pl = EN_SUBJECTS[s]
    head = (EN_THE, s)
    obj = (" the", o)
    out = [Document("en", s, o, "E1", head + v + obj + (DOT, END)) for v in EN_TAKE[pl]]
    for place, put in itertools.product(EN_PLACES, EN_PUT[pl]):
        out.append(Document("en", s, o, "E2", head + (put,) + obj + (" on", " the", place, DOT, END)))
    for place, put in itertools.product(EN_PLACES, EN_PUT[pl]):
        out.append(Document("en", s, o, "E3", head + EN_PICK[pl] + obj + (DOT, EN_PRONOUN[pl], put) + obj
                            + (" on", " the", place, DOT, END)))
    return out


@lru_cache(maxsize=1)
def all_documents() -> tuple[Document, ...]:
    """Every document of the language, in a fixed order."""
    docs: list[Document] = []
    for s, o in itertools.product(KO_SUBJECTS, KO_OBJECTS):
        docs += _ko_docs(s, o)
    for s, o in itertools.product(EN_SUBJECTS, EN_OBJECTS):
        docs += _en_docs(s, o)
    return tuple(docs)


def held_out_pairs(seed: int = 0) -> frozenset[tuple[str, str]]:
    """The (subject, object) pairs no training document contains: 4 of the 24 per language, seeded, chosen so
    that every subject and every object still occurs in training."""
    rng = random.Random(seed)
    out: set[tuple[str, str]] = set()
    for subjects, objects in ((list(KO_SUBJECTS), list(KO_OBJECTS)), (list(EN_SUBJECTS), list(EN_OBJECTS))):
        objs = rng.sample(objects, 4)
        subs = rng.sample(subjects, 4)
        out.update(zip(subs, objs))  # a matching: each held-out subject/object appears in one held-out pair
    return frozenset(out)


def split(seed: int = 0) -> tuple[list[Document], list[Document]]:
    """(train, held-out) documents: held-out = every document of a held-out (subject, object) pair."""
    pairs = held_out_pairs(seed)
    train = [d for d in all_documents() if (d.subject, d.obj) not in pairs]
    held = [d for d in all_documents() if (d.subject, d.obj) in pairs]
    return train, held


def sample_stream(docs: list[Document], n_tokens: int, rng: random.Random) -> list[str]:
    """Random documents concatenated (each starting at a document start), cut to n_tokens pieces."""
    out: list[str] = []
    while len(out) < n_tokens:
        out.extend(rng.choice(docs).pieces)
    return out[:n_tokens]


# ---------------------------------------------------------------------------------------------------- checking
@lru_cache(maxsize=1)
def _prefix_table() -> dict[tuple[str, ...], frozenset[str]]:
    """Every proper prefix of a document → the set of pieces that may follow it."""
    nxt: dict[tuple[str, ...], set[str]] = {}
    for d in all_documents():
        for i in range(len(d.pieces)):
            nxt.setdefault(d.pieces[:i], set()).add(d.pieces[i])
    return {k: frozenset(v) for k, v in nxt.items()}


def allowed_next(prefix: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The pieces the grammar allows after `prefix` (the pieces of the current document so far)."""
    return _prefix_table().get(tuple(prefix), frozenset())


def _documents_of(pieces: list[str]) -> list[tuple[str, ...]]:
    docs, cur = [], []
    for p in pieces:
        cur.append(p)
        if p == END:
            docs.append(tuple(cur))
            cur = []
    if cur:
        docs.append(tuple(cur))
    return docs


def pieces_grammatical(pieces: list[str], complete: bool = True) -> bool:
    """Whether the pieces form documents of the language. complete=True: every document, the last included,
    is whole (the last may omit its final "\\n"); False: the last may stop anywhere inside a document."""
    docs = _documents_of(list(pieces))
    if not docs:
        return not complete
    full = {d.pieces for d in all_documents()}
    for d in docs[:-1]:
        if d not in full:
            return False
    last = docs[-1]
    if last in full:
        return True
    if complete:
        return last + (END,) in full
    return last in _prefix_table()


@lru_cache(maxsize=1)
def language_pieces() -> frozenset[str]:
    """Every piece some document of the language uses (the toy vocabulary has others it never sees in training:
    byte fallbacks, the seed's demo pieces)."""
    return frozenset(p for d in all_documents() for p in d.pieces)


def in_language(pieces: list[str] | tuple[str, ...]) -> bool:
    """Whether a prompt's pieces lie inside the toy language: they form whole documents followed by a prefix of
    a document (an empty prompt counts as inside). Outside it, the toy's answer is not meaningful."""
    return pieces_grammatical(list(pieces), complete=False) or not pieces


def is_grammatical(text: str, complete: bool = True) -> bool:
    """Whether `text` (a prompt and its completion) is grammatical in the language; see pieces_grammatical.
    The text is split by the toy tokenizer."""
    from compute.language.tokenizer import ToyTokenizer

    return pieces_grammatical(_tokenizer().split(text), complete)


@lru_cache(maxsize=1)
def _tokenizer():
    from compute.language.tokenizer import ToyTokenizer

    return ToyTokenizer()


def completion_grammatical(prompt: str, completion_pieces: list[str]) -> bool:
    """The T=0 check: the prompt followed by the generated pieces, cut after the first "\\n", is one whole
    document (an in-context ending: the particles, the endings and the repeated object all fit)."""
    pieces = _tokenizer().split(prompt) + list(completion_pieces)
    if END in pieces[len(pieces) - len(completion_pieces):]:
        cut = len(pieces) - len(completion_pieces) + list(completion_pieces).index(END)
        pieces = pieces[: cut + 1]
    else:
        return False
    return tuple(pieces) in {d.pieces for d in all_documents()}


# ---------------------------------------------------------------------------------------------------- prompts
def prompt_cuts(doc: Document) -> list[int]:
    """Where a document is cut into a prompt: after every piece from its object (with the Korean particle)
    to its last "." — so each prompt holds the document's (subject, object) pair and lacks at least "\\n"."""
    start = doc.pieces.index(doc.obj) + (2 if doc.lang == "ko" else 1)
    return list(range(start, len(doc.pieces)))


def held_out_prompts(seed: int = 0) -> list[str]:
    """Distinct prompt strings cut from the held-out documents (for scoring and the app's usage map), in a
    fixed order, e.g. "로봇이 공을", "the cats pick up the apple. they"."""
    out: dict[str, None] = {}
    for d in split(seed)[1]:
        for c in prompt_cuts(d):
            out["".join(d.pieces[:c])] = None
    return list(out)


# ---------------------------------------------------------------------------------------------------- piece roles
_TYPES: dict[str, str] = {}
for _p in KO_SUBJECTS:
    _TYPES[_p] = "subject"
for _p in EN_SUBJECTS:
    _TYPES[_p] = "subject"
for _p in list(KO_OBJECTS) + list(EN_OBJECTS):
    _TYPES[_p] = "object"
for _p in KO_PLACES + EN_PLACES:
    _TYPES[_p] = "place"
for _p in ("이", "가", "을", "를", "에", " 위", " on", " the", "the"):
    _TYPES[_p] = "particle"
for _v in KO_TAKE + KO_PUT:
    _TYPES[_v[0]] = "verb"
    _TYPES[_v[1]] = "verb ending"
for _s in (False, True):
    for _v in EN_TAKE[_s]:
        _TYPES[_v[0]] = "verb"
    for _p in EN_PUT[_s]:
        _TYPES[_p] = "verb"
_TYPES[" up"] = "verb ending"
for _p in (KO_AND, " it", " they"):
    _TYPES[_p] = "connective"
_TYPES[DOT] = "punctuation"
_TYPES[END] = "punctuation"
PIECE_TYPES = ("subject", "object", "place", "particle", "verb", "verb ending", "connective", "punctuation", "other")


def piece_type(piece: str) -> str:
    """The role of a piece in the language: one of PIECE_TYPES ("particle" covers 이/가, 을/를, 에, 위 and the
    English articles/prepositions; "verb ending" the Korean endings 었다/았다/겼다 and English " up")."""
    return _TYPES.get(piece, "other")


__all__ = ["Document", "all_documents", "split", "held_out_pairs", "sample_stream", "allowed_next",
           "pieces_grammatical", "is_grammatical", "completion_grammatical", "held_out_prompts", "prompt_cuts",
           "piece_type", "PIECE_TYPES", "WORLD_PIECES", "END"]
