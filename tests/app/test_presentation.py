"""Presentation mode: F11 shows the 3D view alone, full screen, with larger labels; Esc brings the
window back as it was (panels, bars, label size). Real key presses on a real window."""
from PySide6.QtCore import QAbstractAnimation, QSize, Qt
from PySide6.QtTest import QTest


def _placement(win, qtbot):
    """Where the labels on screen are once the view has settled: no camera move running, and a frame of the
    current state (with its labels) on screen."""
    qtbot.waitUntil(lambda: win.scene.camera.anim.state() != QAbstractAnimation.State.Running, timeout=5000)
    win.scene.gl.repaint()  # draws the current state and returns once that frame is shown
    return win.scene.gl.labels.placement


def test_f11_presents_the_view_alone_with_larger_labels_and_esc_restores(make_window, qtbot):
    win = make_window("present.ini")
    win.resize(1280, 720)
    qtbot.waitUntil(lambda: win.size() == QSize(1280, 720) and win.scene.gl.shown_version >= 0, timeout=5000)
    visible = {name for name, d in win.docks.items() if d.isVisible()}
    assert visible
    before = _placement(win, qtbot)
    header_h = before.header.height()
    label_h = min(lb.rect.height() for lb in before.labels)
    scene_w = win.scene.width()

    QTest.keyClick(win.scene.gl, Qt.Key_F11)
    qtbot.waitUntil(lambda: bool(win.windowState() & Qt.WindowFullScreen), timeout=5000)
    assert win.presenting
    qtbot.waitUntil(lambda: not any(d.isVisible() for d in win.docks.values()), timeout=5000)
    assert not win.toolbar.isVisible() and not win.menuBar().isVisible() and not win.statusBar().isVisible()
    qtbot.waitUntil(lambda: win.scene.width() > scene_w, timeout=5000)
    big = _placement(win, qtbot)
    assert big.header.height() > header_h * 1.35  # 1.5x fonts
    assert min(lb.rect.height() for lb in big.labels) > label_h * 1.35
    # F11 still works without the menu bar: pressing it again would leave; here Esc leaves
    QTest.keyClick(win.scene.gl, Qt.Key_Escape)
    qtbot.waitUntil(lambda: not (win.windowState() & Qt.WindowFullScreen), timeout=5000)
    assert not win.presenting
    qtbot.waitUntil(lambda: {n for n, d in win.docks.items() if d.isVisible()} == visible, timeout=5000)
    assert win.toolbar.isVisible() and win.menuBar().isVisible() and win.statusBar().isVisible()
    after = _placement(win, qtbot)
    assert abs(after.header.height() - header_h) < 1
    assert win.scene.label_scale == 1.0


def test_f11_toggles_and_esc_does_nothing_outside_presentation(make_window, qtbot):
    win = make_window("present2.ini", wait_trace=False)
    QTest.keyClick(win.scene.gl, Qt.Key_Escape)
    assert not win.presenting
    QTest.keyClick(win.scene.gl, Qt.Key_F11)
    qtbot.waitUntil(lambda: win.presenting, timeout=5000)
    QTest.keyClick(win.scene.gl, Qt.Key_F11)
    qtbot.waitUntil(lambda: not win.presenting and win.statusBar().isVisible(), timeout=5000)
    assert "F11" in [s for _m, _a, s in win.registry.shortcut_rows()]
