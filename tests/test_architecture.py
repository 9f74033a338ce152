"""The layering rules of docs/spec/design.md: compute/ never imports Qt, scene or app; scene/ never imports app.

Checked twice: statically (every import statement in the package, also inside functions) and dynamically
(importing every compute module in a fresh interpreter in which PySide6, pyqtgraph, scene and app cannot be
imported at all).
"""
import ast
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
    modules = sorted(
        "compute." + p.stem for p in (ROOT / "compute").glob("*.py") if p.stem != "__init__"
    )
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


def test_scene_has_one_source_of_model_facts():
    """No second config parser, no copy of the toy dims and no K3 expert count written into scene/."""
    for path in sorted((ROOT / "scene").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "896" not in text, f"{path.name} hard-codes K3's expert count"
        assert "def _g(" not in text and "TOY = " not in text, f"{path.name} parses the config itself"
