"""Small helpers shared by the app GUI tests (real events, pixels)."""
import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QStyle, QStyleOptionSlider


def wait_idle(qtbot, win, timeout=90000):
    """Wait until the engine worker has nothing in flight or pending, and its switch to the compiled kernels
    (which replaces the engine's model) is done."""
    qtbot.waitUntil(lambda: not win.engine.busy and win.engine._pending is None and win.engine.kernels_settled,
                    timeout=timeout)


def flush_layouts() -> None:
    """Run every layout request Qt has posted, and those they post in turn (a resize or a dock brought forward
    lays the window out in rounds): the widgets then have their final geometry. Deterministic, unlike a wait."""
    from PySide6.QtCore import QCoreApplication, QEvent

    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        QCoreApplication.processEvents()


def slider_handle_center(slider) -> QPoint:
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    rect = slider.style().subControlRect(QStyle.CC_Slider, opt, QStyle.SC_SliderHandle, slider)
    return rect.center()


def pump(ms: int) -> None:
    """Run the event loop for ms milliseconds, releasing the GIL (QTest.qWait keeps it and starves the
    engine thread)."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def drag_slider(slider, dx: int, steps: int = 12, qtbot=None, pause_ms: int = 15) -> None:
    """Press the handle with the left button, move it by dx pixels in steps, release (real mouse events)."""
    start = slider_handle_center(slider)
    QTest.mousePress(slider, Qt.LeftButton, Qt.NoModifier, start)
    for i in range(1, steps + 1):
        QTest.mouseMove(slider, QPoint(start.x() + dx * i // steps, start.y()))
        pump(pause_ms)
    QTest.mouseRelease(slider, Qt.LeftButton, Qt.NoModifier, QPoint(start.x() + dx, start.y()))


def image_array(img) -> np.ndarray:
    """QImage -> uint8 array [h, w, 4] (RGBA)."""
    from PySide6.QtGui import QImage

    img = img.convertToFormat(QImage.Format_RGBA8888)
    ptr = img.constBits()
    arr = np.frombuffer(ptr, dtype=np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    return arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4).copy()


def changed_fraction(a: np.ndarray, b: np.ndarray, tol: int = 12) -> float:
    diff = np.abs(a.astype(int) - b.astype(int))[..., :3].max(axis=-1)
    return float((diff > tol).mean())


def lit_cells(grid, n: int) -> set[int]:
    """Experts 0..n-1 whose cell centre is gold in a grab of an expert grid (gold: strong red, little blue)."""
    img = grid.grab().toImage()
    lit = set()
    for e in range(n):
        c = img.pixelColor(grid.cell_rect(e).center())
        if c.red() > 200 and c.green() > 120 and c.blue() < 150:
            lit.add(e)
    return lit
