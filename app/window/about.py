"""Help -> About: name and version, what the app shows, the honesty note (what is toy, what is K3's), the
licence and the versions of the libraries it runs on; Copy system info puts app/window/support.py's report (versions,
engine tier, GL renderer, paths) on the clipboard. Every string comes from the i18n catalogues."""
from __future__ import annotations

import html
import platform
from importlib import metadata
from pathlib import Path

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QLabel, QMessageBox, QPlainTextEdit, QPushButton,
                               QVBoxLayout)

from app import __version__
from app.i18n import tr

DIST_NAME = "k3-explorer"
LICENCE_NAMES = {"Apache-2.0": "Apache License, Version 2.0"}
CHECKOUT_LICENCE = Path(__file__).resolve().parents[2] / "LICENSE"  # a checkout (or an unpacked sdist)


def licence_text() -> str:
    """The licence the installed package declares, or a translated 'not declared'."""
    try:
        meta = metadata.metadata(DIST_NAME)
    except metadata.PackageNotFoundError:
        meta = None
    declared = ""
    if meta is not None:
        declared = (meta.get("License-Expression") or meta.get("License") or "").strip()
    if not declared:
        return tr("app.about.licence_none")
    name = LICENCE_NAMES.get(declared)
    return f"{declared} ({name})" if name else declared


def licence_file() -> Path | None:
    """The full licence text the package carries: the installed distribution's licence file (PEP 639:
    `*.dist-info/licenses/LICENSE`), else the checkout's LICENSE; None when neither is there."""
    try:
        files = metadata.distribution(DIST_NAME).files or []
    except metadata.PackageNotFoundError:
        files = []
    for entry in files:
        if entry.name == "LICENSE" and "licenses" in entry.parts:
            path = Path(entry.locate())
            if path.is_file():
                return path
    return CHECKOUT_LICENCE if CHECKOUT_LICENCE.is_file() else None


class LicenceDialog(QDialog):
    """The full licence text, read-only, as plain text."""

    def __init__(self, path: Path, parent=None):
        super().__init__(parent)
        self.setObjectName("licence_dialog")
        self.setWindowTitle(tr("ship.licence.title"))
        self.text = QPlainTextEdit(self)
        self.text.setObjectName("licence_text")
        self.text.setReadOnly(True)
        self.text.setPlainText(path.read_text(encoding="utf-8"))
        buttons = QDialogButtonBox(QDialogButtonBox.Close, self)
        buttons.button(QDialogButtonBox.Close).setText(tr("app.common.close"))
        buttons.button(QDialogButtonBox.Close).setToolTip(tr("app.common.close"))
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
        self.resize(640, 560)


def library_versions() -> str:
    """'Python 3.11.2 · Qt 6.11.3 · PySide6 6.11.3 · NumPy … · PyTorch …' (PyTorch only when installed)."""
    parts = [f"Python {platform.python_version()}", f"Qt {qVersion()}", f"PySide6 {pyside_version}"]
    for dist, label in (("numpy", "NumPy"), ("pyqtgraph", "pyqtgraph"), ("torch", "PyTorch")):
        try:
            parts.append(f"{label} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return " · ".join(parts)


class AboutDialog(QDialog):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("about_dialog")
        self.setWindowTitle(tr("app.about.title"))
        self.heading = QLabel(f"<h2>K3 Explorer {__version__}</h2>")
        self.heading.setObjectName("about_heading")
        self.body = QLabel()
        self.body.setObjectName("about_body")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.RichText)
        self.body.setTextInteractionFlags(Qt.TextSelectableByMouse)
        state = getattr(parent, "state", None)  # the window's AppState: its trace says which weights ran
        self.body.setText(self.html(getattr(state, "trace", None)))
        buttons = QDialogButtonBox(QDialogButtonBox.Close, self)
        buttons.button(QDialogButtonBox.Close).setText(tr("app.common.close"))
        buttons.button(QDialogButtonBox.Close).setToolTip(tr("app.common.close"))
        self.about_qt = QPushButton(tr("app.about.about_qt"))
        self.about_qt.setObjectName("about_qt_button")
        self.about_qt.setToolTip(tr("app.about.about_qt.tip"))
        self.about_qt.clicked.connect(lambda: QMessageBox.aboutQt(self, tr("app.about.about_qt")))
        buttons.addButton(self.about_qt, QDialogButtonBox.HelpRole)
        self.licence_button = QPushButton(tr("ship.licence.button"))
        self.licence_button.setObjectName("about_licence_button")
        self.licence_button.setToolTip(tr("ship.licence.button.tip"))
        self.licence_button.setEnabled(licence_file() is not None)
        self.licence_button.clicked.connect(self.show_licence)
        buttons.addButton(self.licence_button, QDialogButtonBox.HelpRole)
        self.copy_info = QPushButton(tr("support.copy_info"))
        self.copy_info.setObjectName("about_copy_info_button")
        self.copy_info.setToolTip(tr("support.copy_info.tip"))
        self.copy_info.clicked.connect(self.copy_system_info)
        buttons.addButton(self.copy_info, QDialogButtonBox.HelpRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.body)
        layout.addWidget(buttons)
        self.setMinimumWidth(520)

    def copy_system_info(self) -> str:
        """The report on the clipboard; the button says it was copied."""
        from PySide6.QtWidgets import QApplication

        from app.window.support import system_info

        text = system_info(self.parent())
        QApplication.clipboard().setText(text)
        self.copy_info.setText(tr("support.copied"))
        return text

    def show_licence(self) -> None:
        path = licence_file()
        if path is not None:
            LicenceDialog(path, self).open()

    @staticmethod
    def html(trace=None) -> str:
        """The body; with the trace on screen it also says which weights produced its numbers."""
        from app.weights_choice import short_name, weights_of

        e = html.escape
        running = weights_of(trace)
        now = tr("weights.about", weights=short_name(running, tr)) if running else tr("weights.about.none")
        rows = [
            e(tr("app.about.text")),
            f"<b>{e(tr('app.about.honesty.title'))}</b> {e(tr('app.about.honesty'))} {e(now)}",
            f"<b>{e(tr('app.about.version'))}</b> {e(__version__)}",
            f"<b>{e(tr('app.about.licence'))}</b> {e(licence_text())}",
            f"<b>{e(tr('app.about.libraries'))}</b> {e(library_versions())}",
        ]
        return "".join(f"<p>{row}</p>" for row in rows)
