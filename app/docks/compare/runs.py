"""The Compare dock's "Same prompt" page (issue 41.3): the two picked models run on one prompt, side by side —
each model's answer and top-5, the answer's logit-lens curve (x = depth, layer / layers, so a 27-layer and a
93-layer model share the axis), its residual patching map (layer × position, each map over its own model's
depth) and the named figures of compute.teaching.compare_run (where the copy leaves the mention and reaches the answer,
the mixer of each kind whose patching restores most, the heads and experts whose knock-out removes most).

A model that runs seeded random weights (no trained toy ships for it) says so in its column's header, in the
caveat colour, before any number: its figures are noise, not findings.

The runs happen on the compare-runs lane of app.engine.background (the engines of app.engine.explain_service's cache, under its ENGINE_LOCK); the page
keeps the latest request only (a newer Run drops an older result)."""
from __future__ import annotations

import time

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from app.engine.background import BackgroundJobs
from app.docks.compare.view import ComparisonView, figures_text  # noqa: F401 - figures_text: the page's text
from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.safe_text import plain


def run_models(names: tuple[str, str], prompt: str):
    """compute.teaching.compare_run.side_run of both bundled models (their trained toy where one ships) on `prompt`, on the
    calling thread, with the shared engine cache's lock held while an engine runs."""
    from app.engine.explain_service import ENGINE_LOCK, engine_for
    from compute.teaching.compare_run import side_run
    from compute.model_defaults import config_named

    out = []
    for name in names:
        config = config_named(name)
        with ENGINE_LOCK:
            out.append(side_run(engine_for(config, "trained"), prompt))
    return tuple(out)


def models_job(names: tuple[str, str], prompt: str):
    """The background job of one request (app.engine.background): run_models, timed. A prompt outside the vocabulary or
    an unreadable config comes back as the job's one-line failure."""
    def run(job):
        t0 = time.perf_counter()
        return run_models(names, prompt), time.perf_counter() - t0
    return run


class SamePromptPage(QWidget):
    """See the module docstring. `models()` -> (stem A, stem B) of the dock's pickers; `prompt()` the app's.
    `ran` says when the latest request ends: "" when its results are shown, else the one-line failure."""

    ran = Signal(str)

    def __init__(self, models, prompt, parent=None):
        super().__init__(parent)
        self.setObjectName("compare_run_page")
        self._models, self._prompt = models, prompt
        self.results = None  # (SideRun, SideRun) of the latest finished request
        self.results_for = None  # ((stem A, stem B), prompt) of those results
        self._request = None
        self.seconds = None
        self._serial = 0
        self.jobs = BackgroundJobs("compare-runs", self)
        self.jobs.done.connect(self._finished)
        self.jobs.failed.connect(self._failed)
        self.prompt_edit = QLineEdit()
        self.prompt_edit.setObjectName("compare_run_prompt")
        self.prompt_edit.returnPressed.connect(self.run_both)
        self.run_button = QPushButton()
        self.run_button.setObjectName("compare_run_button")
        self.run_button.clicked.connect(self.run_both)
        row = QHBoxLayout()
        row.addWidget(self.prompt_edit, 1)
        row.addWidget(self.run_button)
        self.status = QLabel()
        self.status.setObjectName("compare_run_status")
        self.status.setWordWrap(True)
        plain(self.status)
        self.stacks_box = QCheckBox()  # View -> Side by side (compare): app/window/side_stack.py keeps the two in step
        self.stacks_box.setObjectName("compare_stacks_box")
        self.view = ComparisonView()
        self.lens, self.curves, self.columns = self.view.lens, self.view.curves, self.view.columns
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.stacks_box)
        lay.addWidget(self.status)
        lay.addWidget(self.view)
        lay.addStretch(1)
        self.retranslate()

    # -- run ---------------------------------------------------------------------------------------------------
    @guarded
    def run_both(self) -> None:
        """Run both models on the prompt in the box (the app's prompt when the box is empty)."""
        text = self.prompt_edit.text() or self._prompt()
        self.prompt_edit.setText(text)
        self._serial += 1
        self._request = (tuple(self._models()), text)
        self.status.setText(tr("compare.run.running", n=2))
        self.jobs.start(self._serial, models_job(*self._request))

    def shows(self) -> bool:
        """Whether the results on the page are of the picked models and the prompt the box (or the app) holds."""
        return self.results is not None and self.results_for == (tuple(self._models()),
                                                                 self.prompt_edit.text() or self._prompt())

    def busy(self) -> bool:
        return self.jobs.busy()

    @guarded
    def _finished(self, serial: int, result) -> None:
        if serial != self._serial:
            return  # an older request: the newer one's result is coming
        self.results, self.seconds = result
        self.results_for = self._request
        self.show_results()
        self.ran.emit("")

    @guarded
    def _failed(self, serial: int, err: str) -> None:
        if serial == self._serial:
            self.status.setText(tr("compare.run.failed", error=err))
            self.ran.emit(err)

    def show_results(self) -> None:
        if self.results is None:
            self.status.setText(tr("compare.run.idle"))
        else:
            self.status.setText(tr("compare.run.done", s=f"{self.seconds:.1f}"))
        self.view.show_results(self.results)

    def retranslate(self) -> None:
        self.run_button.setText(tr("compare.run.button"))
        self.run_button.setToolTip(tr("tip.compare.run"))
        self.prompt_edit.setPlaceholderText(tr("compare.run.placeholder"))
        self.stacks_box.setText(tr("stacks.box"))
        self.stacks_box.setToolTip(tr("tip.stacks.box"))
        self.view.retranslate()
        self.show_results()
