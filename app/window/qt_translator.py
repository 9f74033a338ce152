"""Qt's own strings (OK / Cancel / Yes / No in message boxes, file dialogs, context menus) in the app's
language: PySide6 ships Qt's catalogues (`qtbase_ko.qm` under QLibraryInfo's translations path); while the
language is Korean one QTranslator with it is installed on the application, and removed again for English.
Follows app.i18n's language at run time (`follow_language()`)."""
from __future__ import annotations

import logging
import os

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

from app import i18n

log = logging.getLogger(__name__)
QT_CATALOGUE = "qtbase"  # Qt Widgets' and Qt Gui's strings
_translator: QTranslator | None = None
_following = False


def translations_dir() -> str:
    return QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)


def catalogue_path(lang: str) -> str:
    return os.path.join(translations_dir(), f"{QT_CATALOGUE}_{lang}.qm")


def installed() -> QTranslator | None:
    """The Qt translator now installed (None while the language is English)."""
    return _translator


def apply(lang: str) -> bool:
    """Install Qt's catalogue for lang (removing any previous one); English needs none. False when the
    catalogue could not be loaded (Qt's strings then stay English)."""
    global _translator
    app = QCoreApplication.instance()
    if app is None:
        return False
    if _translator is not None:
        app.removeTranslator(_translator)
        _translator = None
    if lang == "en":
        return True
    translator = QTranslator(app)
    if not translator.load(QLocale(lang), QT_CATALOGUE, "_", translations_dir()):
        log.warning("Qt's %s strings not found (%s): they stay English", lang, catalogue_path(lang))
        return False
    app.installTranslator(translator)
    _translator = translator
    log.debug("Qt's strings: %s", catalogue_path(lang))
    return True


def follow_language() -> None:
    """Apply the current language now and after every language switch (idempotent)."""
    global _following
    if not _following:
        _following = True
        i18n.on_change(apply)
    apply(i18n.language())
