"""Shared test set-up. Qt is optional: tests/compute must pass with PySide6 absent."""
import os
import sys
from pathlib import Path

# As the app does before torch loads (app/engine/worker.py): one OpenMP thread, so that engines built in worker
# threads never open OpenMP teams.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Every window of the suite starts from a fresh settings file: the first-run hint (app/window/first_run_hint.py) would
# cover the 3D view of each; its own tests ask for it. The log file (app/log.py) goes to a private folder.
os.environ.setdefault("K3_NO_FIRST_RUN_HINT", "1")
# Under pytest-xdist each worker is its own process with the controller's environment: each gets its own state
# and config folders (settings, logs), while numba's cache (XDG_CACHE_HOME, warmed by `make test` first) is shared.
if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("K3_TEST_WORKER_DIRS"):
    import tempfile

    os.environ["K3_TEST_WORKER_DIRS"] = "1"
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="k3-test-state-")
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="k3-test-config-")
if not os.environ.get("XDG_STATE_HOME", "").startswith(os.path.join(os.sep, "tmp")):
    import tempfile

    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="k3-test-state-")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:  # Qt present: share GL contexts before any QApplication exists (docs/spec/platform.md)
    from PySide6.QtCore import QCoreApplication, Qt

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
except ImportError:
    pass



import gc  # noqa: E402

import pytest  # noqa: E402


FULL_COLLECTION_EVERY = 25  # tests (about): a collection of every generation after this many young ones


@pytest.fixture(autouse=True)
def _collect_garbage_between_tests(request):
    """Once a window has started the engine or render thread, the app collects garbage only on a GUI-thread timer
    (scene/gc_main_thread.py), which runs only while a test spins Qt's event loop. Tests of the Qt-free engine
    never do: they run with the automatic collector (no thread of theirs allocates Python objects), and every
    test is followed by a collection on this (the GUI) thread (a full one every ~25 tests), so cyclic garbage such as ToyK3 engines cannot
    pile up over the suite; objects a window froze for the collector are
    thawed first."""
    automatic = "tests/compute" in request.node.nodeid.replace("\\", "/") and not gc.isenabled()
    if automatic:
        gc.enable()
    yield
    if automatic:
        gc.disable()
    gc.unfreeze()  # what a window froze at start-up (scene/gc_main_thread.settle) is collectable once the test ends
    if not gc.isenabled():  # the young generations after every test, everything after about 25 tests (a full
        # collection is ~150-250 ms in a worker that has imported torch, Qt and the app; every ~10 tests, the
        # default run spent ~20 s more on them, and the workers' peak memory was 3 % lower)
        gc.collect(2 if gc.get_count()[2] >= FULL_COLLECTION_EVERY else 1)


SLOW = os.environ.get("K3_SLOW", "") not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts other processes for minutes (a pip install into a fresh venv, the "
                            "frozen bundle, the kernels' warm-up child) or runs a survey; run by .ci/run "
                            "(K3_SLOW=1), skipped by a plain `make test`, where a fast in-process test checks the "
                            "same contract")
    config.addinivalue_line("markers", "alone: measures the UI thread's answer time or its event order in real time; "
                            "`make test` runs these after the two-worker part, with no other test process beside "
                            "them (a second worker on 2 cores starves the threads they time)")
    config.addinivalue_line("markers", "window(explain=False): the module's or test's main windows start without "
                            "the Explain dock's explanations (tests/app/conftest.py)")


def pytest_collection_modifyitems(config, items):
    if SLOW:
        return
    skip = pytest.mark.skip(reason="slow: make test K3_SLOW=1 (.ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)

