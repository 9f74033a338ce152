"""The packaging tests' venvs get no dependencies of their own: their Python finds them in this checkout's .venv
through PYTHONPATH. Not the .venv's site-packages itself: its own k3-explorer install is there too (an editable
install has a real k3_explorer/ folder, which, ahead on sys.path, would stand in for the tested venv's k3_explorer
and hide its submodules). A folder of links to everything else is: a path entry, so no .pth file of it runs."""
from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path


def deps_folder(where: Path) -> Path:
    """A new folder `where` of links to the .venv's installed packages, less k3-explorer; for PYTHONPATH."""
    where.mkdir()
    for p in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "k3_explorer" not in p.name and not p.name.startswith("__editable__") and p.suffix != ".pth":
            (where / p.name).symlink_to(p)
    return where


def run(cmd, cwd=None, env=None, check=True) -> subprocess.CompletedProcess:
    """The command's result (text); AssertionError with its output when `check` and it failed."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} -> rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def their_app(where: Path) -> Path:
    """A Flask-style project with its own top-level `app` and `compute` packages (`where`, its pyproject)."""
    for pkg, body in (("app", "NAME = 'theirs-app'\n"), ("compute", "def answer():\n    return 42\n")):
        (where / pkg).mkdir(parents=True)
        (where / pkg / "__init__.py").write_text(body)
    (where / "pyproject.toml").write_text(textwrap.dedent("""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "their-app"
        version = "1.0"
        [tool.setuptools]
        packages = ["app", "compute"]
        """))
    return where


def new_venv(where: Path) -> tuple[Path, list[str]]:
    """A fresh venv without pip at `where`: (its python, this Python's pip command that installs into it)."""
    venv.create(where, with_pip=False, system_site_packages=False)
    py = where / "bin" / "python"
    return py, [sys.executable, "-m", "pip", "--python", str(py)]
