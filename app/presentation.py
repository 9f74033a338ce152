"""Presentation mode (F11, mixed into app/main_window.py's MainWindow): full screen with the 3D view alone (no
panels, toolbar, menu or status bar) and larger labels; Esc or F11 brings the window back as it was.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut

PRESENTATION_LABEL_SCALE = 1.5  # labels, header and legend in presentation mode (F11)


class PresentationMode:
    """MainWindow's presentation mode (a mixin: it uses the window's `docks`, `toolbar`, `scene`,
    `_first_frame_done` and `_build_late_docks`)."""

    _presentation = None  # while in presentation mode: what to restore when it ends
    _leave_presentation_key = None  # Esc, a window shortcut enabled only while presenting

    @property
    def presenting(self) -> bool:
        return self._presentation is not None

    def toggle_presentation(self) -> None:
        if self.presenting:
            self.leave_presentation()
        else:
            self.enter_presentation()

    def enter_presentation(self) -> None:
        """Full screen with the 3D view alone (no panels, toolbar, menu or status bar) and larger labels."""
        if self.presenting:
            return
        if self._first_frame_done:
            self._build_late_docks()  # none may appear (and show) during the presentation
        self._presentation = (self.saveState(), self.isMaximized(), self.menuBar().isVisible(),
                              self.statusBar().isVisible())
        for dock in self.docks.values():
            dock.hide()
        self.toolbar.hide()
        self.menuBar().hide()
        self.statusBar().hide()
        self.scene.set_label_scale(PRESENTATION_LABEL_SCALE)
        if self._leave_presentation_key is None:  # Esc leaves (a window shortcut, only while presenting)
            self._leave_presentation_key = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
            self._leave_presentation_key.activated.connect(self.leave_presentation)
        self._leave_presentation_key.setEnabled(True)
        self.showFullScreen()
        self.scene.gl.setFocus()

    def leave_presentation(self) -> None:
        """Back to the window as it was: its panels, bars, size and label size."""
        if not self.presenting:
            return
        state, maximized, menu, status = self._presentation
        self._presentation = None
        self._leave_presentation_key.setEnabled(False)
        if maximized:
            self.showMaximized()
        else:
            self.showNormal()
        self.toolbar.show()
        self.restoreState(state)
        self.menuBar().setVisible(menu)
        self.statusBar().setVisible(status)
        self.scene.set_label_scale(1.0)
