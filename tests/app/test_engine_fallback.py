"""`--device cuda` where CUDA cannot be used: the window used to show the error for 15 s and then
"Engine loading…" forever with empty panels. Now the engine runs on the CPU, the trace is on screen, and a note
in the status bar says so for as long as it is true (in the current language); when no engine can be made at
all, the note says that instead of "loading"."""
import pytest
import torch

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


@pytest.fixture
def cuda_fails(monkeypatch):
    """CUDA unusable: the real failure on a machine without CUDA, a stand-in for it on a machine with one."""
    if torch.cuda.is_available():
        import compute.engine as engine

        real = engine.resolve_device

        def resolve(device="auto"):
            if str(device).startswith("cuda") or device == "auto":
                raise RuntimeError("CUDA error: no CUDA-capable device is detected")
            return real(device)

        monkeypatch.setattr(engine, "resolve_device", resolve)


def test_cuda_without_cuda_falls_back_to_the_cpu_with_a_visible_note(make_window, qtbot, cuda_fails):
    from app import i18n

    win = make_window("cuda.ini", device="cuda")  # waits for the first trace: it never came before the fix
    assert win.state.trace.device == "cpu"
    assert win.docks["TracePlayerDock"].list.count() > 0  # the panels show that trace
    qtbot.waitUntil(lambda: win.scene.gl.shown_version >= 0, timeout=30000)  # and the 3D view draws it
    note = win.findChild(type(win.status.device_label), "status_engine_note")
    assert note is not None and note.isVisible()
    assert "CUDA" in note.text() and "CPU" in note.text()
    assert "cuda" in note.toolTip() and "Error" in note.toolTip()  # the reason, in full
    assert "CPU" in win.status.device_label.text()
    assert note.geometry().width() > 0 and win.statusBar().isVisible()
    i18n.set_language("ko")
    qtbot.waitUntil(lambda: "CPU에서" in note.text(), timeout=5000)
    i18n.set_language("en")
    bar = win.statusBar()
    bar.clearMessage()  # what a temporary message's timeout (the error shows for 15 s) does: the note outlives it
    qtbot.waitUntil(lambda: bar.currentMessage() == "", timeout=5000)
    assert note.isVisible() and "CUDA" in note.text()
    assert note.parent() is bar and note.isVisibleTo(bar)  # a permanent widget of the bar, not its message


def test_an_engine_that_cannot_start_at_all_says_so(make_window, qtbot, monkeypatch):
    import compute.engine as engine

    def broken(self, *args, **kwargs):
        raise RuntimeError("weights could not be read")

    monkeypatch.setattr(engine.ToyK3, "__init__", broken)
    win = make_window("broken.ini", wait_trace=False)
    note = win.findChild(type(win.status.device_label), "status_engine_note")
    qtbot.waitUntil(lambda: note.isVisible(), timeout=60000)
    assert "could not start" in note.text() and "weights could not be read" in note.text()
    assert "loading" not in win.status.step_label.text().lower()
    assert "loading" not in win.status.device_label.text().lower()
