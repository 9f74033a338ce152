"""Can Qt use the display? One translated line saying why not, or None: the check the GUI (app/__main__.py), the
CLI export (app/cli.py) and the Python API (app/api.py) make before they create a QApplication, so a missing
X11 library or display is one clear line instead of Qt's abort."""
from __future__ import annotations

import os

from app.i18n import tr


def missing_libraries_error() -> str | None:
    """One translated line naming the libraries Qt's xcb platform needs that are missing and the apt-get line that
    installs them (Qt would abort with "could not load the Qt platform plugin"), or None."""
    from scene.display import install_command, missing_libraries

    missing = missing_libraries()
    if not missing:
        return None
    return tr("ship.missing_libraries", libraries=", ".join(soname for soname, _ in missing),
              command=install_command(missing))


def display_error() -> str | None:
    """One translated line when Qt could not use the display (a library Qt's xcb platform needs is missing,
    no display is set, or no X server answers there)."""
    from scene.display import display_problem

    missing = missing_libraries_error()
    if missing:
        return missing
    problem = display_problem()
    if problem is None:
        return None
    key = "app.cli.no_display" if problem == "missing" else "app.cli.display_unreachable"
    return tr(key, display=os.environ.get("DISPLAY", ""))
