"""The installed K3 Explorer owns only the name k3_explorer. The wheel is built once from this checkout
(.ci/k3_build_backend.py moves app/, scene/, compute/, assets/ under k3_explorer/ and rewrites their imports),
installed into a fresh venv next to a tiny distribution with its own top-level `app` and `compute` packages, and
both must work, on disk and in one process. The venv gets no dependencies of its own: its Python finds them in
this checkout's .venv through PYTHONPATH (tests/packaging/venv_deps.py: not the .venv's own k3-explorer)."""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from tests.packaging.venv_deps import deps_folder, new_venv, run as _run, their_app

ROOT = Path(__file__).resolve().parents[2]
OURS = ("app", "scene", "compute", "assets")
pytestmark = pytest.mark.slow  # a real `pip wheel` and a fresh venv: minutes; tests/packaging/test_namespace_rewrite.py checks the rewrite in-process


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
          str(ROOT)])
    wheel = next((tmp / "dist").glob("k3_explorer-*.whl"))
    # the other distribution: a Flask-style project with top-level `app` and `compute`
    other = their_app(tmp / "other")  # a Flask-style project with top-level `app` and `compute`
    env_dir = tmp / "venv"
    py, pip = new_venv(env_dir)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
          str(other)])
    _run(pip + ["install", "-q", "--no-deps", str(next((tmp / "dist").glob("their_app-*.whl")))])
    _run(pip + ["install", "-q", "--no-deps", str(wheel)])
    purelib = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    env = dict(os.environ, PYTHONPATH=str(deps_folder(tmp / "deps")), XDG_CACHE_HOME=str(tmp / "cache"),
               K3_NO_NUMBA="1")
    env.pop("NUMBA_CACHE_DIR", None)
    return {"tmp": tmp, "py": py, "pip": pip, "purelib": purelib, "env": env, "wheel": wheel}


def test_wheel_holds_only_k3_explorer(installed):
    import zipfile

    tops = {n.split("/")[0] for n in zipfile.ZipFile(installed["wheel"]).namelist()}
    assert tops == {"k3_explorer", installed["wheel"].name.split("-py3")[0] + ".dist-info"}, tops


def test_both_distributions_work_side_by_side(installed):
    py, env, purelib = installed["py"], installed["env"], installed["purelib"]
    from app import __version__

    out = _run([str(py), "-m", "k3_explorer", "--version"], cwd=installed["tmp"], env=env).stdout
    assert __version__ in out
    assert _run([str(installed["py"].parent / "k3-explorer"), "--version"], env=env).stdout == out
    theirs = _run([str(py), "-c", "import app, compute; print(app.NAME, compute.answer())"], cwd="/", env=env)
    assert theirs.stdout.split() == ["theirs-app", "42"]
    # on disk: their app/ and compute/ are theirs alone, and no scene/ or assets/ of ours
    assert sorted(p.name for p in (purelib / "app").iterdir() if p.suffix == ".py") == ["__init__.py"]
    assert sorted(p.name for p in (purelib / "compute").iterdir() if p.suffix == ".py") == ["__init__.py"]
    assert not (purelib / "scene").exists() and not (purelib / "assets").exists()


def test_runs_from_a_folder_holding_an_app_package(installed, tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("raise SystemExit('the user app was imported')\n")
    (tmp_path / "app" / "__main__.py").write_text("raise SystemExit('the user app was run')\n")
    out = _run([str(installed["py"]), "-m", "k3_explorer", "--version"], cwd=tmp_path, env=installed["env"])
    from app import __version__

    assert __version__ in out.stdout


def test_one_process_imports_the_users_app_and_k3_explorer(installed, tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("NAME = 'notebook-app'\n")
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
        print(app.NAME, k3_explorer.__version__)
        """)
    out = _run([str(installed["py"]), "-c", script], cwd=tmp_path, env=installed["env"]).stdout
    assert out.startswith("notebook-app ")


def test_uninstall_leaves_no_file(installed):
    purelib, py, env = installed["purelib"], installed["py"], installed["env"]
    # the compiled-kernel cache is the user's (XDG), never next to the code, although this site-packages is writable
    where = _run([str(py), "-c", "from k3_explorer.compute import fused_nb; print(fused_nb.cache_dir())"], env=env)
    # (the installed namespace's own folder in it: numba pickles record types by module name, so a checkout's
    # `compute` and the installed `k3_explorer.compute` of the same files cannot share one)
    assert Path(where.stdout.strip()) == installed["tmp"] / "cache" / "k3-explorer" / "numba" / "k3_explorer"
    _run(installed["pip"] + ["uninstall", "-y", "-q", "k3-explorer"])
    assert not (purelib / "k3_explorer").exists()
    assert not list(purelib.glob("k3_explorer*"))
    assert not (installed["py"].parent / "k3-explorer").exists()
    assert _run([str(py), "-c", "import app; print(app.NAME)"], cwd="/", env=env).stdout.strip() == "theirs-app"


def test_a_wheel_built_from_the_source_archive_is_namespaced_too(tmp_path):
    """pip builds a wheel from an sdist after unpacking it; pyproject.toml's backend-path names .ci/, so the
    archive must carry the backend (setuptools' sdist alone left it out, and that build failed)."""
    import tarfile
    import zipfile

    code = (f"import sys; sys.path.insert(0, {str(ROOT / '.ci')!r}); import k3_build_backend as b; "
            f"print(b.build_sdist({str(tmp_path / 'sdist')!r}))")
    (tmp_path / "sdist").mkdir()
    name = _run([sys.executable, "-c", code], cwd=ROOT).stdout.strip().splitlines()[-1]
    archive = tmp_path / "sdist" / name
    with tarfile.open(archive) as tf:
        names = tf.getnames()
        base = name[: -len(".tar.gz")]
        assert f"{base}/.ci/k3_build_backend.py" in names and f"{base}/pyproject.toml" in names
        tf.extractall(tmp_path / "src", filter="data")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
          str(tmp_path / "dist"), str(tmp_path / "src" / base)])
    wheel = next((tmp_path / "dist").glob("k3_explorer-*.whl"))
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"k3_explorer", wheel.name.split("-py3")[0] + ".dist-info"}, tops
