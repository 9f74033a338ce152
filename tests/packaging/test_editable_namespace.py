"""For `pip install -e .`: the editable install, like the wheel, gives the environment only the name
k3_explorer (.ci/k3_build_backend.py build_editable, .ci/k3_editable_finder.py), served live from the checkout
with the wheel's import rewrite applied as modules load. setuptools' own editable install put app, scene, compute
and assets on every sys.path of the venv.

The install is made from a copy of this checkout (so that a test can edit a source file and see the change, and
nothing is written into the real checkout), into a fresh venv next to a distribution with its own top-level `app`
and `compute` packages. The venv gets no dependencies of its own: its Python finds them in this checkout's .venv
through PYTHONPATH (tests/packaging/venv_deps.py)."""
from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tests.packaging.venv_deps import deps_folder, new_venv, run as _run, their_app

ROOT = Path(__file__).resolve().parents[2]
OURS = ("app", "scene", "compute", "assets")
pytestmark = pytest.mark.slow  # a real `pip install -e .` into a fresh venv: minutes; tests/packaging/test_namespace_rewrite.py checks the rewrite in-process


@pytest.fixture(scope="module")
def editable(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("editable")
    src = tmp / "checkout"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for top in (*OURS, ".ci"):
        shutil.copytree(ROOT / top, src / top, ignore=skip)
    for name in ("pyproject.toml", "LICENSE", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    other = their_app(tmp / "other")  # a Flask-style project with top-level `app` and `compute`
    env_dir = tmp / "venv"
    py, pip = new_venv(env_dir)
    deps = deps_folder(tmp / "deps")
    env = dict(os.environ, PYTHONPATH=str(deps), XDG_CACHE_HOME=str(tmp / "cache"), K3_NO_NUMBA="1")
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the bytecode test needs it written
    # pip runs the build backends in the venv's Python (--python): it finds setuptools, and nothing else of the
    # .venv (whose own k3-explorer pip would see as installed), through PYTHONPATH
    tools = tmp / "build-tools"
    tools.mkdir()
    purelib_here = Path(sysconfig.get_paths()["purelib"])
    for p in [*purelib_here.glob("setuptools*"), *purelib_here.glob("pkg_resources"), *purelib_here.glob("_distutils_hack")]:
        (tools / p.name).symlink_to(p)  # with setuptools' dist-info: its commands are entry points
    build_env = dict(env, PYTHONPATH=str(tools))
    _run(pip + ["install", "-q", "--no-deps", "--no-build-isolation", str(other)], env=build_env)
    _run(pip + ["install", "-q", "--no-deps", "--no-build-isolation", "-e", str(src)], cwd=tmp, env=build_env)
    purelib = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    return {"tmp": tmp, "src": src, "py": py, "pip": pip, "purelib": purelib, "env": env}


def test_site_packages_holds_only_k3_explorer_and_the_finder(editable):
    from app import __version__

    names = {p.name for p in editable["purelib"].iterdir()}
    ours = {n for n in names if "k3" in n}
    assert ours == {"k3_explorer", f"k3_explorer-{__version__}.dist-info", "__editable___k3_explorer_finder.py",
                    "__editable__.k3_explorer.pth"}, ours
    assert not names & {"scene", "assets"}, names
    assert sorted(p.name for p in (editable["purelib"] / "k3_explorer").glob("*.py")) == ["__init__.py", "__main__.py"]
    # their app/ and compute/ are theirs alone
    assert sorted(p.name for p in (editable["purelib"] / "app").iterdir() if p.suffix == ".py") == ["__init__.py"]


def test_both_distributions_work_side_by_side(editable):
    py, env = editable["py"], editable["env"]
    from app import __version__

    out = _run([str(py), "-m", "k3_explorer", "--version"], cwd=editable["tmp"], env=env).stdout
    assert __version__ in out
    assert _run([str(py.parent / "k3-explorer"), "--version"], cwd="/", env=env).stdout == out
    theirs = _run([str(py), "-c", "import app, compute; print(app.NAME, compute.answer())"], cwd="/", env=env)
    assert theirs.stdout.split() == ["theirs-app", "42"]
    for name in ("scene", "assets"):
        r = _run([str(py), "-c", f"import {name}"], cwd="/", env=env, check=False)
        assert r.returncode == 1 and f"No module named '{name}'" in r.stderr, r.stderr


def test_one_process_imports_the_users_app_and_k3_explorer(editable, tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("NAME = 'notebook-app'\n")
    (tmp_path / "app" / "__main__.py").write_text("raise SystemExit('the user app was run')\n")
    script = textwrap.dedent(f"""\
        import sys
        import app
        import k3_explorer
        rgba = k3_explorer.render("Hi", layer=1, step=1, size=(160, 90))
        assert rgba.shape == (90, 160, 4) and rgba.std() > 0, rgba.shape
        import app as again
        assert again is app and app.NAME == 'notebook-app', app
        ours = [m for m in sys.modules if m.split('.')[0] in {OURS!r} and m != 'app']
        assert not ours, ours
        from k3_explorer.app.engine import kernel_warmup
        from k3_explorer.app.window import about
        assert kernel_warmup.MODULE == 'k3_explorer.app.engine.kernel_warmup', kernel_warmup.MODULE  # python -m target
        assert kernel_warmup.__file__ == {str(editable["src"] / "app" / "engine" / "kernel_warmup.py")!r}, kernel_warmup.__file__
        assert about.licence_file() is not None
        from k3_explorer.app.docks.registry import DOCKS
        assert all(e.load().__module__.startswith('k3_explorer.app.docks.') for e in DOCKS), DOCKS  # by name
        print(app.NAME, k3_explorer.__version__)
        """)
    out = _run([str(editable["py"]), "-c", script], cwd=tmp_path, env=editable["env"]).stdout
    assert out.startswith("notebook-app ")
    out = _run([str(editable["py"]), "-m", "k3_explorer", "--version"], cwd=tmp_path, env=editable["env"]).stdout
    assert out.startswith("k3-explorer ")


def test_edits_in_the_checkout_apply_and_its_own_bytecode_stays_its_own(editable):
    py, env, src = editable["py"], editable["env"], editable["src"]
    probe = src / "app" / "editable_probe.py"
    probe.write_text("from app import __version__\nWHO = 'first'\nTARGET = 'app.engine.kernel_warmup'\n")
    code = "from k3_explorer.app import editable_probe as p; print(p.WHO, p.TARGET, p.__version__)"
    assert _run([str(py), "-c", code], cwd="/", env=env).stdout.split()[:2] == ["first", "k3_explorer.app.engine.kernel_warmup"]
    # rewritten bytecode is cached under its own name; the checkout's plain import compiles its own
    assert list((src / "app" / "__pycache__").glob("editable_probe.*.opt-k3explorer.pyc"))
    plain = _run([sys.executable, "-c", "import app.editable_probe as p; print(p.TARGET)"], cwd=src,
                 env=dict(env, PYTHONPATH=""))
    assert plain.stdout.strip() == "app.engine.kernel_warmup"
    assert _run([str(py), "-c", code], cwd="/", env=env).stdout.split()[1] == "k3_explorer.app.engine.kernel_warmup"
    probe.write_text("from app import __version__\nWHO = 'second'\nTARGET = 'app.engine.kernel_warmup'\n")
    os.utime(probe, (probe.stat().st_atime, probe.stat().st_mtime + 2))  # a new mtime even on a coarse clock
    assert _run([str(py), "-c", code], cwd="/", env=env).stdout.split()[0] == "second"


def test_uninstall_leaves_no_file(editable):
    purelib, py, env = editable["purelib"], editable["py"], editable["env"]
    # the compiled-kernel cache is the user's (XDG), never next to the code, and not the checkout's own: numba's
    # index pickles the signatures' types by module name (compute.* there, k3_explorer.compute.* here)
    where = _run([str(py), "-c", "from k3_explorer.compute import fused_nb; print(fused_nb.cache_dir())"], env=env)
    assert Path(where.stdout.strip()) == editable["tmp"] / "cache" / "k3-explorer" / "numba-editable"
    _run(editable["pip"] + ["uninstall", "-y", "-q", "k3-explorer"])
    left = [p.name for p in purelib.iterdir() if "k3_explorer" in p.name]
    left += [p.name for p in (purelib / "__pycache__").glob("*k3_explorer*")] if (purelib / "__pycache__").is_dir() else []
    assert not left, left
    assert not (py.parent / "k3-explorer").exists()
    r = _run([str(py), "-c", "import k3_explorer"], cwd="/", env=env, check=False)
    assert r.returncode == 1 and "No module named 'k3_explorer'" in r.stderr
    assert _run([str(py), "-c", "import app; print(app.NAME)"], cwd="/", env=env).stdout.strip() == "theirs-app"
