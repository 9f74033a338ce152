"""The README and docs/ say what is true: every fenced code block is checked. Shell blocks: each command is one the
project has (make targets, pip extras, `k3-explorer` arguments parsed by the app's own parsers, `python -m`
modules with their parsers, paths that exist); Python blocks run (the 3D renders under Xvfb), and a line
`expression  # -> VALUE — remark` must give VALUE. Stated facts (paths, the glibc the Qt wheel needs, the
README's length) are measured, not copied."""
import argparse
import ast
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
MAKEFILE = (ROOT / "Makefile").read_text()


def blocks(lang: str) -> list[tuple[str, int, str]]:
    """(file name, line, code) of every fenced block in that language."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                found.append((path.name, text[: m.start()].count("\n") + 1, m.group(2)))
    return found


def commands(code: str) -> list[list[str]]:
    """Each command line of a shell block as argv (continuations joined, comments dropped)."""
    out = []
    for line in code.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            out.append(argv)
    return out


class _Parsed(Exception):
    pass


def _parses(main, argv: list[str]) -> None:
    """main(argv) gets as far as its parser's answer: a bad argument fails the test, a good one stops there."""
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        original(self, args, namespace)
        raise _Parsed

    argparse.ArgumentParser.parse_args = parse_then_stop
    try:
        main(argv)
    except _Parsed:
        return
    except SystemExit as exc:
        raise AssertionError(f"{argv}: the parser refused it (exit {exc.code})") from None
    finally:
        argparse.ArgumentParser.parse_args = original
    raise AssertionError(f"{argv}: never parsed")


def check_k3(argv: list[str]) -> None:
    from app.engine import kernel_warmup

    if argv[:1] == ["export"]:
        from app.cli import build_parser

        build_parser().parse_args(argv[1:])  # SystemExit(2) on a bad argument
    elif argv[:1] == [kernel_warmup.WARM_FLAG]:
        assert argv[1:] in ([], ["--if-needed"]), argv
    else:
        from app.cli_main import build_parser

        build_parser().parse_args(argv)


def check_make(argv: list[str]) -> None:
    for arg in argv[1:]:
        if "=" in arg:
            assert re.match(r"[A-Z][A-Z0-9_]*=", arg), arg
            assert re.search(rf"^{arg.split('=')[0]} [?:]?=|\$\({arg.split('=')[0]}\)", MAKEFILE, re.M), arg
        else:
            assert re.search(rf"^{re.escape(arg)}:", MAKEFILE, re.M), f"no make target {arg}"


def check_pip(argv: list[str]) -> None:
    assert argv[1] in ("install", "uninstall"), argv
    if argv[1] == "uninstall":
        assert argv[2:] == [PROJECT["name"]], argv
        return
    args = argv[2:]
    if "--index-url" in args:
        assert args == ["torch", "--index-url", "https://download.pytorch.org/whl/cpu"], args
        assert "https://download.pytorch.org/whl/cpu" in MAKEFILE  # the same index make test uses
        return
    for arg in args:
        m = re.fullmatch(r"\.(?:\[(\w+)\])?", arg)
        assert m, f"pip install {arg}: only this checkout ('.', '.[extra]') is documented"
        assert m.group(1) is None or m.group(1) in PROJECT["optional-dependencies"], arg


def check_python_m(argv: list[str]) -> None:
    assert argv[1] == "-m", argv
    module, rest = argv[2], argv[3:]
    if module in ("app", "k3_explorer"):
        check_k3(rest)
    elif module == "compute.training.train":
        from compute.training import train

        _parses(train.main, rest)
    else:
        raise AssertionError(f"python -m {module}: not checked here")


def check_command(argv: list[str]) -> None:
    head = argv[0]
    if head == "xvfb-run":
        assert argv[1] == "-a", argv
        return check_command(argv[2:])
    if head in ("k3-explorer", "dist/k3-explorer/k3-explorer"):
        return check_k3(argv[1:])
    if head == "make":
        return check_make(argv)
    if head == "pip":
        return check_pip(argv)
    if head == "python":
        if argv[1].endswith(".py"):
            assert (ROOT / argv[1]).is_file(), argv
            if argv[1] == "docs/make_screenshots.py":  # its options, by its own parser
                sys.path.insert(0, str(ROOT / "docs"))
                try:
                    from make_screenshots import main
                finally:
                    sys.path.remove(str(ROOT / "docs"))
                _parses(main, argv[2:])
            return None
        return check_python_m(argv)
    if head == "rm":
        assert argv[1] == "-rf", argv
        return check_removed_paths(argv[2:])
    raise AssertionError(f"{head}: a command this test does not know (teach it, or change the docs)")


