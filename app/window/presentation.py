"""Presentation mode (F11; a part the main window owns: `MainWindow.presentation`): full screen with the 3D view
alone (no panels, toolbar, menu or status bar) and larger labels; Esc or F11 brings the window back as it was. It
reads the window's public names only (.docks, .toolbar, .scene, .first_frame_done, .dock_builder and
QMainWindow's own methods).
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut

PRESENTATION_LABEL_SCALE = 1.5  # labels, header and legend in presentation mode (F11)


class Presentation:
    """MainWindow's presentation mode: what to restore when it ends, and the Esc shortcut that ends it."""

    def __init__(self, window):
        self.window = window
        self.saved = None  # while in presentation mode: (dock state, maximised, menu bar shown, status bar shown)
        self.leave_key = None  # Esc, a window shortcut enabled only while presenting (made on first use)

    @property
    def active(self) -> bool:
        return self.saved is not None

    def toggle(self) -> None:
        if self.active:
            self.leave()
        else:
            self.enter()

    def enter(self) -> None:
        """Full screen with the 3D view alone (no panels, toolbar, menu or status bar) and larger labels."""
        w = self.window
        if self.active:
            return
        if w.first_frame_done:
            w.dock_builder.build_all()  # none may appear (and show) during the presentation
        self.saved = (w.saveState(), w.isMaximized(), w.menuBar().isVisible(), w.statusBar().isVisible())
        for dock in w.docks.values():
            dock.hide()
        w.toolbar.hide()
        w.menuBar().hide()
        w.statusBar().hide()
        w.scene.set_label_scale(PRESENTATION_LABEL_SCALE)
        if self.leave_key is None:  # Esc leaves (a window shortcut, only while presenting)
            self.leave_key = QShortcut(QKeySequence(Qt.Key.Key_Escape), w)
            self.leave_key.activated.connect(self.leave)
        self.leave_key.setEnabled(True)
        w.showFullScreen()
        w.scene.gl.setFocus()

    def leave(self) -> None:
        """Back to the window as it was: its panels, bars, size and label size."""
        w = self.window
        if not self.active:
            return
        state, maximized, menu, status = self.saved
        self.saved = None
        self.leave_key.setEnabled(False)
        if maximized:
            w.showMaximized()
        else:
            w.showNormal()
        w.toolbar.show()
        w.restoreState(state)
        w.menuBar().setVisible(menu)
        w.statusBar().setVisible(status)
        w.scene.set_label_scale(1.0)
