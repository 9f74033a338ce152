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
