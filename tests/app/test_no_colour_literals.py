"""Every colour of the app comes from the named roles of app/widgets/paint.py or the scene's
palette: no hex or rgb() colour, no QColor(<numbers>), QColor("<name>") or QColor(*<table>[...]) is left in
the code of app/ (docks, widgets, window, dialogs, export and animation), only in paint.py's role table.
The scan reads the code (ast), so comments and docstrings may name a colour."""
import ast
import re
from pathlib import Path

from tests.code_scan import docstring_ids

from app.widgets.paint import UI_ROLES, css, css_rgba, qcolor

APP = Path(__file__).resolve().parents[2] / "app"
SCENE = APP.parent / "scene"
TABLE = APP / "widgets" / "paint.py"  # where the roles are defined
SCENE_TABLES = (SCENE / "palette.py", SCENE / "overlay_style.py")  # the scene's roles and the overlay themes
TEXT_COLOUR = re.compile(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b(?![-\w])|rgba?\(\s*\d")


def _docstrings(tree: ast.AST) -> set[int]:
    return docstring_ids(tree)


def _is_qcolor(func: ast.expr) -> bool:
    """QColor(...), QtGui.QColor(...), QColor.fromRgb / fromRgbF / fromHsv … (...)."""
    if isinstance(func, ast.Attribute) and func.attr.startswith("from"):
        func = func.value
    return (isinstance(func, ast.Name) and func.id == "QColor") or \
        (isinstance(func, ast.Attribute) and func.attr == "QColor")


def literals_in(text: str) -> list[tuple[int, str]]:
    """(line, what) of every colour written into the code."""
    tree = ast.parse(text)
    docs = _docstrings(tree)
    lines = text.splitlines()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if TEXT_COLOUR.search(node.value):
                found.append((node.lineno, lines[node.lineno - 1].strip()))
        elif isinstance(node, ast.Call) and _is_qcolor(node.func):
            # a table spread into it, a name or hex string, or a number among the three colour channels (a
            # constant alpha alone is no colour)
            channels = node.args[:3]
            if any(isinstance(arg, ast.Starred) for arg in node.args) or any(
                    isinstance(arg, ast.Constant) and isinstance(arg.value, (int, float, str)) for arg in channels):
                found.append((node.lineno, lines[node.lineno - 1].strip()))
    return sorted(set(found))


def test_the_scanner_finds_every_kind_of_literal():
    sample = ('a.setStyleSheet("color: #6b7380;")\n'
              'item.setForeground(QColor(20, 20, 20))\n'
              'ok = css("caveat")\n'
              'c = QColor(*_LAYER_COLORS[top])\n'
              'd = QColor("#11141a")\n'
              'e = QtGui.QColor.fromRgb(1, 2, 3)\n'
              'f = f"background: rgb(12, 14, 20); color: {css(role)}"\n'
              'g = QColor(name)  # "#123456" in a comment is fine\n'
              'k = QColor.fromRgbF(c[0], c[1], c[2], 0.55)\n'
              'h = f"rgb({c.red()},{c.green()},{c.blue()})"\n'
              'def f():\n    """Draws #ffffff text."""\n')
    assert [n for n, _ in literals_in(sample)] == [1, 2, 4, 5, 6, 7]


def test_no_colour_literal_in_the_app():
    files = [p for p in sorted(APP.rglob("*.py")) if p != TABLE]
    assert len(files) > 60 and any(p.parent.name == "docks" for p in files)  # the whole app is scanned
    found = [f"{p.relative_to(APP.parent)}:{n}: {line}"
             for p in files for n, line in literals_in(p.read_text(encoding="utf-8"))]
    assert not found, "colour literals (use a role of app/widgets/paint.py):\n" + "\n".join(found)


def test_no_colour_literal_in_the_scene():
    """The 3D view's overlay, labels and messages take their colours from scene/palette.py's roles or the
    overlay themes (scene/overlay_style.py), the two tables of the scene."""
    files = [p for p in sorted(SCENE.rglob("*.py")) if p not in SCENE_TABLES]
    assert len(files) > 30 and SCENE / "labels.py" in files
    found = [f"{p.relative_to(SCENE.parent)}:{n}: {line}"
             for p in files for n, line in literals_in(p.read_text(encoding="utf-8"))]
    assert not found, "colour literals (use a role of scene/palette.py):\n" + "\n".join(found)


def test_the_roles_the_docks_use_exist_and_render_as_css():
    for role in ("error", "note", "caveat", "good", "bad", "phase_a", "phase_b", "table_head", "code_fill"):
        assert role in UI_ROLES
        assert re.fullmatch(r"#[0-9a-f]{6}", css(role))
    assert css("caveat") == "#6b7380"  # the same grey as before the literal went
    assert css_rgba("error", 70) == "rgba(255,112,112,70)"
    # the colours that left the code kept their values
    assert [qcolor(f"osi_l{n}").getRgb()[:3] for n in (1, 7)] == [(150, 80, 50), (92, 72, 150)]
    assert (css("answer_bar"), css("status_note_fill"), css("form_error")) == ("#f0a030", "#f5c542", "#e5484d")
