"""Help -> About and `k3-explorer --version`."""
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

import app
from app import i18n

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

ROOT = Path(__file__).resolve().parents[2]


def test_version_has_one_source():
    assert re.fullmatch(r"\d+\.\d+\.\d+", app.__version__)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "app.__version__"}


def test_version_flag_prints_and_exits_without_qt():
    code = ("import sys\nfrom app.__main__ import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit as exc:\n    code = exc.code\n"
            "sys.stderr.write(f'{code} {\"PySide6.QtWidgets\" in sys.modules}')")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == f"k3-explorer {app.__version__}"
    assert done.stderr.strip() == "0 False"  # exit status 0, no QApplication (not even QtWidgets imported)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_about_dialog_says_version_licence_and_what_is_toy(main_window, qtbot, lang):
    i18n.set_language(lang)
    try:
        main_window.registry.actions["about"].trigger()  # Help -> About, as a person picks it
        from app.window.about import AboutDialog

        dialog = [d for d in main_window.findChildren(AboutDialog) if d.isVisible()][-1]
        qtbot.waitExposed(dialog)
        text = dialog.body.text()
        assert f"K3 Explorer {app.__version__}" in dialog.heading.text()
        assert dialog.windowTitle() == i18n.tr("app.about.title", lang=lang)
        for key in ("app.about.honesty", "app.about.licence", "app.about.version"):
            assert i18n.tr(key, lang=lang).split("(")[0].strip()[:20] in text, key
        assert "896" in text and "8" in text and "Qt " in text
        if lang == "ko":
            assert "축소 모델" in text and "라이선스" in text
        else:
            assert "toy model" in text and "never Kimi K3's" in text.replace("&#x27;", "'")
        assert dialog.about_qt.toolTip()
        dialog.close()
    finally:
        i18n.set_language("en")


def test_licence_is_apache_everywhere():
    """LICENSE is the standard Apache-2.0 text, pyproject declares it (SPDX, licence file) and the installed
    metadata says so: the About dialog shows what the metadata declares."""
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and "END OF TERMS AND CONDITIONS" in text
    assert len(text.splitlines()) == 202  # the text as apache.org publishes it, appendix included
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert project["authors"] and "urls" not in project  # no URL is published yet: none is invented
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639: the expression alone
    from importlib import metadata

    assert metadata.metadata("k3-explorer")["License-Expression"] == "Apache-2.0"
    from app.window.about import licence_file, licence_text

    assert licence_text() == "Apache-2.0 (Apache License, Version 2.0)"
    assert licence_file().read_text() == text


def test_about_shows_the_licence_and_its_full_text(main_window, qtbot):
    main_window.registry.actions["about"].trigger()
    from app.window.about import AboutDialog, LicenceDialog

    dialog = [d for d in main_window.findChildren(AboutDialog) if d.isVisible()][-1]
    qtbot.waitExposed(dialog)
    assert "Apache-2.0 (Apache License, Version 2.0)" in dialog.body.text()
    assert dialog.licence_button.isEnabled() and dialog.licence_button.toolTip()
    qtbot.mouseClick(dialog.licence_button, Qt.LeftButton)
    shown = [d for d in dialog.findChildren(LicenceDialog) if d.isVisible()]
    assert len(shown) == 1
    text = shown[0].text.toPlainText()
    assert text == (ROOT / "LICENSE").read_text() and shown[0].text.isReadOnly()
    shown[0].close()
    dialog.close()


def test_changelog_names_the_current_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[?([^\]\s]+)\]?", changelog, flags=re.M)
    assert headings[0] == "Unreleased" and app.__version__ in headings
