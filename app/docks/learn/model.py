"""The Learn dock's Qt-free quiz model (X5): the questions (i18n keys, right answer, where each answer links) and
the session's bookkeeping (first answer to each question counts)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    key: str  # i18n: learn.quiz.<key>.q / .a0..a3 / .why
    correct: int  # index of the right option
    link: str  # "exp:<tab>", "learn:<tab>", "block:<block id>"


QUESTIONS: tuple[Question, ...] = (
    Question("experts", 2, "exp:moe"),
    Question("kda_state", 1, "block:L1/kda.state"),
    Question("kda_numbers", 3, "exp:kda"),
    Question("bias", 0, "exp:moe"),
    Question("mla_cache", 2, "block:L4/mla.c_kv"),
    Question("row_bytes", 1, "exp:tokenizer"),
    Question("top_p", 3, "exp:sampling"),
    Question("chunk", 0, "exp:sampling"),
    Question("attention", 2, "exp:attention"),
    Question("attnres", 1, "exp:attnres"),
    Question("speculative", 0, "learn:serving"),
    Question("prefix", 3, "learn:serving"),
    Question("xtml", 1, "learn:harness"),
    Question("throughput", 2, "learn:quality"),
    Question("cost", 1, "learn:serving"),
    Question("latent", 0, "block:L37/moe.down"),
)
N_OPTIONS = 4


class QuizSession:
    """Qt-free bookkeeping: answers given (first one per question counts), score."""

    def __init__(self, questions=QUESTIONS):
        self.questions = questions
        self.first: dict[int, int] = {}

    def answer(self, q: int, option: int) -> bool:
        self.first.setdefault(q, option)
        return option == self.questions[q].correct

    @property
    def score(self) -> int:
        return sum(1 for q, o in self.first.items() if o == self.questions[q].correct)

    @property
    def answered(self) -> int:
        return len(self.first)
