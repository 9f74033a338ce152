"""Shared test set-up. Qt is optional: tests/compute must pass with PySide6 absent."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:  # Qt present: share GL contexts before any QApplication exists (spec/platform.md)
    from PySide6.QtCore import QCoreApplication, Qt

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
except ImportError:
    pass
