"""File -> Export animation…: the dialog (file, size, frames per second, steps or orbit, caption language)
and the export with a progress dialog that can cancel. The frames are rendered on a view of their own
(app/export/animate.py offscreen_view), so the window's view does not move while it runs."""
from __future__ import annotations

import os

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLineEdit, QMessageBox, QProgressDialog, QPushButton,
                               QSpinBox, QWidget)

from app.export import animate
from app import i18n, slot_guard
from app.export.image import ExportError
from app.i18n import tr

SIZES = ((1280, 720), (1920, 1080), (2560, 1440), (3840, 2160))
LANGUAGE_NAMES = {"en": "English", "ko": "한국어"}


class AnimationSignals(QObject):
    """What an animated export from the window says as it goes (one per window: `signals_of(window)`): the
    progress dialog, the status bar and tests follow these."""

    started = Signal(str)  # the path to be written
    progress = Signal(int, int)  # frames done, frames in all
    finished = Signal(str, int)  # the path written, frames
    failed = Signal(str)  # one line: why nothing was written (the old file, if any, is kept)
    cancelled = Signal()


def signals_of(window) -> AnimationSignals:
    """The window's AnimationSignals (made on first use, a child of the window)."""
    found = window.findChild(AnimationSignals, "anim_signals")
    if found is None:
        found = AnimationSignals(window)
        found.setObjectName("anim_signals")
    return found


class AnimationDialog(QDialog):
    def __init__(self, default_path: str, parent=None):
        super().__init__(parent)
        self.setObjectName("animation_dialog")
        self.setWindowTitle(tr("anim.title"))
        self.path = QLineEdit(default_path)
        self.path.setObjectName("anim_path")
        browse = QPushButton(tr("anim.browse"))
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        file_row = QWidget()
        file_row.setLayout(row)
        self.size = QComboBox()
        self.size.setObjectName("anim_size")
        for w, h in SIZES:
            self.size.addItem(f"{w} × {h}", (w, h))
        self.size.setCurrentIndex(1)
        self.fps = QSpinBox()
        self.fps.setObjectName("anim_fps")
        self.fps.setRange(1, animate.MAX_FPS)
        self.fps.setValue(30)
        self.mode = QComboBox()
        self.mode.setObjectName("anim_mode")
        for mode in animate.MODES:
            self.mode.addItem(tr(f"anim.mode.{mode}"), mode)
        self.lang = QComboBox()
        self.lang.setObjectName("anim_lang")
        for code in i18n.LANGUAGES:
            self.lang.addItem(LANGUAGE_NAMES.get(code, code), code)
        self.lang.setCurrentIndex(list(i18n.LANGUAGES).index(i18n.language()))
        self.captions = QCheckBox(tr("anim.captions"))
        self.captions.setObjectName("anim_captions")
        self.captions.setChecked(True)
        form = QFormLayout(self)
        form.addRow(tr("anim.file"), file_row)
        form.addRow(tr("anim.size"), self.size)
        form.addRow(tr("anim.fps"), self.fps)
        form.addRow(tr("anim.mode"), self.mode)
        form.addRow(tr("anim.lang"), self.lang)
        form.addRow("", self.captions)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.confirm: QMessageBox | None = None  # the open "Replace it?" question, if any
        self._browsed = ""  # a path the file dialog already asked about

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, tr("anim.title"), self.path.text(), tr("anim.filter"))
        if path:
            self.path.setText(path)
            self._browsed = self.choice()[0]  # the file dialog asked before replacing it

    def accept(self) -> None:
        """OK: a typed path naming an existing file is replaced only after a Yes (as the image export asks);
        No keeps the dialog open to change the name. A path that is, or leads to, a FIFO, a device or a folder
        is refused in a message (atomic_io.check_target) and the dialog stays; so is a name the encoder cannot
        write (its extension) and a folder that is missing or cannot be written (app.export.image.check_writable):
        one line in the box and through the window's `failed` signal."""
        path, spec = self.choice()
        from app.export.image import check_writable

        try:  # a FIFO, a device or a link to one is never replaced: say so, keep the dialog to change the name
            animate.check_spec(spec, path)
            check_writable(path)
        except ExportError as exc:
            message = " ".join(str(exc).split())  # one line
            box = QMessageBox(QMessageBox.Warning, tr("anim.title"), message, QMessageBox.Ok, self)
            box.setObjectName("anim_refused")
            box.setTextFormat(Qt.PlainText)  # the path is the user's text
            self.confirm = box
            box.finished.connect(lambda _r: setattr(self, "confirm", None))
            box.open()
            if self.parent() is not None:
                signals_of(self.parent()).failed.emit(message)
            return
        if not os.path.exists(path) or path == self._browsed:
            super().accept()
            return
        box = QMessageBox(QMessageBox.Question, tr("anim.title"), tr("anim.overwrite", path=path),
                          QMessageBox.Yes | QMessageBox.No, self)
        box.setObjectName("anim_overwrite")
        box.setTextFormat(Qt.PlainText)  # the path may be made of a model's name
        box.setDefaultButton(QMessageBox.No)
        box.finished.connect(lambda _r: self._answered(box, path))
        self.confirm = box
        box.open()  # window-modal, not blocking

    def _answered(self, box: QMessageBox, path: str) -> None:
        self.confirm = None
        if box.clickedButton() is box.button(QMessageBox.Yes) and self.choice()[0] == path:
            super().accept()

    def choice(self) -> tuple[str, animate.AnimationSpec]:
        w, h = self.size.currentData()
        spec = animate.AnimationSpec(width=w, height=h, fps=self.fps.value(), mode=self.mode.currentData(),
                                     lang=self.lang.currentData(), captions=self.captions.isChecked())
        return os.path.abspath(os.path.expanduser(self.path.text().strip())), spec


