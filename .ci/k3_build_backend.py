"""In-tree PEP 517 backend (pyproject.toml: backend-path = [".ci"]). It wraps setuptools.build_meta and gives the
WHEEL its own namespace (issue 24.2): the four top-level folders of the
checkout (app/, scene/, compute/, assets/) are placed under k3_explorer/ and their absolute imports rewritten to
k3_explorer.app..., as pip's vendoring tool does. Rewritten: `import X...` / `from X... import` statements and
string literals that name an existing submodule exactly ("app.docks.inspector" for the registry's import_module,
"app.kernel_warmup" for `python -m`); i18n keys such as "app.cli.bad_scale" name no module and stay. The wheel also
gets k3_explorer/__init__.py (render, run, explain, __version__) and __main__.py, and its console script points at
k3_explorer. Editable installs and sdists are setuptools' own (the checkout keeps `python -m app`)."""
from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403  (every hook not redefined here)

NAMESPACE = "k3_explorer"
TOP = ("app", "scene", "compute", "assets")
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)(%s)(?=[\s.])" % "|".join(TOP), re.M)

INIT = '''"""K3 Explorer, installed: `from k3_explorer import render, run, explain`; `python -m k3_explorer`."""
from k3_explorer.app import __version__

__all__ = ["__version__", "explain", "render", "run"]


def __getattr__(name):  # render/run/explain load the engine (and Qt) only when asked for
    if name in ("render", "run", "explain"):
        from k3_explorer.app import api
        return getattr(api, name)
    raise AttributeError(f"module 'k3_explorer' has no attribute {name!r}")
'''
MAIN = '''"""`python -m k3_explorer`: the k3-explorer command."""
import sys

from k3_explorer.app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
'''


def _modules(names: list[str]) -> set[str]:
    """Dotted names of every module and package among the wheel's files (app/docks/x.py -> app.docks.x)."""
    out = set()
    for n in names:
        if n.endswith(".py") and n.split("/")[0] in TOP:
            parts = n[:-3].split("/")
            out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def rewrite_source(text: str, modules: set[str]) -> str:
    text = _IMPORT.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{NAMESPACE}.{m[4]}", text)
    dotted = sorted((m for m in modules if "." in m), key=len, reverse=True)  # a bare "assets" is a folder name
    pattern = re.compile(r"""(["'])(%s)\1""" % "|".join(re.escape(m) for m in dotted))
    return pattern.sub(lambda m: f"{m[1]}{NAMESPACE}.{m[2]}{m[1]}", text)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def namespace_wheel(path: Path) -> None:
    """Rewrite the wheel at `path` in place (see the module docstring)."""
    with zipfile.ZipFile(path) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    names = [i.filename for i, _ in items]
    modules = _modules(names)
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
    out: list[tuple[str, bytes]] = []
    for info, data in items:
        name = info.filename
        if name == f"{dist_info}/RECORD":
            continue
        if name.split("/")[0] in TOP:
            if name.endswith(".py"):
                data = rewrite_source(data.decode("utf-8"), modules).encode("utf-8")
            name = f"{NAMESPACE}/{name}"
        elif name == f"{dist_info}/entry_points.txt":
            data = rewrite_source(data.decode(), modules)
            data = re.sub(r"=\s*(%s)([.:])" % "|".join(TOP), rf"= {NAMESPACE}.\1\2", data).encode()
        elif name == f"{dist_info}/top_level.txt":
            data = f"{NAMESPACE}\n".encode()
        out.append((name, data))
    out += [(f"{NAMESPACE}/__init__.py", INIT.encode()), (f"{NAMESPACE}/__main__.py", MAIN.encode())]
    record = [_record_line(n, d) for n, d in out] + [f"{dist_info}/RECORD,,"]
    out.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in out:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, data, zipfile.ZIP_DEFLATED)
    tmp.replace(path)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = _orig.build_wheel(wheel_directory, config_settings, metadata_directory)
    namespace_wheel(Path(wheel_directory) / name)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """setuptools' sdist, plus this backend: pyproject.toml names `backend-path = [".ci"]`, so a wheel built from
    the source archive (what pip does with an sdist) needs .ci/k3_build_backend.py inside it."""
    import io
    import tarfile

    name = _orig.build_sdist(sdist_directory, config_settings)
    path = Path(sdist_directory) / name
    base = name[: -len(".tar.gz")]
    me = Path(__file__).resolve()
    with tarfile.open(path, "r:gz") as tf:
        members = [(m, tf.extractfile(m).read() if m.isfile() else None) for m in tf.getmembers()]
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for m, data in members:
            if m.name == f"{base}/.ci/{me.name}":
                continue
            tf.addfile(m, io.BytesIO(data) if data is not None else None)
        data = me.read_bytes()
        info = tarfile.TarInfo(f"{base}/.ci/{me.name}")
        info.size, info.mode, info.mtime = len(data), 0o644, members[0][0].mtime if members else 0
        tf.addfile(info, io.BytesIO(data))
    tmp.replace(path)
    return name
