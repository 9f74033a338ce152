"""Shared test set-up. Qt is optional: tests/compute must pass with PySide6 absent."""
import os
import sys
from pathlib import Path

# As the app does before torch loads (app/worker.py): one OpenMP thread, so that engines built in worker
# threads never open OpenMP teams.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:  # Qt present: share GL contexts before any QApplication exists (docs/spec/platform.md)
    from PySide6.QtCore import QCoreApplication, Qt

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
except ImportError:
    pass

