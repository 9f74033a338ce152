"""The packaging tests' venvs get no dependencies of their own: their Python finds them in this checkout's .venv
through PYTHONPATH. Not the .venv's site-packages itself: its own k3-explorer install is there too (an editable
install has a real k3_explorer/ folder, which, ahead on sys.path, would stand in for the tested venv's k3_explorer
and hide its submodules). A folder of links to everything else is: a path entry, so no .pth file of it runs."""
from __future__ import annotations

import sysconfig
from pathlib import Path


def deps_folder(where: Path) -> Path:
    """A new folder `where` of links to the .venv's installed packages, less k3-explorer; for PYTHONPATH."""
    where.mkdir()
    for p in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "k3_explorer" not in p.name and not p.name.startswith("__editable__") and p.suffix != ".pth":
            (where / p.name).symlink_to(p)
    return where
