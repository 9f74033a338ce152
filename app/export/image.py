"""Screenshot export (X1): the 3D view alone at any size (labels included, optional transparent background)
or the whole window, to a PNG file (with overwrite confirmation) or to the clipboard.

The 3D view is rendered by `SceneView.render_image(w, h, transparent)`, which draws into an offscreen
framebuffer and restores the view, so an export never changes what the user sees.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from PySide6.QtCore import QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtWidgets import (QApplication, QButtonGroup, QCheckBox, QComboBox, QDialog, QDialogButtonBox,
                               QDoubleSpinBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QMessageBox, QProgressDialog, QPushButton, QRadioButton, QSpinBox, QVBoxLayout,
                               QWidget)

from app.files.export_files import (MAX_SIDE, ExportError, check_size, check_writable,  # noqa: F401 (re-exported)
                              parse_size, png_bytes, png_bytes_threaded, save_png, with_png_suffix)
from app.i18n import tr
from app.widgets.paint import css

log = logging.getLogger(__name__)
PRESETS = {"1080p": (1920, 1080), "4k": (3840, 2160)}
THEMES = ("dark", "light")  # slide themes of a 3D-view export (scene/labels.py THEMES)
PROGRESS_AFTER_MS = 500  # an export that takes longer shows a progress dialog


def render_view(scene, w: int, h: int, transparent: bool = False, labels: bool = True,
                theme: str = "dark") -> QImage:
    """The 3D view at w x h; labels=False leaves out the label overlay (restored afterwards); theme "light"
    for light slides. Any GL failure (no context, or PyOpenGL's errors when it cannot find Qt's context)
    becomes a one-line ExportError."""
    check_size(w, h)
    before = getattr(scene, "labels_enabled", True)
    scene.labels_enabled = labels
    try:
        image = scene.render_image(w, h, transparent=transparent, theme=theme)
    except Exception as exc:  # noqa: BLE001 - sorted out by _render_error
        raise _render_error(exc) from exc
    finally:
        scene.labels_enabled = before
    if image is None or image.isNull():
        raise ExportError(tr("app.export.error.render"))
    return image


def _render_error(exc: BaseException) -> BaseException:
    """A failed render as the one-line ExportError (no OpenGL context, or one PyOpenGL cannot use); any other
    exception is returned as it is."""
    from OpenGL.error import Error as GLError  # the scene has imported OpenGL already

    if isinstance(exc, ExportError) or not isinstance(exc, (RuntimeError, GLError)):
        return exc
    reason = " ".join(str(exc).split()) or type(exc).__name__
    log.warning("export: the 3D view could not be rendered: %s", reason)
    return ExportError(f"{tr('app.export.error.render')} {reason}")


def grab_window(window) -> QImage:
    """The whole window as shown. The grab holds the 3D view's last finished frame, which may lag the state by
    a frame still being drawn in the render thread, so the view's picture (3D + labels, at the window's pixel
    ratio) is rendered again from the current state and painted into the grab where it sits."""
    image = window.grab().toImage()
    scene = getattr(window, "scene", None)
    container = getattr(scene, "container", None)
    if container is not None and container.isVisible() and not getattr(scene.gl, "gl_error", ""):
        shot = scene.gl.grabFramebuffer()
        p = QPainter(image)
        try:
            p.drawImage(container.mapTo(window, QPoint(0, 0)), shot)
        finally:
            p.end()
    return image


def copy_to_clipboard(image: QImage) -> None:
    QGuiApplication.clipboard().setImage(image)
    log.info("export: copied a %d x %d image to the clipboard", image.width(), image.height())


@dataclass
class ExportChoice:
    target: str  # "view" | "window"
    width: int
    height: int
    transparent: bool
    destination: str  # "file" | "clipboard"
    path: str
    labels: bool = True
    theme: str = "dark"  # "dark" | "light" (THEMES)


class ExportDialog(QDialog):
    """File -> Export image…: choose what, how big, and where. `choice()` after accept()."""

    SIZE_MODES = ("window", "1080p", "4k", "custom", "scale")

    def __init__(self, scene_size: tuple[int, int], default_path: str, parent=None, target: str = "view"):
        super().__init__(parent)
        self.setObjectName("export_dialog")
        self.scene_size = scene_size
        self.setWindowTitle(tr("app.export.title"))

        self.view_radio = QRadioButton(tr("app.export.target_view"))
        self.view_radio.setObjectName("export_target_view")
        self.window_radio = QRadioButton(tr("app.export.target_window"))
        self.window_radio.setObjectName("export_target_window")
        targets = QButtonGroup(self)
        targets.addButton(self.view_radio)
        targets.addButton(self.window_radio)
        (self.window_radio if target == "window" else self.view_radio).setChecked(True)

        self.size_mode = QComboBox()
        self.size_mode.setObjectName("export_size_mode")
        w0, h0 = scene_size
        labels = {"window": tr("app.export.size_window", w=w0, h=h0), "1080p": "1080p · 1920 × 1080",
                  "4k": "4K · 3840 × 2160", "custom": tr("app.export.size_custom"),
                  "scale": tr("app.export.size_scale")}
        for mode in self.SIZE_MODES:
            self.size_mode.addItem(labels[mode], mode)
        self.width_spin = _spin("export_width", w0)
        self.height_spin = _spin("export_height", h0)
        self.scale_spin = QDoubleSpinBox()
        self.scale_spin.setObjectName("export_scale")
        self.scale_spin.setRange(0.1, 16.0)
        self.scale_spin.setSingleStep(0.5)
        self.scale_spin.setValue(2.0)
        self.scale_spin.setSuffix(" ×")
        custom = QWidget()
        self.custom_row = custom
        cl = QHBoxLayout(custom)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.width_spin)
        self.times_label = QLabel("×")
        cl.addWidget(self.times_label)
        cl.addWidget(self.height_spin)
        cl.addWidget(self.scale_spin)
        cl.addStretch(1)
        self.result_size = QLabel()
        self.result_size.setObjectName("export_result_size")
        self.transparent = QCheckBox(tr("app.export.transparent"))
        self.transparent.setObjectName("export_transparent")
        self.labels = QCheckBox(tr("app.export.labels"))
        self.labels.setObjectName("export_labels")
        self.labels.setChecked(True)
        self.labels_note = QLabel(tr("app.export.labels_note"))
        self.labels_note.setStyleSheet("color: gray;")
        self.theme = QComboBox()  # slide theme: the title, legend and labels for dark or light slides
        self.theme.setObjectName("export_theme")
        for name in THEMES:
            self.theme.addItem(tr(f"app.export.theme_{name}"), name)

        self.file_radio = QRadioButton(tr("app.export.to_file"))
        self.file_radio.setObjectName("export_to_file")
        self.clip_radio = QRadioButton(tr("app.export.to_clipboard"))
        self.clip_radio.setObjectName("export_to_clipboard")
        dests = QButtonGroup(self)
        dests.addButton(self.file_radio)
        dests.addButton(self.clip_radio)
        self.file_radio.setChecked(True)
        self.path_edit = QLineEdit(default_path)
        self.path_edit.setObjectName("export_path")
        browse = QPushButton(tr("app.export.browse"))
        browse.setObjectName("export_browse")
        browse.clicked.connect(self._browse)
        path_row = QWidget()
        pl = QHBoxLayout(path_row)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.path_edit, 1)
        pl.addWidget(browse)

        self.error = QLabel()
        self.error.setObjectName("export_error")
        self.error.setStyleSheet(f"color: {css('form_error')};")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.PlainText)  # quotes a path and an OS error
        self.error.hide()

        form = QFormLayout()
        target_row = QWidget()
        tl = QHBoxLayout(target_row)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.view_radio)
        tl.addWidget(self.window_radio)
        tl.addStretch(1)
        form.addRow(tr("app.export.what"), target_row)
        form.addRow(tr("app.export.size"), self.size_mode)
        form.addRow("", custom)
        form.addRow("", self.result_size)
        form.addRow("", self.transparent)
        form.addRow("", self.labels)
        form.addRow("", self.labels_note)
        form.addRow(tr("app.export.theme"), self.theme)
        dest_row = QWidget()
        dl = QHBoxLayout(dest_row)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.addWidget(self.file_radio)
        dl.addWidget(self.clip_radio)
        dl.addStretch(1)
        form.addRow(tr("app.export.where"), dest_row)
        form.addRow(tr("app.export.file"), path_row)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.button(QDialogButtonBox.Ok).setText(tr("app.export.ok"))
        buttons.button(QDialogButtonBox.Ok).setObjectName("export_ok")
        buttons.button(QDialogButtonBox.Cancel).setText(tr("app.common.cancel"))
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

        for sig in (self.size_mode.currentIndexChanged, self.width_spin.valueChanged,
                    self.height_spin.valueChanged, self.scale_spin.valueChanged,
                    self.view_radio.toggled, self.file_radio.toggled):
            sig.connect(self._update)
        self._update()
        self.resize(560, self.sizeHint().height())

    def set_size_mode(self, mode: str) -> None:
        self.size_mode.setCurrentIndex(self.SIZE_MODES.index(mode))

    def pixel_size(self) -> tuple[int, int]:
        mode = self.size_mode.currentData()
        w0, h0 = self.scene_size
        if mode == "window":
            return w0, h0
        if mode in PRESETS:
            return PRESETS[mode]
        if mode == "custom":
            return self.width_spin.value(), self.height_spin.value()
        s = self.scale_spin.value()
        return max(1, int(round(w0 * s))), max(1, int(round(h0 * s)))

    def _update(self, *_args) -> None:
        view = self.view_radio.isChecked()
        mode = self.size_mode.currentData()
        for w in (self.size_mode, self.transparent, self.labels, self.labels_note, self.theme):
            w.setEnabled(view)
        self.width_spin.setVisible(view and mode == "custom")
        self.height_spin.setVisible(view and mode == "custom")
        self.times_label.setVisible(view and mode == "custom")
        self.scale_spin.setVisible(view and mode == "scale")
        self.custom_row.setVisible(view and mode in ("custom", "scale"))
        w, h = self.pixel_size()
        self.result_size.setText(tr("app.export.result", w=w, h=h) if view else "")
        self.path_edit.setEnabled(self.file_radio.isChecked())
        self.error.hide()

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, tr("app.export.title"), self.path_edit.text(),
                                              "PNG (*.png)", options=QFileDialog.DontConfirmOverwrite)
        if path:
            self.path_edit.setText(with_png_suffix(path))

    def choice(self) -> ExportChoice:
        w, h = self.pixel_size()
        return ExportChoice("view" if self.view_radio.isChecked() else "window", w, h,
                            self.transparent.isChecked() and self.view_radio.isChecked(),
                            "file" if self.file_radio.isChecked() else "clipboard",
                            with_png_suffix(self.path_edit.text().strip()) if self.path_edit.text().strip() else "",
                            self.labels.isChecked() or not self.view_radio.isChecked(),
                            self.theme.currentData() if self.view_radio.isChecked() else "dark")

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()

    def _accept(self) -> None:
        c = self.choice()
        try:
            if c.target == "view":
                check_size(c.width, c.height)
            if c.destination == "file":
                check_writable(c.path)
        except ExportError as exc:
            self.show_error(str(exc))
            return
        if c.destination == "file" and os.path.exists(c.path):
            from app.widgets.safe_text import plain_message_box

            box = plain_message_box(QMessageBox.Question, tr("app.export.title"),  # plain: it quotes the path
                                    tr("app.export.overwrite", path=c.path), QMessageBox.Yes | QMessageBox.No, self)
            box.setDefaultButton(QMessageBox.No)
            if box.exec() != QMessageBox.Yes:
                return
        self.accept()


def _spin(name: str, value: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setObjectName(name)
    spin.setRange(1, MAX_SIDE)
    spin.setValue(min(max(value, 1), MAX_SIDE))
    spin.setSuffix(" px")
    spin.setAlignment(Qt.AlignRight)
    return spin


def perform(choice: ExportChoice, scene, window) -> QImage:
    """Render and deliver an export; raises ExportError with a translated message."""
    if choice.target == "view":
        image = render_view(scene, choice.width, choice.height, choice.transparent, choice.labels, choice.theme)
    else:
        image = grab_window(window)
    if choice.destination == "clipboard":
        copy_to_clipboard(image)
    else:
        save_png(image, choice.path)
    return image


class ExportRun(QObject):
    """An export of the 3D view rendered, encoded and written in the render thread, so the window keeps
    answering: a busy cursor at once, a progress dialog when it takes longer than PROGRESS_AFTER_MS (render,
    labels, file). finished(image, error) follows on the UI thread: error is a translated message, "" when the
    PNG was written (atomically, app/files/atomic_io.py) or the image copied. A whole-window export is immediate."""

    finished = Signal(object, str)
    PHASES = ("render", "labels", "write")

    def __init__(self, choice: ExportChoice, scene, window):
        super().__init__(window)
        self.choice, self.scene, self.window = choice, scene, window
        self.job = None
        self.image: QImage | None = None
        self.error = ""
        self.done = False
        self.progress: QProgressDialog | None = None
        self._poll = QTimer(self)
        self._poll.setInterval(50)
        self._poll.timeout.connect(self._update_progress)

    def start(self) -> "ExportRun":
        c = self.choice
        if c.target != "view":
            try:
                self._finish(perform(c, self.scene, self.window), "")
            except ExportError as exc:
                self._finish(None, str(exc))
            return self
        try:
            check_size(c.width, c.height)
            if c.destination == "file":
                check_writable(c.path)
        except ExportError as exc:
            self._finish(None, str(exc))
            return self
        QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        self.progress = QProgressDialog(tr("app.export.progress", w=c.width, h=c.height), "", 0,
                                        len(self.PHASES), self.window)
        self.progress.setObjectName("export_progress")
        self.progress.setWindowTitle(tr("app.export.title"))
        self.progress.setCancelButton(None)  # a render cannot be stopped halfway; it ends in seconds
        self.progress.setWindowModality(Qt.WindowModality.WindowModal)
        self.progress.setMinimumDuration(PROGRESS_AFTER_MS)
        self.progress.setValue(0)
        before = self.scene.labels_enabled
        self.scene.labels_enabled = c.labels
        try:
            self.job = self.scene.render_image_async(c.width, c.height, c.transparent, c.theme,
                                                     after=self._deliver if c.destination == "file" else None,
                                                     done=self._job_done)
        finally:
            self.scene.labels_enabled = before
        self._poll.start()
        return self

    def _deliver(self, image: QImage) -> QImage:  # render thread: encode and write the file
        save_png(image, self.choice.path, encode=png_bytes_threaded)
        return image

    def _update_progress(self) -> None:
        if self.progress is not None and self.job is not None:
            self.progress.setValue(min(self.job.phase, len(self.PHASES) - 1))

    def _job_done(self, job) -> None:  # UI thread
        if job.error is not None:
            err = _render_error(job.error)
            self._finish(None, str(err) if isinstance(err, ExportError) else
                         f"{tr('app.export.error.render')} {type(err).__name__}: {err}")
            return
        if self.choice.destination == "clipboard":
            copy_to_clipboard(job.image)
        self._finish(job.image, "")

    def _finish(self, image: QImage | None, error: str) -> None:
        self._poll.stop()
        if self.progress is not None:
            self.progress.reset()
            self.progress.close()
            self.progress.deleteLater()
            self.progress = None
            QApplication.restoreOverrideCursor()
        self.image, self.error, self.done = image, error, True
        self.finished.emit(image, error)