def _home_paths() -> dict[str, str]:
    """The folders the app really uses under a fresh HOME with no XDG variables, as ~/... (measured in a child)."""
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]);"
            "from app import log; from app.files.settings import Settings; from compute.compiled import numba_setup;"
            "numba_setup.cache_dir_setup(); h = os.environ['HOME'];"
            "show = lambda p: str(p).replace(h, '~', 1);"
            "print(show(Settings().path)); print(show(os.environ['NUMBA_CACHE_DIR'])); print(show(log.log_file()))")
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"k3-docs-home-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k != "NUMBA_CACHE_DIR"}
    env.update(HOME=str(home), QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    settings, cache, log_file = done.stdout.split("\n")[:3]
    return {"settings": settings, "cache": cache, "log": log_file}


@pytest.fixture(scope="module")
def home_paths():
    return _home_paths()


_REMOVED: list[list[str]] = []


def check_removed_paths(paths: list[str]) -> None:
    _REMOVED.append(paths)


def test_every_shell_command_in_the_docs_is_one_the_project_has(home_paths):
    checked = 0
    _REMOVED.clear()
    for name, line, code in blocks("sh"):
        for argv in commands(code):
            try:
                check_command(argv)
            except SystemExit as exc:  # --help / --version: 0; a refused argument: 2
                assert exc.code in (0, None), f"{name}:{line}: {shlex.join(argv)}: exit {exc.code}"
            except AssertionError as exc:
                raise AssertionError(f"{name}:{line}: {shlex.join(argv)}: {exc}") from None
            checked += 1
    assert checked >= 25, checked
    # the uninstall line removes exactly the folders the app writes to (settings, caches, logs)
    (removed,) = _REMOVED
    settings_dir = str(Path(home_paths["settings"]).parent)
    assert sorted(removed) == sorted([settings_dir, str(Path(home_paths["cache"]).parent),
                                      str(Path(home_paths["log"]).parent)])


def _value(comment: str):
    text = comment.split("# -> ", 1)[1].split(" — ")[0].strip()
    return ast.literal_eval(text)


def test_every_python_block_runs_and_gives_the_values_it_states(qapp, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stated = 0
    for name, line, code in blocks("python"):
        code = code.replace("from k3_explorer import", "from app.api import")  # this checkout, not an install
        tree = ast.parse(code)
        lines = code.splitlines()
        scope: dict = {}
        for node in tree.body:
            source = ast.get_source_segment(code, node)
            where = f"{name}:{line + node.lineno}"
            comment = lines[node.end_lineno - 1]
            if isinstance(node, ast.Expr) and "# -> " in comment:
                got = eval(compile(ast.Expression(node.value), where, "eval"), scope)
                want = _value(comment)
                assert got == want, f"{where}: {source} gives {got!r}, the docs say {want!r}"
                stated += 1
            else:
                exec(compile(ast.Module([node], []), where, "exec"), scope)
    assert stated >= 9, stated


def test_the_places_the_readme_names_are_the_ones_the_app_uses(home_paths):
    readme = (ROOT / "README.md").read_text()
    assert f"`{home_paths['settings']}`" in readme
    assert f"`{Path(home_paths['cache']).parent}/`" in readme
    assert f"`{home_paths['log']}`" in readme
    from app.files.desktop import APP_ID

    assert f"~/.local/share/applications/{APP_ID}.desktop" in readme


def test_the_requirements_are_the_wheels_own():
    from importlib import metadata

    readme = (ROOT / "README.md").read_text()
    tags = [line.split(": ", 1)[1] for line in metadata.distribution("PySide6-Essentials").read_text("WHEEL")
            .splitlines() if line.startswith("Tag: ")]
    glibc = sorted({m.group(1).replace("_", ".") for t in tags if (m := re.search(r"manylinux_(\d+_\d+)", t))})
    assert glibc and f"glibc {glibc[0]} or newer" in readme.replace("\n", " ")
    low = PROJECT["requires-python"].removeprefix(">=")
    high = max(c.split(" :: ")[-1] for c in PROJECT["classifiers"] if re.search(r"Python :: 3\.\d+$", c))
    assert f"Python {low}–{high}" in readme


def test_the_readme_reads_in_five_minutes():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    for section in ("Requirements", "Start", "Python API", "Where things live", "Uninstall", "Troubleshooting",
                    "Licence"):
        assert re.search(rf"^## {section}", readme, re.M), section
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.(?:md|png))(?:#[\w-]+)?\)", readme):
        assert (ROOT / link).is_file(), link
    for path in (ROOT / "docs").glob("*.md"):
        for link in re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]+)?\)", path.read_text()):
            assert (ROOT / "docs" / link).is_file(), (path.name, link)