def run_export(window, path: str, spec: animate.AnimationSpec) -> str | None:
    """Export with a progress dialog; returns the path written, None when cancelled or refused (the reason
    in a message box or the status bar). Says what happens through `signals_of(window)`: started, progress,
    then finished, failed (one line) or cancelled."""
    signals = signals_of(window)
    signals.started.emit(path)
    state = window.state
    steps = window_steps(window)
    progress = QProgressDialog(tr("anim.progress", n=0, total=0), tr("anim.cancel"), 0, 1, window)
    progress.setObjectName("anim_progress")
    progress.setWindowTitle(tr("anim.title"))
    progress.setWindowModality(Qt.WindowModal)
    progress.setMinimumDuration(0)
    window.anim_progress = progress

    def report(done: int, total: int) -> bool:
        progress.setMaximum(max(total, 1))
        progress.setValue(min(done, total))
        progress.setLabelText(tr("anim.progress", n=done, total=total))
        signals.progress.emit(done, total)
        QApplication.processEvents()
        return not progress.wasCanceled()

    view = None
    try:
        animate.check_spec(spec, path)
        from app.export.image import check_writable

        check_writable(path)
        if state.trace is None:
            raise ExportError(tr("anim.error.no_trace"))
        view = animate.offscreen_view(window.config, state.trace, state.layer, window.scene.camera_state(),
                                      spec.width, spec.height)
        written, frames = animate.export(view, steps, spec, path, state.layer, progress=report, step=state.step)
    except animate.AnimationCancelled:
        window.statusBar().showMessage(tr("anim.cancelled"), 8000)
        signals.cancelled.emit()
        return None
    except ExportError as exc:
        from app.widgets.safe_text import warn

        signals.failed.emit(" ".join(str(exc).split()))
        warn(window, tr("anim.title"), str(exc))  # plain text: it quotes a path and the encoder's error
        return None
    except Exception as exc:  # noqa: BLE001 - a bug: logged and one status line (slot_guard), never a traceback
        slot_guard.report(exc, "animation export")
        signals.failed.emit(slot_guard.one_line(exc))
        return None
    finally:
        progress.close()
        if view is not None:
            _close_view(view)
    window.statusBar().showMessage(tr("anim.saved", path=written, frames=frames, w=spec.width, h=spec.height,
                                      duration=animate.duration_text(frames, spec.fps)), 10000)
    signals.finished.emit(written, frames)
    return written


def window_steps(window) -> list:
    from app import player

    return player.build_steps(window.state.trace)


def _close_view(view) -> None:
    renderer = getattr(view.gl, "renderer", None)
    if renderer is not None:
        renderer.stop()
    view.close()
    view.deleteLater()
