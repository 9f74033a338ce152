"""A long prompt without spaces used to widen the main window to 15,893 px (the stream, token
and facts labels of the trace player cannot wrap it), and the widened geometry and the prompt were saved, so the
next start came back at 32,767 px. The prompt must elide or wrap; the window never grows past the screen."""
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtTest import QTest

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

LONG = "x" * 3000  # one "word": no place for a line to break


def _run_prompt(win, qtbot, text: str) -> None:
    dock = win.docks["TracePlayerDock"]
    dock.prompt.setFocus()
    dock.prompt.selectAll()
    QTest.keyClicks(dock.prompt, text[:40])  # typed like a person, the rest pasted
    dock.prompt.insert(text[40:])
    QTest.keyClick(dock.prompt, "\r")
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.text == text, timeout=120000)
    _settled(win, qtbot)


def _settled(win, qtbot) -> None:
    """The trace player shows the trace's prompt, and every layout Qt has pending has run: whatever could widen
    the window has happened (a layout request is a posted event; run them all, rather than waiting a while)."""
    dock = win.docks["TracePlayerDock"]
    qtbot.waitUntil(lambda: "xxxx" in dock.stream_label.text(), timeout=10000)
    for _ in range(3):  # a layout that resizes a widget may post the next one
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        QCoreApplication.processEvents()


def _assert_within_screen(win) -> None:
    avail = win.screen().availableGeometry()
    assert win.frameGeometry().width() <= avail.width(), (win.frameGeometry(), avail)
    assert win.frameGeometry().height() <= avail.height(), (win.frameGeometry(), avail)
    assert win.minimumSizeHint().width() <= avail.width()
    dock = win.docks["TracePlayerDock"]
    assert dock.width() < avail.width() // 2, dock.width()


def test_a_long_prompt_without_spaces_keeps_the_window_within_the_screen(main_window, qtbot):
    win = main_window
    width = win.width()
    _run_prompt(win, qtbot, LONG)
    _assert_within_screen(win)
    assert win.width() <= width
    dock = win.docks["TracePlayerDock"]
    # the prompt is still shown, its middle elided: the start, an ellipsis, the end
    shown = dock.stream_label.text()
    assert "xxxxxxxx" in shown and "…" in shown
    for label in (dock.stream_label, dock.tokens_label, dock.facts):
        assert label.width() <= dock.width(), label.objectName()
    # stepping through the steps (the facts show the prompt at step 1) does not widen it either
    for i in range(len(dock.steps)):
        dock.seek(i)
    _settled(win, qtbot)
    _assert_within_screen(win)


def test_a_long_prompt_restored_from_settings_keeps_the_window_within_the_screen(make_window, qtbot):
    """A window of its own: the prompt and geometry it saves are read back by the next start."""
    win = make_window("restored.ini")
    _run_prompt(win, qtbot, LONG + " and then some words")
    win.close()  # saves the prompt and the window's geometry
    again = make_window("restored.ini")
    assert again.state.trace.text.startswith("xxxx")  # the saved prompt ran at start
    _settled(again, qtbot)
    _assert_within_screen(again)