def test_a_notebook_without_a_display_gets_the_readmes_advice(tmp_path):
    """render() without a display raises DisplayError naming the way the README's troubleshooting gives for a
    notebook (not the command line's export)."""
    readme = (ROOT / "README.md").read_text()
    assert "`xvfb-run -a jupyter lab`" in readme
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "xcb"
    code = ("from app.api import render, DisplayError\n"
            "try:\n    render(size=(64, 64))\nexcept DisplayError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    (line,) = done.stdout.strip().splitlines()
    assert "xvfb-run -a jupyter lab" in line and "k3-explorer export" not in line, line


NOTEBOOK = ROOT / "docs" / "notebook.ipynb"


def _display(value) -> dict[str, object]:
    """What Jupyter's display formatters would show for a cell's value (IPython's rich display protocol: the
    _repr_*_ methods; None = that format is not offered)."""
    shown = {}
    for mime, method in (("text/html", "_repr_html_"), ("image/png", "_repr_png_")):
        fn = getattr(value, method, None)
        got = fn() if callable(fn) else None
        if got is not None:
            shown[mime] = got
    return shown


def test_the_example_notebook_runs_headless_and_every_result_displays_itself(qapp, monkeypatch):
    """docs/notebook.ipynb (nbformat 4) executed cell by cell as a kernel would, under Xvfb: every cell runs, each
    cell that ends in a value shows a picture or a table (no bare text repr), and no output is committed (the
    pictures are made when it runs, so they never go stale)."""
    import json
    from io import BytesIO

    from PIL import Image

    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4 and nb["metadata"]["kernelspec"]["language"] == "python"
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    shown = []
    for i, cell in enumerate(nb["cells"]):
        assert cell["cell_type"] in ("markdown", "code") and isinstance(cell["source"], list), i
        if cell["cell_type"] != "code":
            continue
        assert cell["outputs"] == [] and cell["execution_count"] is None, f"cell {i}: committed output"
        code = "".join(cell["source"]).replace("from k3_explorer import", "from app.api import")
        tree = ast.parse(code)
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(ast.Module(tree.body[:-1] if last else tree.body, []), f"notebook cell {i}", "exec"), scope)
        if last is None:
            continue
        value = eval(compile(ast.Expression(last.value), f"notebook cell {i}", "eval"), scope)
        rich = _display(value)
        assert rich, f"cell {i}: {type(value).__name__} shows only its text repr"
        if "image/png" in rich:
            image = Image.open(BytesIO(rich["image/png"]))
            assert image.width >= 300 and image.height >= 200, (i, image.size)
        shown.append(type(value).__name__)
    assert shown == ["Trace", "Explanation", "Patching", "Patching", "Explanation", "RenderedImage"], shown
    # render()'s picture is the image itself: 960 x 540 as asked, its pixels those of the array
    image = np.asarray(Image.open(BytesIO(value._repr_png_())))
    assert image.shape == (540, 960, 4) and (image == np.asarray(value)).all()


def test_explanations_and_traces_display_without_any_display(tmp_path):
    """In a kernel without DISPLAY (no Xvfb) the tables and charts still come: only render() needs a display."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    code = ("from app.api import explain, run\n"
            "e = explain('아이가 상자를 집었다. 그리고')\n"
            "print(len(e._repr_png_()), e._repr_html_().count('<table'), run('the robot', tokens=1)._repr_html_()"
            ".count('<table'), e.patch()._repr_png_()[:4])\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    size, tables, trace_tables, magic = done.stdout.split(maxsplit=3)
    assert int(size) > 1000 and tables == "1" and trace_tables == "2" and magic.strip() == "b'\\x89PNG'"


def test_every_panel_has_a_picture_in_the_user_guide():
    """Each dock the window makes (app/docks/registry.py) has its screenshot in docs/screenshots/, the user guide
    shows it, and every picture is small (256 colours, under 200 kB)."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from make_screenshots import file_name
    finally:
        sys.path.remove(str(ROOT / "docs"))
    from PIL import Image

    from app.docks.registry import DOCKS

    guide = (ROOT / "docs" / "user-guide.md").read_text()
    linked = set(re.findall(r"\]\((screenshots/[\w.-]+\.png)\)", guide))
    wanted = {f"screenshots/{file_name(entry.cls)}" for entry in DOCKS} | {"screenshots/window.png"}
    assert linked == wanted, (sorted(linked - wanted), sorted(wanted - linked))
    for link in linked:
        path = ROOT / "docs" / link
        assert path.stat().st_size < 200_000, link
        with Image.open(path) as image:
            assert image.mode == "P" and image.width >= 300 and image.height >= 300, (link, image.mode, image.size)


def test_the_screenshot_script_draws_a_panel_from_the_running_app(tmp_path):
    """docs/make_screenshots.py on one panel (the Why-this-word dock) in a child process: it writes the PNG it
    names, the same size as the committed picture, with the dock's own content (not a blank grab)."""
    from PIL import Image

    done = subprocess.run([sys.executable, str(ROOT / "docs" / "make_screenshots.py"), "--docks", "ExplainDock",
                           "--no-window", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = done.stdout.strip().splitlines()
    path = tmp_path / "explain.png"
    assert line.startswith(f"{path} ") and path.is_file()
    with Image.open(path) as image, Image.open(ROOT / "docs" / "screenshots" / "explain.png") as committed:
        assert image.size == committed.size
        rgb = np.asarray(image.convert("RGB")).astype(int)
    assert rgb.std() > 10 and len(np.unique(rgb.reshape(-1, 3), axis=0)) > 20
    # the dock's title bar reads "Why this word" in the app's dark text on the top rows
    assert (rgb[:20].sum(-1) < 200).sum() > 50
