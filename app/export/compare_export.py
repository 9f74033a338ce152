"""File → Export comparison… (issue 41.3): the Compare dock's two picked models on one prompt as one PNG.

The image is the dock's Same-prompt page (app/docks/compare/sheet.py): when the page already shows the picked
models on the prompt of its box (else the window's prompt), those results are written at once; otherwise the
page runs them first (on its background lane; the window keeps answering, the page shows its progress) and the
image is written when they arrive. The path is checked before anything runs: a folder that cannot be written
is one message, and nothing is lost (an existing file stays as it was)."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QFileDialog

from app.i18n import tr
from app.widgets import safe_text

SIZE = (1920, 1080)  # the image's width, and its height unless the figures need more


def export_comparison(window, path: str | None = None) -> bool:
    """Ask for a path (unless given), then write the comparison there (now, or once the page has run). False
    when nothing will be written (cancelled, or the path refused: its message was shown)."""
    from app.files.export_files import ExportError, check_writable, with_png_suffix

    dock = window.docks.get("CompareDock")
    if dock is None:
        return False
    if path is None:
        a, b = dock.pick_a.currentData(), dock.pick_b.currentData()
        default = os.path.join(dock.export_dir, f"k3-compare-{a}-{b}.png")
        path, _f = QFileDialog.getSaveFileName(window, tr("app.action.export_comparison"), default,
                                               tr("compare.png_filter"))
        if not path:
            return False
    path = with_png_suffix(path)
    try:
        check_writable(path)
    except ExportError as exc:
        safe_text.warn(window, tr("app.export.title"), str(exc))  # plain: it quotes a path
        return False
    page = dock.runs
    dock.show()
    dock.raise_()
    dock.tabs.setCurrentIndex(1)  # the user sees the page the image is made of (and its progress)
    if page.shows():
        _write(window, dock, path)
        return True

    def arrived(error: str) -> None:
        page.ran.disconnect(arrived)
        if error:
            safe_text.warn(window, tr("app.export.title"), tr("compare.run.failed", error=error))
        else:
            _write(window, dock, path)

    page.ran.connect(arrived)
    page.run_both()
    window.statusBar().showMessage(tr("compare.sheet.running", path=path), 8000)
    return True


def _write(window, dock, path: str) -> None:
    from app.docks.compare.sheet import write_comparison
    from app.files.export_files import ExportError

    try:
        image = write_comparison(dock.runs.results, dock.runs.results_for[1], path, *SIZE)
    except ExportError as exc:
        safe_text.warn(window, tr("app.export.title"), str(exc))
        return
    dock.export_dir = os.path.dirname(os.path.abspath(path))
    window.statusBar().showMessage(tr("app.export.saved", path=path, w=image.width(), h=image.height()), 8000)
