"""GL smoke test in a subprocess: many redraws, layer switches, recolours and exports must not crash the
process (a native crash here must not take the whole test session down)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from PySide6.QtCore import QCoreApplication, Qt
    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from compute.config import load_default
    from compute.engine import ToyK3
    from scene.view import SceneView
    trace = ToyK3().run("ab", max_new_tokens=1)
    v = SceneView()
    v.resize(360, 240)
    v.show()
    v.set_config(load_default())
    v.set_trace(trace)
    for i in range(120):
        if i % 10 == 0:
            v.set_layer((i * 7) % 93, animate=False)
        if i % 15 == 0:
            v.set_pass(i % len(trace.passes))
        if i % 40 == 0:
            img = v.render_image(200, 120, transparent=bool(i % 80))
            assert img.width() == 200
        v.gl.repaint()
        app.processEvents()
    print("frames", v.gl.paint_count)
""")


def test_many_frames_and_exports_do_not_crash():
    env = dict(os.environ, QT_QPA_PLATFORM="xcb")
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    frames = int(proc.stdout.split("frames")[-1])
    assert frames >= 120


HIDPI = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from PySide6.QtCore import QCoreApplication, Qt, QPoint
    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    from PySide6.QtWidgets import QApplication
    from PySide6.QtGui import QVector4D
    from PySide6.QtTest import QTest
    app = QApplication([])
    from compute.config import load_default
    from scene.view import SceneView
    v = SceneView()
    v.resize(500, 340)
    v.show()
    QTest.qWaitForWindowExposed(v)
    v.set_config(load_default())
    v.set_layer(36, animate=False)
    lo, hi = v.layout.panel_bounds
    v.set_camera_state(dict(center=list((lo + hi) / 2), distance=40.0, azimuth=-95.0, elevation=10.0, fov=38))
    got = []
    v.block_clicked.connect(got.append)
    g = v.gl
    for bid in ("L37/kda.state", "L37/moe.experts", "L37/norm.mixer"):
        b = v.layout.by_id[bid]
        pt = b.center.copy(); pt[1] = b.lo[1]
        region = (0, 0, g.width(), g.height())
        c = (g.projectionMatrix(region, region) * g.viewMatrix()).map(QVector4D(*map(float, pt), 1.0))
        x, y = (c.x() / c.w() + 1) / 2 * g.width(), (1 - c.y() / c.w()) / 2 * g.height()
        QTest.mouseClick(g, Qt.LeftButton, Qt.NoModifier, QPoint(int(x), int(y)))
    import time
    end = time.monotonic() + 5  # a click on a block partly under the header brings it into view (animated)
    while v.camera.path is not None and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)
    app.processEvents()
    fb = g.grabFramebuffer()
    g.repaint()  # the frame on screen is of the current state
    import numpy as np
    from PySide6.QtGui import QImage
    def rgb(img):
        img = img.convertToFormat(QImage.Format.Format_RGB32)
        a = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)
        return a[:, :img.width(), :3].astype(int).copy()
    shown, exact = rgb(g.grab().toImage()), rgb(fb)
    # the render thread's frame (3D + labels) matches a fresh render at the same pixel ratio (up to MSAA)
    print("frame_diff", float(np.abs(shown - exact).mean()) if shown.shape == exact.shape else 999.0)
    print("dpr", g.devicePixelRatioF(), "fb", fb.width(), "clicked", ",".join(got))
""")


def test_picking_is_hidpi_correct():
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", QT_SCALE_FACTOR="2")
    proc = subprocess.run([sys.executable, "-c", HIDPI.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "dpr 2.0" in out and "fb 1000" in out  # really rendered at twice the logical size
    assert float(out.split("frame_diff")[1].split()[0]) < 3.0  # labels at the same place and size on screen
    assert out.strip().endswith("clicked L37/kda.state,L37/moe.experts,L37/norm.mixer")


HIDDEN = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from PySide6.QtCore import QCoreApplication, Qt
    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from scene.view import SceneView
    v = SceneView()  # never shown by the caller
    img = v.render_image(320, 200)
    # rendered off-screen: the view was never shown, not even off-screen, and nothing appeared on the display
    bg = img.pixelColor(0, 0)
    samples = [img.pixelColor(x, y) for x in range(0, 320, 8) for y in range(0, 200, 8)]
    drawn = sum(c != bg for c in samples) / len(samples)  # share of the frame that is not background
    print("size", img.width(), img.height(), "shown", v.isVisible() or v.testAttribute(Qt.WA_DontShowOnScreen),
          "drawn", f"{{drawn:.3f}}")
""")


def test_render_image_of_a_never_shown_view():
    env = dict(os.environ, QT_QPA_PLATFORM="xcb")
    proc = subprocess.run([sys.executable, "-c", HIDDEN.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "size 320 200 shown False drawn " in proc.stdout
    drawn = float(proc.stdout.split("drawn ")[1].split()[0])
    assert 0.02 < drawn < 0.98, drawn  # blocks were drawn over the background, not a blank or garbage frame
