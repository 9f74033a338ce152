"""Quiz "check your understanding" (X5): multiple choice, each answer explained and linked to the panel or
block that teaches it; the score is kept for the session (first answer to each question counts)."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QButtonGroup, QGridLayout, QHBoxLayout, QLabel, QPushButton, QRadioButton,
                               QScrollArea, QToolButton)

from app.docks.learn.model import N_OPTIONS, QUESTIONS, QuizSession
from app.i18n import tr
from app.widgets.controls import scroll_page
from app.widgets.paint import css
from app.slot_guard import guarded


class _ClickLabel(QLabel):
    """The wrapped text of an option; clicking it checks its radio button."""

    def __init__(self, button: QRadioButton):
        super().__init__()
        self.button = button
        self.setWordWrap(True)

    @guarded
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
            b.clicked.connect(guarded(lambda _c=False, i=i: self.go(i)))
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
        self.prev.clicked.connect(guarded(lambda: self.go(self.index - 1)))
        self.next.clicked.connect(guarded(lambda: self.go(self.index + 1)))
        self.check.clicked.connect(self.check_answer)
        self.restart.clicked.connect(self.start_over)
        self.link.clicked.connect(guarded(lambda: self.link_requested.emit(QUESTIONS[self.index].link)))
        self.group.idToggled.connect(guarded(lambda _i, on: on and self.check.setEnabled(True)))

    @guarded
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

    @guarded
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
        color = css("good" if ok else "bad")
        self.feedback.setText(f"<b style='color:{color}'>{head}</b> {tr(f'learn.quiz.{q.key}.why')}")
        self.link.setText(tr("learn.quiz.show_me"))
        self.link.setVisible(True)

    def _update_score(self):
        for i, b in enumerate(self.dots):
            if i in self.session.first:
                ok = self.session.first[i] == QUESTIONS[i].correct
                bg = css("good" if ok else "bad")
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
