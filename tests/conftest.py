"""Shared test set-up. Qt is optional: tests/compute must pass with PySide6 absent."""
import os
import sys
from pathlib import Path

import pytest

# As the app does before torch loads (app/worker.py): one OpenMP thread, so that engines built in worker
# threads never open OpenMP teams.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:  # Qt present: share GL contexts before any QApplication exists (spec/platform.md)
    from PySide6.QtCore import QCoreApplication, Qt

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
except ImportError:
    pass



# Qt's teardown at interpreter exit: after a test session that built and dropped several main windows,
# PySide's exit clean-up destroys the QApplication, whose destructor walks a scene's native GL window container
# (QWindowContainer::toplevelAboutToBeDestroyed) that is already gone and segfaults — after every test has
# passed and the summary is printed, turning a green run into exit 139. The app itself exits cleanly (one
# window). So once pytest is done, the test process stops pytest-xvfb's display itself and leaves without
# Qt's teardown, keeping pytest's exit status.
_SESSION: dict[str, int] = {}


def pytest_sessionfinish(session, exitstatus):
    _SESSION["exitstatus"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if "PySide6.QtWidgets" in sys.modules and "exitstatus" in _SESSION:
        sys.stdout.flush()
        sys.stderr.flush()
        xvfb = sys.modules.get("pytest_xvfb")
        if xvfb is not None:
            xvfb.shutdown_xvfb()
        os._exit(_SESSION["exitstatus"])
