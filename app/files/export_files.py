"""The files of an export (app/export/image.py, app/export/animate.py): its size and path checked, and a PNG encoded in
memory and written atomically (app/files/atomic_io.py). Every failure is one translated ExportError."""
from __future__ import annotations

import errno
import io
import logging
import os
import re

import numpy as np

from PySide6.QtCore import QBuffer, QIODevice
from PySide6.QtGui import QImage

from app.files import atomic_io
from app.i18n import tr

log = logging.getLogger("app.export.image")
MAX_SIDE = 8192
PNG_QUALITY = 80  # Qt maps PNG "quality" to zlib level; 80 keeps 4K exports fast and still small


class ExportError(ValueError):
    """A bad size or path; the message is already translated."""


def parse_size(text: str) -> tuple[int, int]:
    """'3840x2160' (also '3840×2160', '3840 X 2160') -> (3840, 2160); sides 1..MAX_SIDE."""
    match = re.fullmatch(r"\s*(\d{1,6})\s*[xX×*]\s*(\d{1,6})\s*", text or "")
    if not match:
        raise ExportError(tr("app.export.error.size_format", text=text))
    w, h = int(match.group(1)), int(match.group(2))
    check_size(w, h)
    return w, h


def check_size(w: int, h: int) -> None:
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        raise ExportError(tr("app.export.error.size_range", w=w, h=h, max=MAX_SIDE))


def check_writable(path: str) -> None:
    """Raise ExportError (translated) unless a file (PNG, video) can be written at path: also when path, or
    where its links lead, exists and is not a regular file (a FIFO, a device such as /dev/full, a socket:
    atomic_io.check_target), so an export never replaces or blocks on one."""
    if not path or not path.strip():
        raise ExportError(tr("app.export.error.no_path"))
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(path):
        raise ExportError(tr("app.export.error.is_dir", path=path))
    try:
        path = atomic_io.check_target(path)  # the file a write replaces (links resolved)
    except atomic_io.WriteError as exc:
        raise ExportError(atomic_io.message(exc)) from exc
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise ExportError(tr("app.export.error.no_folder", folder=folder))
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ExportError(_unwritable(path))
    if not os.access(folder, os.W_OK):
        raise ExportError(_unwritable(folder))


def _unwritable(path: str) -> str:
    """Why os.access said no: a read-only file system, else permissions."""
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        read_only = False
    code = errno.EROFS if read_only else errno.EACCES
    return atomic_io.message(atomic_io.WriteError(path, OSError(code, os.strerror(code))))


def with_png_suffix(path: str) -> str:
    return path if path.lower().endswith(".png") else path + ".png"


def save_png(image: QImage, path: str, encode=None) -> None:
    """Encode in memory (png_bytes, or encode), then write atomically (app/files/atomic_io.py): a failure (disk
    full, read-only, a folder in the way) leaves an existing file as it was, and the message names the real
    cause."""
    check_writable(path)
    if image.isNull():
        raise ExportError(tr("app.export.error.render"))
    data = (encode or png_bytes)(image)
    try:
        atomic_io.write_bytes(path, data)
    except atomic_io.WriteError as exc:
        log.warning("export: %s", exc)
        raise ExportError(atomic_io.message(exc)) from exc
    log.info("export: wrote %s (%d x %d)", os.path.abspath(path), image.width(), image.height())


def png_bytes(image: QImage) -> bytes:
    """The PNG file's bytes, encoded in memory (so the file itself is written in one atomic step)."""
    buffer = QBuffer()
    buffer.open(QIODevice.WriteOnly)
    if not image.save(buffer, "PNG", PNG_QUALITY):
        raise ExportError(tr("app.export.error.render"))
    return bytes(buffer.data())


def png_bytes_threaded(image: QImage, level: int = 2) -> bytes:
    """The PNG file's bytes encoded by Pillow, whose unpacker and zlib encoder release the GIL (Qt's encoder holds
    it for seconds at 8K): for encoding in the render thread while the UI thread runs. Qt's premultiplied BGRA is
    handed over as it is ('BGRa' unpremultiplies); RGB when every pixel is opaque, else RGBA."""
    from PIL import Image

    argb = image.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)  # no-op for exports
    w, h = argb.width(), argb.height()
    raw = np.frombuffer(argb.constBits(), np.uint8, count=argb.sizeInBytes())
    pil = Image.frombuffer("RGBA", (w, h), raw, "raw", "BGRa", argb.bytesPerLine(), 1)
    if bool(raw.reshape(h, argb.bytesPerLine())[:, 3: 4 * w: 4].min() == 255):
        pil = pil.convert("RGB")
    out = io.BytesIO()
    pil.save(out, "PNG", compress_level=level)
    return out.getvalue()
