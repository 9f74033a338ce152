"""The README's and the user guide's pictures, made from the running app so they never go stale (issue 43.2): the real main
window under Xvfb (a private one when DISPLAY is unset), a fresh settings file, the default prompt; the whole
window through the app's own export (File -> Export image… -> Whole window: app/export/image.grab_window), then each
dock brought forward and grabbed as it is drawn. Saved as 256-colour PNGs so the repository stays small.

    python docs/make_screenshots.py                      # every dock + the window into docs/screenshots/
    python docs/make_screenshots.py --docks ExplainDock --out /tmp/shots --lang ko

Prints one line per file written (name, size in pixels, bytes). Exit status 1 when the window never got its first
trace (the engine failed), 2 on a bad argument.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WINDOW_SIZE = (1600, 1000)
INSPECTED = ("inspectorDock", "L37/kda.state")  # the dock that needs a block picked, and the block
WAIT_S = 300  # the first trace, the late docks and the Explain dock's first result (slow on a loaded machine)


def file_name(dock_name: str) -> str:
    """'ExpertGridDock' / 'inspectorDock' -> 'expert-grid.png' / 'inspector.png', the names the user guide links."""
    stem = dock_name.removesuffix("Dock")
    return "".join(f"-{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(stem)) + ".png"


def save_small(image, path: Path) -> int:
    """A QImage as a 256-colour PNG (no dithering: flat UI colours stay flat); returns its size in bytes."""
    import numpy as np
    from PIL import Image
    from PySide6.QtGui import QImage

    image = image.convertToFormat(QImage.Format_RGB888)
    w, h = image.width(), image.height()
    data = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes())
    rgb = data.reshape(h, image.bytesPerLine())[:, : w * 3].reshape(h, w, 3)
    small = Image.fromarray(rgb, "RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    small.save(tmp, format="PNG", optimize=True)
    tmp.replace(path)
    return path.stat().st_size


def _wait(app, done, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not done():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.02)
    return True


def _settled(win) -> bool:
    if win.state.trace is None or not win.late_docks_built:
        return False
    engine = win.engine
    if engine.busy or engine._pending is not None or not engine.kernels_settled:
        return False
    dock = win.docks.get("ExplainDock")
    return dock is None or not dock.show3d.any_on() or (not dock.busy and win.scene.explanation is not None)


def shoot(out: Path, lang: str, docks: list[str] | None, window: bool) -> int:
    from app import api
    from app.export.image import grab_window
    from app.window.main_window import MainWindow

    app = api.ensure_app()
    with tempfile.TemporaryDirectory(prefix="k3-shots-") as tmp:
        win = MainWindow(settings_path=str(Path(tmp) / "settings.ini"), language=lang)
        win.resize(*WINDOW_SIZE)
        win.show()
        if not _wait(app, lambda: _settled(win), WAIT_S):
            print("make_screenshots: the window got no first trace (or its docks never settled)", file=sys.stderr)
            win.close()
            return 1
        names = docks or list(win.docks)  # objectNames, in the order the window made them
        unknown = sorted(set(names) - set(win.docks))
        if unknown:
            win.close()
            raise SystemExit(f"make_screenshots: no dock named {', '.join(unknown)} (there are: {', '.join(win.docks)})")
        _wait(app, lambda: False, 0.5)
        if window:
            _write(out / "window.png", grab_window(win))
        for name in names:
            dock = win.docks[name]
            if name == INSPECTED[0]:
                win.state.select_block(INSPECTED[1])  # the inspector shows a block only once one is picked
            dock.show()
            dock.raise_()
            _wait(app, lambda: _settled(win), 60)  # a dock that computes when it comes forward
            _wait(app, lambda: False, 0.4)  # its paint and any fade-in
            _write(out / file_name(name), dock.grab().toImage())
        win.close()
        app.processEvents()
    return 0


def _write(path: Path, image) -> None:
    size = save_small(image, path)
    print(f"{path} {image.width()}x{image.height()} {size} bytes")


def _x_display():
    """bench/xdisplay.py's display (the current one, or a private Xvfb); loaded by path, as bench/ is no package
    and its app.py would shadow the app package."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("k3_bench_xdisplay", ROOT / "bench" / "xdisplay.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.x_display("docs/make_screenshots.py")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python docs/make_screenshots.py",
                                     description="The user guide's screenshots from the running app.")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="folder (made if missing)")
    parser.add_argument("--lang", choices=("en", "ko"), default="en")
    parser.add_argument("--docks", default="", help="comma list of dock names (default: every dock)")
    parser.add_argument("--no-window", action="store_true", help="leave out the whole-window picture")
    args = parser.parse_args(argv)
    docks = [d for d in args.docks.split(",") if d] or None
    with _x_display():
        return shoot(args.out, args.lang, docks, not args.no_window)


if __name__ == "__main__":
    sys.exit(main())
