"""Two models' runs on one prompt as one image (issue 41.3): File → Export comparison… and
`k3-explorer export --compare MODEL`.

The sheet is the Same-prompt page's ComparisonView (both lens curves, each model's column: header, patching map,
answer, top-5 and named figures) under a title that quotes the prompt, drawn off screen at the asked size (the
width as asked; the height as asked or, when the figures need more, as tall as they need) and written through
app.files.export_files.save_png (encoded in memory, then app.files.atomic_io's guarded atomic write: a failure is one
translated line naming the path and the cause, and an existing file stays as it was)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

from app.docks.compare.view import MAP_H, ComparisonView
from app.i18n import tr
from app.widgets.safe_text import plain

MARGIN = 24


class ComparisonSheet(QWidget):
    """The title and the ComparisonView of `results` ((SideRun, SideRun)) for `prompt`."""

    def __init__(self, results, prompt: str, height: int = 1080, parent=None):
        super().__init__(parent)
        self.setObjectName("compare_sheet")
        self.setAutoFillBackground(True)
        self.title = QLabel(tr("compare.sheet.title", a=results[0].display, b=results[1].display, prompt=prompt))
        self.title.setObjectName("compare_sheet_title")
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-size: 16pt; font-weight: bold;")
        plain(self.title)  # it quotes the prompt
        self.view = ComparisonView(lens_h=max(MAP_H, height // 5), map_h=max(MAP_H, height // 3), fill=True)
        self.view.show_results(results)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(MARGIN, MARGIN, MARGIN, MARGIN)
        lay.addWidget(self.title)
        lay.addWidget(self.view, 1)  # the maps take the page's height left over: no empty band at the bottom


def comparison_image(results, prompt: str, width: int, height: int) -> QImage:
    """The sheet drawn off screen: `width` wide, `height` tall or taller where its figures need it."""
    sheet = ComparisonSheet(results, prompt, height)
    sheet.setAttribute(Qt.WA_DontShowOnScreen)  # laid out and painted like a shown window, never on screen
    try:
        sheet.resize(width, height)
        sheet.show()
        QApplication.processEvents()
        need = sheet.layout().totalHeightForWidth(width) if sheet.layout().hasHeightForWidth() else \
            sheet.sizeHint().height()
        if need > height:
            sheet.resize(width, need)
            QApplication.processEvents()
        return sheet.grab().toImage()
    finally:
        sheet.close()
        sheet.deleteLater()


def write_comparison(results, prompt: str, path: str, width: int = 1920, height: int = 1080) -> QImage:
    """Draw the sheet and write it to path as a PNG; app.export.image.ExportError (one translated line) when it cannot."""
    from app.files.export_files import save_png

    image = comparison_image(results, prompt, width, height)
    save_png(image, path)
    return image
