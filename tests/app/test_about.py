"""Help -> About and `k3-explorer --version` (issue 14, item 10)."""
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import app
from app import i18n

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
        from app.about import AboutDialog

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
