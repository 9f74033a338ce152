"""In-tree PEP 517 backend (pyproject.toml: backend-path = [".ci"]). It wraps setuptools.build_meta and gives K3
Explorer its own namespace (.ci/k3_namespace.py): only the name k3_explorer, never the checkout's
top-level app/, scene/, compute/, assets/.
- The WHEEL places the four folders under k3_explorer/ and rewrites their absolute imports, as pip's vendoring tool
  does; it also gets k3_explorer/__init__.py (render, run, explain, __version__) and __main__.py, and its console
  script points at k3_explorer.
- The EDITABLE install (`pip install -e .`, PEP 660) puts the same k3_explorer/__init__.py and __main__.py into
  site-packages and a .pth that installs a meta-path finder (.ci/k3_editable_finder.py): k3_explorer.app... load
  live from the checkout, rewritten as they load. setuptools' own editable wheel exposed the bare names.
- The sdist is setuptools' own plus these .ci/ files. In the checkout itself `python -m app` still works (the
  current folder is on sys.path)."""
from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403  (every hook not redefined here)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # k3_namespace beside this file (backend-path)
from k3_namespace import INIT, MAIN, NAMESPACE, TOP, modules_of, rewrite_entry_points, rewrite_source  # noqa: E402

HERE = Path(__file__).resolve().parent
OWN_FILES = ("k3_build_backend.py", "k3_namespace.py", "k3_editable_finder.py")  # what an sdist must carry
FINDER_MODULE = f"__editable___{NAMESPACE}_finder"  # setuptools' naming for an editable install's finder


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _read_wheel(path: Path) -> tuple[list[tuple[str, bytes]], str]:
    with zipfile.ZipFile(path) as zf:
        items = [(i.filename, zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    dist_info = next(n.split("/")[0] for n, _ in items if n.endswith(".dist-info/RECORD"))
    return items, dist_info


def _dist_info_file(name: str, data: bytes, dist_info: str, modules: set[str]) -> bytes:
    if name == f"{dist_info}/entry_points.txt":
        return rewrite_entry_points(data.decode(), modules).encode()
    if name == f"{dist_info}/top_level.txt":
        return f"{NAMESPACE}\n".encode()
    return data


def namespace_wheel(path: Path) -> None:
    """Rewrite the wheel at `path` in place (see the module docstring)."""
    items, dist_info = _read_wheel(path)
    modules = modules_of([n for n, _ in items])
    out: list[tuple[str, bytes]] = []
    for name, data in items:
        if name == f"{dist_info}/RECORD":
            continue
        if name.split("/")[0] in TOP:
            if name.endswith(".py"):
                data = rewrite_source(data.decode("utf-8"), modules).encode("utf-8")
            name = f"{NAMESPACE}/{name}"
        else:
            data = _dist_info_file(name, data, dist_info, modules)
        out.append((name, data))
    out += [(f"{NAMESPACE}/__init__.py", INIT.encode()), (f"{NAMESPACE}/__main__.py", MAIN.encode())]
    _write_wheel(path, out, dist_info)


def finder_source(root: Path) -> str:
    """The editable install's finder module: k3_editable_finder.py with k3_namespace.py's code in place of its
    import line (site-packages has no .ci/ to import it from)."""
    namespace = (HERE / "k3_namespace.py").read_text(encoding="utf-8")
    namespace = namespace.replace("from __future__ import annotations\n", "")
    finder = (HERE / "k3_editable_finder.py").read_text(encoding="utf-8")
    line = next(x for x in finder.splitlines(keepends=True) if x.rstrip().endswith("# K3_NAMESPACE_TEXT"))
    return finder.replace(line, f"# --- k3_namespace.py ---\n{namespace}# --- end of k3_namespace.py ---\n", 1)


def editable_wheel(path: Path, root: Path) -> None:
    """Rewrite setuptools' editable wheel at `path` in place: its .pth and finder (which exposed app, scene,
    compute, assets) give way to k3_explorer's (see the module docstring)."""
    items, dist_info = _read_wheel(path)
    modules = modules_of(p.relative_to(root).as_posix() for top in TOP for p in (root / top).rglob("*.py"))
    out = [(name, _dist_info_file(name, data, dist_info, modules)) for name, data in items
           if name.startswith(f"{dist_info}/") and name != f"{dist_info}/RECORD"]
    pth = f"import {FINDER_MODULE}; {FINDER_MODULE}.install({str(root)!r})\n"
    out += [(f"{NAMESPACE}/__init__.py", INIT.encode()), (f"{NAMESPACE}/__main__.py", MAIN.encode()),
            (f"{FINDER_MODULE}.py", finder_source(root).encode()), (f"__editable__.{NAMESPACE}.pth", pth.encode())]
    _write_wheel(path, out, dist_info)


def _write_wheel(path: Path, out: list[tuple[str, bytes]], dist_info: str) -> None:
    record = [_record_line(n, d) for n, d in out] + [f"{dist_info}/RECORD,,"]
    out = out + [(f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode())]
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


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """setuptools' editable wheel, turned into the k3_explorer finder's (editable_wheel). setuptools' notice
    "Editable installation. Please be careful with folders in your working directory with the same name as your
    package" (a 10-line block in every `pip install -e .`, read as an error) is about its own finder, which this
    wheel replaces: the package is k3_explorer and no folder of that name exists in the checkout."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*Editable installation")
        name = _orig.build_editable(wheel_directory, config_settings, metadata_directory)
    editable_wheel(Path(wheel_directory) / name, Path.cwd().resolve())  # PEP 517: the hooks run in the project
    return name


def build_sdist(sdist_directory, config_settings=None):
    """setuptools' sdist, plus this backend: pyproject.toml names `backend-path = [".ci"]`, so a wheel built from
    the source archive (what pip does with an sdist) needs the backend's .ci/ files (OWN_FILES) inside it."""
    import io
    import tarfile

    name = _orig.build_sdist(sdist_directory, config_settings)
    path = Path(sdist_directory) / name
    base = name[: -len(".tar.gz")]
    own = {f"{base}/.ci/{n}": HERE / n for n in OWN_FILES}
    with tarfile.open(path, "r:gz") as tf:
        members = [(m, tf.extractfile(m).read() if m.isfile() else None) for m in tf.getmembers()]
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for m, data in members:
            if m.name in own:
                continue
            tf.addfile(m, io.BytesIO(data) if data is not None else None)
        for arcname, src in own.items():
            data = src.read_bytes()
            info = tarfile.TarInfo(arcname)
            info.size, info.mode, info.mtime = len(data), 0o644, members[0][0].mtime if members else 0
            tf.addfile(info, io.BytesIO(data))
    tmp.replace(path)
    return name
