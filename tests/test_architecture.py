"""The layering rules of docs/spec/design.md: compute/ never imports Qt, scene or app; scene/ never imports app.

Checked twice: statically (every import statement in the package, also inside functions) and dynamically
(importing every compute module in a fresh interpreter in which PySide6, pyqtgraph, scene and app cannot be
imported at all).
"""
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _violations(package: str, forbidden: set[str]) -> list[str]:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        hit = _imports(path) & forbidden
        if hit:
            bad.append(f"{path.relative_to(ROOT)} imports {sorted(hit)}")
    return bad


def test_compute_imports_no_qt_scene_or_app():
    assert _violations("compute", {"PySide6", "PyQt5", "PyQt6", "pyqtgraph", "OpenGL", "scene", "app"}) == []


def test_scene_never_imports_app():
    assert _violations("scene", {"app"}) == []


def test_compute_modules_import_with_qt_absent():
    modules = sorted(_module_name(p) for p in (ROOT / "compute").rglob("*.py"))  # subpackages too
    assert modules, "compute/ has no modules"
    code = f"""
import importlib, importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'OpenGL', 'scene', 'app'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
for m in {modules!r}:
    importlib.import_module(m)
print('ok', len({modules!r}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


def test_compute_tests_need_no_qt():
    assert _violations("tests/compute", {"PySide6", "pyqtgraph", "OpenGL", "pytestqt", "scene", "app"}) == []


DOCK_MODELS = ("app.docks.experts.model", "app.docks.routing.model", "app.docks.experiments.model",
               "app.docks.learn.model")


def test_dock_model_modules_import_no_qt():
    """The Qt-free read-outs of the dock packages (app/docks/<feature>/model.py) never import Qt, statically
    and in a fresh interpreter where PySide6 / pyqtgraph / OpenGL / scene cannot be imported."""
    bad = []
    for name in DOCK_MODELS:
        path = ROOT / (name.replace(".", "/") + ".py")
        hit = _imports(path) & {"PySide6", "PyQt5", "PyQt6", "pyqtgraph", "OpenGL", "scene"}
        if hit:
            bad.append(f"{path.relative_to(ROOT)} imports {sorted(hit)}")
    assert bad == []
    code = f"""
import importlib, importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'OpenGL', 'scene'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
for m in {DOCK_MODELS!r}:
    importlib.import_module(m)
