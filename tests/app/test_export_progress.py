"""Big exports do not freeze the window: an 8K export of the 3D view renders, encodes and writes
in the render thread while the UI thread keeps handling events (a heartbeat timer keeps firing), with a busy
cursor at once and a progress dialog once it takes longer than half a second; the PNG is written whole."""
import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QProgressDialog, QPushButton

from app.export.image import PROGRESS_AFTER_MS, ExportDialog

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


@pytest.mark.alone  # times the UI thread's heartbeat during the export
def test_8k_export_keeps_the_window_answering_with_busy_cursor_and_progress(main_window, qtbot, tmp_path):
    win = main_window
    QTest.keyClick(win.scene.gl, Qt.Key_S, Qt.ControlModifier)  # File -> Export image…
    qtbot.waitUntil(lambda: any(d.isVisible() for d in win.findChildren(ExportDialog)), timeout=5000)
    dialog = [d for d in win.findChildren(ExportDialog) if d.isVisible()][0]
    dialog.set_size_mode("custom")
    dialog.width_spin.setValue(8192)
    dialog.height_spin.setValue(4608)
    out = tmp_path / "k3-8k.png"
    dialog.path_edit.setText(str(out))

    beats: list[float] = []
    seen = {"progress": False, "busy": False}

    def beat():
        beats.append(time.perf_counter())
        if any(p.isVisible() for p in win.findChildren(QProgressDialog, "export_progress")):
            seen["progress"] = True
        if QApplication.overrideCursor() is not None and \
                QApplication.overrideCursor().shape() == Qt.CursorShape.BusyCursor:
            seen["busy"] = True
    heartbeat = QTimer()
    heartbeat.setInterval(20)
    heartbeat.timeout.connect(beat)
    heartbeat.start()
    t0 = time.perf_counter()
    qtbot.mouseClick(dialog.findChild(QPushButton, "export_ok"), Qt.LeftButton)
    clicked = time.perf_counter()
    assert clicked - t0 < 0.5  # the click returns at once: the export runs elsewhere
    assert QApplication.overrideCursor() is not None  # busy cursor from the start
    qtbot.waitUntil(lambda: "k3-8k.png" in win.statusBar().currentMessage(), timeout=120000)
    done = time.perf_counter()
    heartbeat.stop()
    during = [t for t in beats if clicked <= t <= done]
    gaps = [b - a for a, b in zip([clicked] + during, during + [done])]
    assert done - clicked > PROGRESS_AFTER_MS / 1000  # big enough to need the progress display
    assert len(during) > 20 and max(gaps) < 1.0, f"longest gap {max(gaps):.2f} s over {done - clicked:.1f} s"
    assert seen["busy"] and seen["progress"]
    assert QApplication.overrideCursor() is None  # restored
    assert not any(p.isVisible() for p in win.findChildren(QProgressDialog, "export_progress"))
    img = QImage(str(out))
    assert (img.width(), img.height()) == (8192, 4608)
    assert win.export_run is not None and win.export_run.error == ""
    dialog.close()
    dialog.deleteLater()
