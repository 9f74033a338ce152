"""Qt's own strings (OK / Cancel / Yes / No) in Korean while the app is Korean."""
import os

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from app import i18n
from app.window import qt_translator

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def test_pyside_ships_qtbase_ko():
    assert os.path.isfile(qt_translator.catalogue_path("ko")), qt_translator.catalogue_path("ko")


def _button_texts(parent) -> list[str]:
    box = QMessageBox(QMessageBox.Question, "K3", "?", QMessageBox.Ok | QMessageBox.Cancel | QMessageBox.Yes
                      | QMessageBox.No, parent)
    seen = []

    def read():
        seen.extend(b.text().replace("&", "") for b in box.buttons())
        box.done(0)
    QTimer.singleShot(0, read)
    box.exec()  # shown as a person sees it, closed again at once
    return seen


def test_message_box_buttons_switch_language_at_run_time(main_window):
    assert qt_translator.installed() is None
    assert {"OK", "Cancel", "Yes", "No"} <= set(_button_texts(main_window))
    main_window.registry.actions["lang_ko"].trigger()  # Language -> 한국어
    try:
        translator = qt_translator.installed()
        assert translator is not None and not translator.isEmpty()
        texts = _button_texts(main_window)
        assert "확인" in texts and "취소" in texts, texts  # qtbase_ko.qm: OK -> 확인, Cancel -> 취소
        assert any(t.startswith("예") for t in texts) and any(t.startswith("아니요") for t in texts), texts
    finally:
        main_window.registry.actions["lang_en"].trigger()
    assert qt_translator.installed() is None  # English removes the translator again
    assert {"OK", "Cancel"} <= set(_button_texts(main_window))
    assert i18n.language() == "en"


def test_switching_to_korean_twice_installs_one_translator(main_window):
    app = QApplication.instance()
    try:
        i18n.set_language("ko")
        first = qt_translator.installed()
        qt_translator.apply("ko")
        assert qt_translator.installed() is not first  # the old one was removed, not stacked
        assert _button_texts(main_window).count("확인") == 1
    finally:
        i18n.set_language("en")
    assert qt_translator.installed() is None and app is QApplication.instance()