from app.docks.experts.model import usage_counts
from app.docks.learn.model import QuizSession
assert QuizSession().score == 0 and int(usage_counts(__import__('numpy').array([[1, 2]]), 4).sum()) == 2
print('ok', len({DOCK_MODELS!r}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


def test_each_dock_package_has_its_dock_tabs_and_no_flat_prefix_modules():
    """app/docks/<feature>/ packages (dock in the package, one module per tab) instead of flat prefixed files."""
    docks = ROOT / "app" / "docks"
    for pkg in ("silicon", "experts", "routing", "experiments", "learn"):
        assert (docks / pkg / "__init__.py").is_file() and (docks / pkg / "dock.py").is_file(), pkg
        assert not list(docks.glob(f"{pkg}_*.py")), f"flat {pkg}_*.py modules left in app/docks"


def test_scene_layout_and_navigation_import_without_torch_or_qt():
    """The model facts the scene needs (compute.config, compute.dims), the layout and the camera maths load in a
    fresh interpreter where torch, Qt and OpenGL cannot be imported: one config parser, no engine needed."""
    code = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'PySide6', 'pyqtgraph', 'OpenGL', 'app'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
import compute.dims, scene.layout, scene.camera, scene.navigation
lay = scene.layout.build_layout(None, 36)
assert lay.by_id['L37/moe.experts'].grid[0] * lay.by_id['L37/moe.experts'].grid[1] == lay.dims.experts
assert 'torch' not in sys.modules
print('ok')
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


def _code_constants(tree: ast.AST) -> list[ast.Constant]:
    """The constants of a module's code: docstrings (module, class, function) left out."""
    from tests.code_scan import docstring_ids

    docs = docstring_ids(tree)
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs]


# Model facts still written into code, tolerated until their owner removes them (the file had uncommitted edits)
KNOWN_MODEL_FACTS = {
    ("scene/view.py", 93),  # owned by the lead: SceneView.set_config's layer count before a layout exists
}


def test_app_and_scene_have_one_source_of_model_facts():
    """No module of app/ or scene/ reads a config.json's own field names (a second config parser) or writes
    K3's layer, routed-expert, vocabulary or hidden width into its code (comments and docstrings may name
    them): compute.config is the one source, whatever model is shown."""
    import json

    raw = json.loads((ROOT / "assets" / "configs" / "kimi-k3.json").read_text(encoding="utf-8"))
    keys = {k for k in raw if "_" in k and not k.startswith("_")}  # "num_hidden_layers", "n_routed_experts", …
    facts = {raw[k] for k in ("num_hidden_layers", "n_routed_experts", "vocab_size", "hidden_size")}
    facts.add(raw["k3_explorer"]["default_layer"])  # 37: K3's default layer (compute.model_defaults reads it)
    bad = []
    for package in ("app", "scene"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in _code_constants(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node.value, str) and node.value in keys:
                    bad.append(f"{rel}:{node.lineno} reads the config field {node.value!r} itself")
                elif type(node.value) is int and node.value in facts:
                    if (rel, node.value) not in KNOWN_MODEL_FACTS:
                        bad.append(f"{rel}:{node.lineno} hard-codes K3's {node.value}")
    assert bad == []


def _layer_defaults(tree: ast.AST) -> list[tuple[int, str, int]]:
    """(line, name, value) of every int constant given as a default to, or assigned to, a name with "layer" in it
    (a parameter default, `x.layer0 = ...`, `layer: int = ...`)."""
    out = []

    def name_of(node) -> str:
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            out += [(d.lineno, arg.arg, d.value) for arg, d in pairs
                    if d is not None and isinstance(d, ast.Constant) and type(d.value) is int and "layer" in arg.arg]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [(node.lineno, name_of(tg), node.value.value) for tg in targets
                    if type(node.value.value) is int and "layer" in name_of(tg).lower()]
    return out


def test_default_layer_comes_from_the_config():
    """K3's default layer (37, 0-based 36) is written only in assets/configs (its "k3_explorer" object): no module
    of app/, scene/ or compute/ gives a layer-named parameter or field K3's default, so every other model opens on
    its own (compute.model_defaults)."""
    import json

    raw = json.loads((ROOT / "assets" / "configs" / "kimi-k3.json").read_text(encoding="utf-8"))
    k3 = raw["k3_explorer"]["default_layer"]
    bad = []
    for package in ("app", "scene", "compute"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            bad += [f"{rel}:{line} {name} = {value}" for line, name, value in _layer_defaults(tree)
                    if value in (k3, k3 - 1)]
    assert bad == []


def test_cli_copies_equal_their_sources():
    """The CLI parses without importing numpy or Qt, so it keeps copies of two name lists: they equal the
    lists the scene and the window use."""
    from app import cli, weights_choice
    from scene import camera

    assert cli.CAMERAS == camera.PRESETS
    assert cli.WEIGHTS == weights_choice.WEIGHTS


PACKAGES = ("app", "scene", "compute")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _import_edges(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The modules of app/, scene/, compute/ that `name` imports -> the line of the first such import. Every
    import statement counts (module level, inside a function, under TYPE_CHECKING); `from a import b` counts
    a.b when that is a module, else a. An import of the module's own package (or a package above it) adds
    nothing: Python always initialises those first."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name and not name.startswith(target + "."):
            out.setdefault(target, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            add(base, node.lineno)
            for alias in node.names:
                add(f"{base}.{alias.name}", node.lineno)
    return out


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _cycle_path(graph: dict[str, dict[str, int]], component: list[str], modules: dict[str, Path]) -> str:
    """One import cycle through the component's first module, each step with the file and line of its import."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    todo = [start]
    while todo:  # breadth first: the shortest way back to start
        v = todo.pop(0)
        for w in sorted(graph[v]):
            if w == start:
                cycle = paths[v] + [start]
                return " -> ".join(
                    f"{a} ({modules[a].relative_to(ROOT).as_posix()}:{graph[a][b]})" for a, b in zip(cycle, cycle[1:])
                ) + f" -> {start}"
            if w in members and w not in paths:
                paths[w] = paths[v] + [w]
                todo.append(w)
    return " <-> ".join(component)


# Tolerated while their owners fix them (a fixed one may stay listed until then: the check does not need it).
# (compute.engine <-> compute.fused_nb was one until fused_nb's warm-up built its model without the engine)
KNOWN_CYCLES: set[frozenset[str]] = set()


def test_no_import_cycles():
    """The modules of app/, scene/ and compute/ import each other without a cycle. Every import statement
    counts, also one inside a function or under TYPE_CHECKING: a lazy import only hides a cycle from the load
    order, the two modules still need each other (shared pieces belong in a module of their own)."""
    modules = _modules()
    graph = {name: _import_edges(name, path, modules) for name, path in modules.items()}
    assert len(graph) > 100 and graph["app.api"], "the import graph was not built"
    cycles = _cycles(graph)
    new = [_cycle_path(graph, c, modules) for c in cycles if frozenset(c) not in KNOWN_CYCLES]
    assert new == [], "import cycles:\n" + "\n".join(new)


def test_import_cycle_check_finds_a_lazy_cycle(tmp_path):
    """The check above can fail: two modules importing each other inside functions are one cycle."""
    modules = {"app.a": tmp_path / "a.py", "app.b": tmp_path / "b.py", "app.c": tmp_path / "c.py"}
    modules["app.a"].write_text("def f():\n    from app.b import g\n", encoding="utf-8")
    modules["app.b"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app import a\n",
                                encoding="utf-8")
    modules["app.c"].write_text("import app.a\n", encoding="utf-8")
    graph = {name: _import_edges(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == [["app.a", "app.b"]]


# Top-level functions and classes nothing references, tolerated until their owners delete them
KNOWN_DEAD: set[str] = set()
# Kept although nothing in the tree calls them, with the reason
ALLOWED_UNREFERENCED: dict[str, str] = {}


def _referenced_names() -> set[str]:
    """Every name the code and the tests use: names, attributes, imported names and identifier-like strings
    (getattr, monkeypatch.setattr, Qt's string-named slots), in app/ scene/ compute/ tests/ bench/ .ci/, and
    the functions pyproject.toml's entry points name. A definition itself is not a use."""
    import tomllib

    names: set[str] = set()
    for folder in (*PACKAGES, "tests", "bench", ".ci"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif isinstance(node, ast.Attribute):
                    names.add(node.attr)
                elif isinstance(node, ast.alias):
                    names.add(node.name.rpartition(".")[2])
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                    names.add(node.value)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for group in ("scripts", "gui-scripts"):
        names.update(target.rpartition(":")[2] for target in project.get(group, {}).values())
    return names


def test_no_dead_functions():
    """Every top-level function and class of app/, scene/ and compute/ is referenced by name somewhere (see
    _referenced_names), else it is deleted or listed in ALLOWED_UNREFERENCED with why. A name check: a
    function that shares its name with something used elsewhere passes."""
    used = _referenced_names()
    dead = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    if not node.name.startswith("__") and node.name not in used:  # __getattr__ & co: Python's
                        dead.add(f"{path.relative_to(ROOT).as_posix()}:{node.name}")
    assert sorted(dead - KNOWN_DEAD - set(ALLOWED_UNREFERENCED)) == []
    assert sorted(set(ALLOWED_UNREFERENCED) - dead) == [], "used now: remove from ALLOWED_UNREFERENCED"


def test_no_production_module_over_500_lines():
    """One job per module: no file of app/, scene/ or compute/ grows past 500 lines (split it at its seams)."""
    long = {path.relative_to(ROOT).as_posix(): n for package in PACKAGES
            for path in sorted((ROOT / package).rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}


# The SceneView's parts (issue 42.1): each an object the view owns, reading the view's public names only.
SCENE_VIEW_PARTS = {"scene/view_camera.py": "CameraController", "scene/view_colours.py": "ColourJob",
                    "scene/view_export.py": "SceneExporter", "scene/view_input.py": "ScenePointer",
                    "scene/view_texts.py": "SceneTexts"}
MAX_CLASS_LINES = 450


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def _view_reads(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of every attribute read off the owning view in a part: `self.view.X`, or `v.X` / `view.X`
    where v / view was bound from self.view."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if (isinstance(base, ast.Name) and base.id in ("v", "view")) or (
                isinstance(base, ast.Attribute) and base.attr == "view" and isinstance(base.value, ast.Name)
                and base.value.id == "self"):
            out.append((node.attr, node.lineno))
    return out


def test_scene_view_is_made_of_parts_not_mixins():
    """SceneView is a QWidget that owns its parts (no mixin bases), no class of scene/ with its project bases is
    over MAX_CLASS_LINES, and a part reads no private name of the view (a part that needs something asks for
    a public name): what lets each part be read and tested alone."""
    view = _classes(ROOT / "scene/view.py")["SceneView"]
    assert [ast.unparse(b) for b in view.bases] == ["QWidget"]
    spans = {}
    for path in sorted((ROOT / "scene").rglob("*.py")):
        for name, node in _classes(path).items():
            spans[name] = (node.end_lineno - node.lineno + 1, [ast.unparse(b) for b in node.bases])
    long = {}
    for name, (n, bases) in spans.items():
        total = n + sum(spans[b][0] for b in bases if b in spans)
        if total > MAX_CLASS_LINES:
            long[name] = total
    assert long == {}
    private = []
    for rel, cls in SCENE_VIEW_PARTS.items():
        classes = _classes(ROOT / rel)
        assert cls in classes, f"{rel} has no {cls}"
        private += [f"{rel}:{line} reads view.{name}" for name, line in _view_reads(classes[cls]) if name.startswith("_")]
    assert private == []
    owner_reads = []  # the GL widget and the event adapter reach the view the same way
    for rel, var in (("scene/gl_widget.py", "owner"), ("scene/input.py", "view")):
        text = (ROOT / rel).read_text(encoding="utf-8")
        owner_reads += [f"{rel}: {m}" for m in re.findall(rf"\b(?:{var}|o|v)\._[a-z]\w*", text)]
    assert owner_reads == []


# MainWindow's parts (issue 42.1), the same rule: the window owns them, they read its public names only.
MAIN_WINDOW_PARTS = {"app/window/window_layout.py": "DockLayout", "app/window/late_docks.py": "DockBuilder",
                     "app/window/presentation.py": "Presentation", "app/window/window_status.py": "StatusBar"}


def _window_reads(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of every attribute read off the owning window in a part: `self.window.X`, or `w.X` where
    w was bound from self.window."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if (isinstance(base, ast.Name) and base.id == "w") or (
                isinstance(base, ast.Attribute) and base.attr == "window" and isinstance(base.value, ast.Name)
                and base.value.id == "self"):
            out.append((node.attr, node.lineno))
    return out


def test_main_window_is_made_of_parts_not_mixins():
    """MainWindow is a QMainWindow that owns its parts (no mixin bases), under MAX_CLASS_LINES, and no part
    reads a private name of the window."""
    window = _classes(ROOT / "app/window/main_window.py")["MainWindow"]
    assert [ast.unparse(b) for b in window.bases] == ["QMainWindow"]
    assert window.end_lineno - window.lineno + 1 <= MAX_CLASS_LINES
    private = []
    for rel, cls in MAIN_WINDOW_PARTS.items():
        classes = _classes(ROOT / rel)
        assert cls in classes, f"{rel} has no {cls}"
        node = classes[cls]
        assert node.end_lineno - node.lineno + 1 <= MAX_CLASS_LINES
        private += [f"{rel}:{line} reads window.{name}" for name, line in _window_reads(node) if name.startswith("_")]
    assert private == []


# The Explain dock's parts (issue 42.1): its knock-out panel and attention page; its pages' widgets are built by
# app/docks/explain/pages.py's build_pages (the dock owns them, as Qt Designer's setupUi does).
EXPLAIN_DOCK_PARTS = {"app/docks/explain/knockouts.py": "KnockoutPanel", "app/docks/explain/attention.py": "AttentionPage"}


def _owner_reads(tree: ast.AST, owner: str, short: str) -> list[tuple[str, int]]:
    """(name, line) of every attribute read off an owner in a part: `self.<owner>.X`, or `<short>.X`."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if (isinstance(base, ast.Name) and base.id == short) or (
                isinstance(base, ast.Attribute) and base.attr == owner and isinstance(base.value, ast.Name)
                and base.value.id == "self"):
            out.append((node.attr, node.lineno))
    return out


def test_explain_dock_is_made_of_parts_not_mixins():
    """ExplainDock is a QDockWidget that owns its parts (no mixin bases), under MAX_CLASS_LINES; its parts and
    the page builders read no private name of the dock."""
    dock = _classes(ROOT / "app/docks/explain/dock.py")["ExplainDock"]
    assert [ast.unparse(b) for b in dock.bases] == ["QDockWidget"]
    assert dock.end_lineno - dock.lineno + 1 <= MAX_CLASS_LINES
    private = []
    for rel, cls in EXPLAIN_DOCK_PARTS.items():
        classes = _classes(ROOT / rel)
        assert cls in classes, f"{rel} has no {cls}"
        private += [f"{rel}:{line} reads dock.{name}" for name, line in _owner_reads(classes[cls], "dock", "d")
                    if name.startswith("_")]
    pages = ast.parse((ROOT / "app/docks/explain/pages.py").read_text(encoding="utf-8"))
    private += [f"pages.py:{line} reads dock.{name}" for name, line in _owner_reads(pages, "dock", "dock")
                if name.startswith("_")]
    assert private == []


def _project_classes() -> dict[str, tuple[Path, ast.ClassDef]]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name, node in _classes(path).items():
                out.setdefault(name, (path, node))
    return out


def test_no_long_class_and_no_mixin_reads_a_private_name_of_its_host():
    """Every class of app/, scene/ and compute/, with the project's own classes among its bases, is at most
    MAX_CLASS_LINES long (the 500-line file cap measures length, not coupling); a *Mixin class reads no private
    name (self._x) that it does not define itself: what it needs from its host is public (issue 42.1)."""
    classes = _project_classes()

    def span(node):
        return node.end_lineno - node.lineno + 1

    long, reads = {}, []
    for name, (path, node) in classes.items():
        bases = [ast.unparse(b) for b in node.bases]
        total = span(node) + sum(span(classes[b][1]) for b in bases if b in classes and b != name)
        if total > MAX_CLASS_LINES:
            long[name] = total
        if name.endswith("Mixin"):
            defined = {n.name for n in ast.walk(node) if isinstance(n, ast.FunctionDef)}
            defined |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                        and isinstance(n.value, ast.Name) and n.value.id == "self"}
            defined |= {t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets
                        if isinstance(t, ast.Name)}
            reads += [f"{path.relative_to(ROOT).as_posix()}:{n.lineno} {name} reads self.{n.attr}"
                      for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                      and isinstance(n.value, ast.Name) and n.value.id == "self" and n.attr.startswith("_")
                      and not n.attr.startswith("__") and n.attr not in defined]
    assert long == {}
    assert reads == []


def test_view_part_check_finds_a_private_read():
    """The check above on a part that reads a private name of its view."""
    tree = ast.parse("class P:\n    def f(self):\n        v = self.view\n        return v._refit, self.view._anim\n")
    assert sorted(name for name, _ in _view_reads(tree)) == ["_anim", "_refit"]
    tree = ast.parse("class P:\n    def f(self):\n        w = self.window\n        return w._late, self.window._x, w.docks\n")
    assert sorted(name for name, _ in _window_reads(tree)) == ["_late", "_x", "docks"]
    tree = ast.parse("def f(dock, lay):\n    dock._sources_menu, dock.sources\n")
    assert sorted(name for name, _ in _owner_reads(tree, "dock", "dock")) == ["_sources_menu", "sources"]


def test_one_helper_for_background_jobs():
    """Issue 42.3: app/ starts its background jobs through app.engine.background (named lanes), not through its own
    thread pools, runnables or bare threads. The engine's QThread (app/engine/worker.py, one long-lived thread with a
    queue of its own) is the one other thread the app owns."""
    allowed = {"app/engine/background.py", "app/engine/worker.py"}
    pattern = re.compile(r"\b(QThreadPool|QRunnable|QThread|threading\.Thread)\s*\(")
    bad = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in allowed:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code):
                bad.append(f"{rel}:{n}: {line.strip()}")
    assert not bad, "start background work with app.engine.background.BackgroundJobs:\n" + "\n".join(bad)
    assert pattern.search("x = threading.Thread(target=f)") and pattern.search("QThreadPool(self)")


# The groups (issue 42.2): each package's subpackages and top-level modules in layers, lowest first; a module
# imports only from its own layer or a lower one, so every import runs down. A new module at a package's top,
# or a new subpackage, must be placed here (the test names it).
LAYERS = {
    'compute': [
        ['compute.guards', 'compute.language', 'compute.device', 'compute.notebook_charts'],
        ['compute.config', 'compute.notebook'],
        ['compute.dims', 'compute.model_defaults', 'compute.trace'],
        ['compute.compiled'],
        ['compute.ops'],
        ['compute.weights_layout', 'compute.weights', 'compute.engine_weights', 'compute.engine_io', 'compute.fused_nb'],
        ['compute.engine'],
        ['compute.explain'],
        ['compute.teaching', 'compute.training'],
    ],
    'app': [
        ['app.i18n', 'app.texts', 'app.player', 'app.log'],
        ['app.slot_guard', 'app.player_controller'],
        ['app.state'],
        ['app.files', 'app.engine'],
        ['app.widgets', 'app.weights_choice'],
        ['app.docks'],
        ['app.export'],
        ['app.window'],
        ['app.cli', 'app.api', 'app.cli_main', 'app.__main__'],
    ],
}


def _group(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def test_groups_import_only_downward():
    """Every import of app/ and compute/ goes to the importer's own layer or a lower one (LAYERS), counting every
    import statement as test_no_import_cycles does."""
    modules = _modules()
    rank = {g: (top, i) for top, layers in LAYERS.items() for i, layer in enumerate(layers) for g in layer}
    unplaced = sorted({_group(m) for m in modules if m.split(".")[0] in LAYERS and "." in m} - set(rank))
    assert unplaced == [], f"place these groups in LAYERS: {unplaced}"
    up = []
    for name, path in sorted(modules.items()):
        top = name.split(".")[0]
        if top not in LAYERS or "." not in name:
            continue
        here = rank[_group(name)][1]
        for target, line in sorted(_import_edges(name, path, modules).items()):
            if target.split(".")[0] == top and "." in target and rank[_group(target)][1] > here:
                up.append(f"{path.relative_to(ROOT).as_posix()}:{line} {_group(name)} imports {target} "
                          f"(a higher layer: {_group(target)})")
    assert up == [], "imports running up:\n" + "\n".join(up)


def test_the_layer_check_finds_an_import_running_up(tmp_path):
    """The check above can fail: a low group importing a high one is an upward import."""
    low, high = tmp_path / "low.py", tmp_path / "high.py"
    low.write_text("def f():\n    from compute.engine import ToyK3\n", encoding="utf-8")
    high.write_text("from compute.ops import kda\n", encoding="utf-8")
    modules = {"compute.ops.kda": low, "compute.engine": high}
    rank = {g: i for i, layer in enumerate(LAYERS["compute"]) for g in layer}
    edges = _import_edges("compute.ops.kda", low, modules)
    assert [t for t in edges if rank[_group(t)] > rank["compute.ops"]] == ["compute.engine"]
    assert all(rank[_group(t)] <= rank["compute.engine"] for t in _import_edges("compute.engine", high, modules))
