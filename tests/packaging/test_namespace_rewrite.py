"""The install namespace's contract, checked in this process in about a second (the default run): the wheel and
editable rewrites of .ci/k3_build_backend.py applied to this checkout's real files, without pip, a venv or a child
process. tests/packaging/test_wheel_namespace.py and test_editable_namespace.py check the same contract end to end
(a real `pip wheel` / `pip install -e .` into a fresh venv beside another distribution with top-level `app` and
`compute`); they start processes for minutes and are marked slow (run by `.ci/run`, or `make test K3_SLOW=1`).

- The wheel: every file lies under k3_explorer/ or the dist-info; every absolute import of app, scene, compute or
  assets in every module becomes k3_explorer.<name> (read back with ast, not with the rewrite's own regex); every
  module still compiles; the entry point names k3_explorer; top_level.txt says k3_explorer; RECORD's hashes and
  sizes match the files.
- The editable wheel: only k3_explorer/__init__.py and __main__.py, the finder module and its .pth beside the
  dist-info; the finder compiles and carries k3_namespace's code; the .pth installs it on this checkout."""
from __future__ import annotations

import ast
import base64
import hashlib
import importlib.util
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = ("app", "scene", "compute", "assets")
DIST = "k3_explorer-0.0.0.dist-info"


@pytest.fixture(scope="module")
def backend():
    spec = importlib.util.spec_from_file_location("k3_build_backend_under_test", ROOT / ".ci" / "k3_build_backend.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _source_files() -> list[Path]:
    return sorted(p for top in TOP for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts)


def _write_zip(path: Path, items: list[tuple[str, bytes]]) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in items:
            zf.writestr(name, data)


def _read_zip(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}


def _absolute_imports(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
    return out


def _check_record(files: dict[str, bytes], dist_info: str) -> None:
    rows = [r.split(",") for r in files[f"{dist_info}/RECORD"].decode().splitlines() if r]
    listed = {name for name, *_ in rows}
    assert listed == set(files), set(files) ^ listed
    for name, digest, size in rows:
        if name.endswith("RECORD"):
            continue
        want = base64.urlsafe_b64encode(hashlib.sha256(files[name]).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={want}" and int(size) == len(files[name]), name


def test_the_wheel_rewrite_gives_every_module_the_k3_explorer_name(backend, tmp_path):
    sources = _source_files()
    assert len(sources) > 100  # the real tree, not a sample
    items = [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in sources]
    items += [(f"{DIST}/METADATA", b"Name: k3-explorer\n"), (f"{DIST}/top_level.txt", b"app\ncompute\nscene\n"),
              (f"{DIST}/entry_points.txt", b"[console_scripts]\nk3-explorer = app.__main__:main\n"),
              (f"{DIST}/RECORD", b"")]
    wheel = tmp_path / "k3_explorer-0.0.0-py3-none-any.whl"
    _write_zip(wheel, items)
    backend.namespace_wheel(wheel)
    files = _read_zip(wheel)
    assert {n.split("/")[0] for n in files} == {"k3_explorer", DIST}
    assert len([n for n in files if n.startswith("k3_explorer/")]) == len(sources) + 2  # + __init__, __main__
    for name, data in files.items():
        if not name.endswith(".py"):
            continue
        tree = ast.parse(data.decode("utf-8"), filename=name)  # still Python
        bare = [m for m in _absolute_imports(tree) if m.split(".")[0] in TOP]
        assert not bare, (name, bare)
    # a module that imports another of ours (the window imports compute and scene) names them in the namespace
    window = ast.parse(files["k3_explorer/app/window/main_window.py"].decode())
    assert any(m.startswith("k3_explorer.scene") for m in _absolute_imports(window))
    assert files[f"{DIST}/top_level.txt"] == b"k3_explorer\n"
    assert b"k3-explorer = k3_explorer.app.__main__:main" in files[f"{DIST}/entry_points.txt"]
    _check_record(files, DIST)


def test_the_editable_rewrite_leaves_only_the_finder_and_k3_explorer(backend, tmp_path):
    setuptools_like = [(f"{DIST}/METADATA", b"Name: k3-explorer\n"), (f"{DIST}/top_level.txt", b"app\n"),
                       (f"{DIST}/entry_points.txt", b"[console_scripts]\nk3-explorer = app.__main__:main\n"),
                       ("__editable__.k3_explorer-0.0.0.pth", b"import __editable___k3_explorer_0_0_0_finder\n"),
                       ("__editable___k3_explorer_0_0_0_finder.py", b"MAPPING = {'app': '/x/app'}\n"),
                       (f"{DIST}/RECORD", b"")]
    wheel = tmp_path / "k3_explorer-0.0.0-0.editable-py3-none-any.whl"
    _write_zip(wheel, setuptools_like)
    backend.editable_wheel(wheel, ROOT)
    files = _read_zip(wheel)
    finder = backend.FINDER_MODULE
    assert set(files) - {n for n in files if n.startswith(f"{DIST}/")} == {
        "k3_explorer/__init__.py", "k3_explorer/__main__.py", f"{finder}.py", "__editable__.k3_explorer.pth"}
    source = files[f"{finder}.py"].decode()
    compile(source, f"{finder}.py", "exec")
    assert "def rewrite_source" in source and "# K3_NAMESPACE_TEXT" not in source  # k3_namespace's code, inlined
    assert files["__editable__.k3_explorer.pth"].decode() == f"import {finder}; {finder}.install({str(ROOT)!r})\n"
    assert b"k3_explorer.app.__main__:main" in files[f"{DIST}/entry_points.txt"]
    _check_record(files, DIST)
