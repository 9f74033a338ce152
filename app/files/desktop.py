"""The app as the desktop sees it: its reverse-DNS application id APP_ID (the desktop file's name, Qt's desktop
file name and Wayland app-id, the AppStream component id, the icon name, the MIME package), its icon and the PNG
sizes rendered from the one SVG drawing (assets/desktop/APP_ID.svg: the app's layer stack).

    app.setDesktopFileName(APP_ID); app.setWindowIcon(app_icon())        # at start-up
    python -m app.files.desktop --render-icons                                # after editing the SVG

`k3-explorer --install-desktop` (app/files/desktop_install.py; `make install-desktop`) copies the .desktop file, the
icons, the AppStream metainfo and the *.k3view MIME type to the user's XDG folders (~/.local/share/…);
`--uninstall-desktop` removes them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from assets import asset_path

APP_ID = "io.github.k3explorer.K3Explorer"  # reverse-DNS (freedesktop / AppStream): used for every file below
DESKTOP_ID = APP_ID  # APP_ID.desktop; Qt passes it to Wayland as the app-id
MIME_TYPE = "application/x-k3view"  # *.k3view (assets/desktop/APP_ID.mime.xml)
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def icon_svg() -> Path:
    return asset_path("desktop", f"{APP_ID}.svg")


def icon_png(size: int) -> Path:
    return asset_path("desktop", "icons", f"{APP_ID}-{size}.png")


def render_icon(size: int):
    """The SVG drawn at size x size px (a QImage, transparent outside the drawing). Needs a QGuiApplication."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(icon_svg()))
    if not renderer.isValid():
        raise ValueError(f"{icon_svg()}: not a valid SVG")
    image = QImage(size, size, QImage.Format_ARGB32_Premultiplied)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image.convertToFormat(QImage.Format_ARGB32)


def app_icon():
    """The window icon: every rendered PNG size (crisp at small sizes), the SVG for any other size."""
    from PySide6.QtCore import QSize
    from PySide6.QtGui import QIcon

    icon = QIcon()
    for size in ICON_SIZES:
        if icon_png(size).is_file():
            icon.addFile(str(icon_png(size)), QSize(size, size))
    if icon_svg().is_file():
        icon.addFile(str(icon_svg()))
    return icon


def render_all() -> list[Path]:
    """Write every PNG size from the SVG (a QGuiApplication must exist)."""
    written = []
    for size in ICON_SIZES:
        path = icon_png(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not render_icon(size).save(str(path), "PNG"):
            raise OSError(f"{path}: could not be written")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.files.desktop", description=__doc__.splitlines()[0])
    parser.add_argument("--render-icons", action="store_true", help="write the PNG sizes from the SVG")
    args = parser.parse_args(argv)
    if not args.render_icons:
        parser.print_help()
        return 0
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0], "-platform", "offscreen"])  # noqa: F841
    for path in render_all():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
