"""Quiz "check your understanding" (X5): multiple choice, each answer explained and linked to the panel or
block that teaches it; the score is kept for the session (first answer to each question counts)."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QButtonGroup, QFrame, QGridLayout, QHBoxLayout, QLabel, QPushButton, QRadioButton, QScrollArea,
                               QToolButton, QVBoxLayout, QWidget)

from app.docks.experiments_common import scroll_page
from app.i18n import tr


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


class _ClickLabel(QLabel):
    """The wrapped text of an option; clicking it checks its radio button."""

    def __init__(self, button: QRadioButton):
        super().__init__()
        self.button = button
        self.setWordWrap(True)

    def mousePressEvent(self, event):  # noqa: N802
        self.button.click()


class QuizPanel(QScrollArea):
    link_requested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.session = QuizSession()
        self.index = 0
        lay, self.title = scroll_page(self)
        self.progress = QLabel(); self.progress.setObjectName("quiz_progress")
        self.score = QLabel(); self.score.setObjectName("quiz_score")
        top = QHBoxLayout(); top.addWidget(self.progress); top.addStretch(1); top.addWidget(self.score)
        lay.addLayout(top)
        dots_box = QHBoxLayout()
        dots = QGridLayout()
        dots.setSpacing(4)
        self.dots = []
        for i in range(len(QUESTIONS)):
            b = QToolButton(); b.setObjectName(f"quiz_dot_{i}"); b.setText(str(i + 1)); b.setFixedSize(28, 24)
            b.clicked.connect(lambda _c=False, i=i: self.go(i))
            self.dots.append(b); dots.addWidget(b, i // 8, i % 8)
        dots_box.addLayout(dots); dots_box.addStretch(1)
        lay.addLayout(dots_box)
        self.question = QLabel(); self.question.setObjectName("quiz_question"); self.question.setWordWrap(True)
        qf = self.question.font(); qf.setBold(True); qf.setPointSizeF(qf.pointSizeF() * 1.1); self.question.setFont(qf)
        lay.addWidget(self.question)
        self.group = QButtonGroup(self)
        self.options = []
        self.option_labels = []
        for i in range(N_OPTIONS):
            rb = QRadioButton(f"{'ABCD'[i]}."); rb.setObjectName(f"quiz_option_{i}")
            text = _ClickLabel(rb); text.setObjectName(f"quiz_option_text_{i}")
            row = QHBoxLayout(); row.addWidget(rb, 0, Qt.AlignTop); row.addWidget(text, 1)
            self.group.addButton(rb, i); self.options.append(rb); self.option_labels.append(text)
            lay.addLayout(row)
        btns = QHBoxLayout()
        self.prev = QPushButton(); self.prev.setObjectName("quiz_prev")
        self.check = QPushButton(); self.check.setObjectName("quiz_check")
        self.next = QPushButton(); self.next.setObjectName("quiz_next")
        self.restart = QPushButton(); self.restart.setObjectName("quiz_restart")
        btns.addWidget(self.prev); btns.addWidget(self.check); btns.addWidget(self.next); btns.addStretch(1)
        btns.addWidget(self.restart)
        lay.addLayout(btns)
        self.feedback = QLabel(); self.feedback.setObjectName("quiz_feedback"); self.feedback.setWordWrap(True)
        self.feedback.setTextFormat(Qt.RichText)
        lay.addWidget(self.feedback)
        self.link = QPushButton(); self.link.setObjectName("quiz_link")
        lrow = QHBoxLayout(); lrow.addWidget(self.link); lrow.addStretch(1)
        lay.addLayout(lrow)
        lay.addStretch(1)
        self.prev.clicked.connect(lambda: self.go(self.index - 1))
        self.next.clicked.connect(lambda: self.go(self.index + 1))
        self.check.clicked.connect(self.check_answer)
        self.restart.clicked.connect(self.start_over)
        self.link.clicked.connect(lambda: self.link_requested.emit(QUESTIONS[self.index].link))
        self.group.idToggled.connect(lambda _i, on: on and self.check.setEnabled(True))

    def start_over(self):
        self.session = QuizSession()
        self.go(0)

    def go(self, i: int):
        self.index = max(0, min(len(QUESTIONS) - 1, i))
        self.show_question()

    def show_question(self):
        q = QUESTIONS[self.index]
        self.group.setExclusive(False)
        for rb in self.options:
            rb.setChecked(False)
        self.group.setExclusive(True)
        self.question.setText(tr(f"learn.quiz.{q.key}.q"))
        for i, lab in enumerate(self.option_labels):
            lab.setText(tr(f"learn.quiz.{q.key}.a{i}"))
        self.feedback.setText("")
        self.link.setVisible(False)
        self.check.setEnabled(False)
        self.prev.setEnabled(self.index > 0)
        self.next.setEnabled(self.index < len(QUESTIONS) - 1)
        if self.index in self.session.first:  # already answered: show the result again
            self.options[self.session.first[self.index]].setChecked(True)
            self._show_feedback(self.session.first[self.index])
        self._update_score()

    def check_answer(self):
        opt = self.group.checkedId()
        if opt < 0:
            self.feedback.setText(tr("learn.quiz.choose"))
            return
        self.session.answer(self.index, opt)
        self._show_feedback(opt)
        self._update_score()

    def _show_feedback(self, opt: int):
        q = QUESTIONS[self.index]
        ok = opt == q.correct
        head = tr("learn.quiz.right") if ok else tr("learn.quiz.wrong", answer="ABCD"[q.correct])
        color = "#2e9e6a" if ok else "#d9534f"
        self.feedback.setText(f"<b style='color:{color}'>{head}</b> {tr(f'learn.quiz.{q.key}.why')}")
        self.link.setText(tr("learn.quiz.show_me"))
        self.link.setVisible(True)

    def _update_score(self):
        for i, b in enumerate(self.dots):
            if i in self.session.first:
                ok = self.session.first[i] == QUESTIONS[i].correct
                bg = "#2e9e6a" if ok else "#d9534f"
                style = f"background:{bg}; color:white; border-radius:4px;"
            else:
                style = "border: 1px solid palette(mid); border-radius:4px;"
            if i == self.index:
                style += " font-weight:bold; border: 2px solid palette(highlight);"
            b.setStyleSheet(f"QToolButton {{{style}}}")
        self.progress.setText(tr("learn.quiz.progress", n=self.index + 1, total=len(QUESTIONS)))
        self.score.setText(tr("learn.quiz.score", score=self.session.score, answered=self.session.answered,
                              total=len(QUESTIONS)))

    def retranslate(self):
        self.title.setText(tr("learn.quiz.title"))
        self.prev.setText(tr("learn.quiz.prev"))
        self.check.setText(tr("learn.quiz.check"))
        self.next.setText(tr("learn.quiz.next"))
        self.restart.setText(tr("learn.quiz.restart"))
        self.show_question()
