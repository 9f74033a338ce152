"""Corrupted prompts for patching (docs/spec/k3-math.md §11): for a prompt of the toy language the piece that
decides the answer swapped for another of the same role, and the language's repeated-object cuts.

The piece swapped: the last object mentioned (for the repeated-object cut "아이가 상자를 집었다. 그리고" the
earlier mention ' 상자', whose copy is the answer), every occurrence of it in the current document, with its
Korean particle changed where the new object takes the other one (을/를); without an object the last subject,
then the last place, then the last verb. The replacement is the first other piece of the same role (the
language's own order) that keeps the prompt inside the language and its token count.
"""
from __future__ import annotations

from typing import NamedTuple

from compute.language import task

__all__ = ["Proposal", "propose", "repeated_object_cuts", "ROLE_ALTERNATIVES"]

_KO_STEMS = tuple(dict.fromkeys(v[0] for v in task.KO_TAKE + task.KO_PUT))
_EN_VERBS = tuple(dict.fromkeys([v[0] for s in (False, True) for v in task.EN_TAKE[s]]
                                + list(task.EN_PUT[False]) + list(task.EN_PUT[True])))
ROLE_ALTERNATIVES: tuple[tuple[str, ...], ...] = (
    tuple(task.KO_SUBJECTS), tuple(task.KO_OBJECTS), tuple(task.KO_PLACES), _KO_STEMS,
    tuple(task.EN_SUBJECTS), tuple(task.EN_OBJECTS), tuple(task.EN_PLACES), _EN_VERBS,
    ("이", "가"), ("을", "를"), (" it", " they"))
"""Groups of pieces that play the same role in the same slot of the language (a piece's resample alternatives
are the others of its group)."""
_GROUP = {p: g for g in ROLE_ALTERNATIVES for p in g}
_KO_PARTICLE = dict(task.KO_OBJECTS)


class Proposal(NamedTuple):
    """pieces: the corrupted prompt's pieces; position: where the swapped piece is (the last occurrence);
    old, new: the pieces; note: one line saying which."""

    pieces: tuple[str, ...]
    position: int
    old: str
    new: str
    note: str


def alternatives(piece: str) -> tuple[str, ...]:
    """The other pieces of the same role and slot (empty for a piece without one: articles, '.', '그리고')."""
    g = _GROUP.get(piece)
    return tuple(p for p in g if p != piece) if g else ()


def propose(pieces: list[str] | tuple[str, ...]) -> Proposal:
    """The corrupted prompt for `pieces` (the prompt's pieces up to the explained position). ValueError (one
    line) when the prompt lies outside the toy language or no swap keeps it inside."""
    pieces = tuple(pieces)
    if not task.in_language(pieces):
        raise ValueError("the prompt lies outside the toy language: give a corrupted prompt of the same token "
                         "count (patch(corrupted=...))")
    start = max((i + 1 for i, p in enumerate(pieces) if p == task.END), default=0)  # the current document
    for role in ("object", "subject", "place", "verb"):
        where = [i for i in range(start, len(pieces)) if task.piece_type(pieces[i]) == role]
        if not where:
            continue
        old = pieces[where[-1]]
        # one that keeps the Korean particle (a single piece changes), then one the prompt does not mention
        for new in sorted(alternatives(old), key=lambda a: (_KO_PARTICLE.get(a) != _KO_PARTICLE.get(old), a in pieces)):
            out = list(pieces)
            for i in range(start, len(pieces)):
                if out[i] == old:
                    out[i] = new
                    if role == "object" and old in _KO_PARTICLE and i + 1 < len(out) and out[i + 1] in ("을", "를"):
                        out[i + 1] = _KO_PARTICLE[new]
            if task.in_language(out):
                return Proposal(tuple(out), where[-1], old, new,
                                f"the {role} {old!r} at position {where[-1]} swapped for {new!r}")
    raise ValueError("no piece of this prompt can be swapped for another of its role: give a corrupted prompt "
                     "(patch(corrupted=...))")


def repeated_object_cuts(distractor: bool = False) -> list[tuple[str, str, str]]:
    """(prompt, answer, mention) of every repeated-object cut of the language: Korean "S이 O을 집었다. 그리고"
    (answer O) and English "the S picks up the O. it puts the" / "… places the" (answer O): 24 + 48. With
    distractor=True each is preceded by a one-sentence document about another object ("로봇이 공을 밀었다.\\n",
    "the cat pushes the ball.\\n"), the object and subject chosen by the cut's index (deterministic)."""
    out, seen = [], set()
    ko_objs, en_objs = list(task.KO_OBJECTS), list(task.EN_OBJECTS)
    for n, d in enumerate(d for d in task.all_documents() if d.pattern in ("K3", "E3")):
        cut = len(d.pieces) - 1 - d.pieces[::-1].index(d.obj)  # the repeated (second) mention
        prompt = "".join(d.pieces[:cut])
        if prompt in seen:
            continue
        seen.add(prompt)
        pre = ""
        if distractor:
            if d.lang == "ko":
                o = [x for x in ko_objs if x != d.obj][len(out) % 5]
                s = list(task.KO_SUBJECTS)[len(out) % 4]
                pre = f"{s}{task.KO_SUBJECTS[s]}{o}{task.KO_OBJECTS[o]} 밀었다.\n"
            else:
                o = [x for x in en_objs if x != d.obj][len(out) % 5]
                s = list(task.EN_SUBJECTS)[len(out) % 4]
                verb = " push" if task.EN_SUBJECTS[s] else " pushes"
                pre = f"the{s}{verb} the{o}.\n"
        out.append((pre + prompt, d.obj, d.obj))
    return out
