"""No exception leaves a Qt slot: the one guard (app/slot_guard.py) logs the traceback and says one
line in the main window's status bar, and the app goes on; the app's excepthook does the same for anything
that still reaches Qt's event loop or a thread; the suite itself fails on any of them (tests/app/conftest.py)."""
import logging
import sys
import threading

from PySide6.QtCore import QObject, Signal

from app import slot_guard

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


class _Emitter(QObject):
    two = Signal(int, str)


def test_a_guarded_slot_logs_says_one_line_and_the_app_goes_on(main_window, qtbot, caplog, slot_errors):
    win = main_window
    calls = []

    @slot_guard.guarded
    def slot(n):  # takes one of the signal's two arguments: the other is dropped
        calls.append(n)
        if n == 1:
            raise ValueError("bad value 1\nsecond line")
        return n

    emitter = _Emitter()
    emitter.two.connect(slot)
    with caplog.at_level(logging.ERROR, logger="app.slot_guard"):
        emitter.two.emit(1, "x")
    assert calls == [1]
    message = win.statusBar().currentMessage()
    assert "ValueError: bad value 1" in message and "second line" not in message and "\n" not in message
    assert "slot" in message
    record = next(r for r in caplog.records if r.name == "app.slot_guard")
    assert "Traceback" in record.getMessage() and "bad value 1" in record.getMessage()
    assert [w for w, _e in slot_errors] == [slot.__qualname__] or len(slot_errors) == 1
    slot_errors.clear()
    emitter.two.emit(2, "y")  # the next signal is delivered as usual
    assert calls == [1, 2] and not slot_errors
    assert slot(3) == 3 and slot(1) is None
    slot_errors.clear()


def test_an_action_that_fails_is_one_status_line(main_window, qtbot, monkeypatch, slot_errors):
    win = main_window

    def boom(*_a, **_k):
        raise RuntimeError("the dialog could not be made")

    monkeypatch.setattr("app.window.main_window.ShortcutsDialog", boom)
    win.registry.actions["shortcuts"].trigger()
    assert "RuntimeError: the dialog could not be made" in win.statusBar().currentMessage()
    assert len(slot_errors) == 1 and "action shortcuts" in slot_errors[0][0]
    slot_errors.clear()


def test_a_failing_step_in_the_trace_player_says_so_and_stepping_goes_on(main_window, qtbot, monkeypatch,
                                                                          slot_errors):
    from app import player

    win = main_window
    dock = win.docks["TracePlayerDock"]
    real = player.describe

    def broken(*args, **kwargs):
        raise KeyError("no such tensor")

    monkeypatch.setattr(player, "describe", broken)
    start = win.state.step
    dock.step_by(1)
    qtbot.waitUntil(lambda: "KeyError" in win.statusBar().currentMessage(), timeout=5000)
    assert "KeyError" in dock.facts.toPlainText()
    assert slot_errors and all("trace player" in w for w, _e in slot_errors)
    slot_errors.clear()
    monkeypatch.setattr(player, "describe", real)
    dock.step_by(-1)
    qtbot.waitUntil(lambda: win.state.step == start and "KeyError" not in dock.facts.toPlainText(), timeout=5000)


def test_the_apps_excepthook_reports_and_never_aborts(main_window, qtbot, caplog, slot_errors):
    win = main_window
    old_hook, old_thread_hook = sys.excepthook, threading.excepthook
    try:
        slot_guard.install_excepthook()
        try:
            raise ZeroDivisionError("in an event handler")
        except ZeroDivisionError:
            sys.excepthook(*sys.exc_info())
        assert "ZeroDivisionError: in an event handler" in win.statusBar().currentMessage()
        worker = threading.Thread(target=lambda: 1 / 0, name="probe-worker")
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: "probe-worker" in win.statusBar().currentMessage(), timeout=5000)
    finally:
        sys.excepthook, threading.excepthook = old_hook, old_thread_hook
    assert len(slot_errors) == 2
    slot_errors.clear()


def test_the_status_line_is_plain_and_translated(main_window, slot_errors):
    from app import i18n

    win = main_window
    i18n.set_language("ko")
    try:
        slot_guard.report(ValueError('<img src="/dev/zero">'), "probe")
        text = win.statusBar().currentMessage()
        assert "오류" in text and '<img src="/dev/zero">' in text  # the status bar paints plain text
    finally:
        i18n.set_language("en")
    slot_errors.clear()
