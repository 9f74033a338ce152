"""Every colour of the dock packages comes from the named roles of app/widgets/paint.py (issue 12.1, 14):
no hex colour or QColor(<numbers>) literal is left anywhere under app/docks/."""
import re
from pathlib import Path

from app.widgets.paint import UI_ROLES, css, css_rgba

DOCKS = Path(__file__).resolve().parents[2] / "app" / "docks"
LITERALS = re.compile(r"#[0-9a-fA-F]{6}\b|QColor\(\s*[0-9]")


def literals_in(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if LITERALS.search(line)]


def test_the_scanner_finds_both_kinds_of_literal():
    sample = 'a.setStyleSheet("color: #6b7380;")\nitem.setForeground(QColor(20, 20, 20))\nok = css("caveat")\n'
    assert [n for n, _ in literals_in(sample)] == [1, 2]


def test_no_colour_literal_in_the_dock_packages():
    files = sorted(DOCKS.rglob("*.py"))
    assert len(files) > 20  # the packages are there
    found = [f"{p.relative_to(DOCKS.parent.parent)}:{n}: {line}"
             for p in files for n, line in literals_in(p.read_text(encoding="utf-8"))]
    assert not found, "colour literals (use a role of app/widgets/paint.py):\n" + "\n".join(found)


def test_the_roles_the_docks_use_exist_and_render_as_css():
    for role in ("error", "note", "caveat", "good", "bad", "phase_a", "phase_b", "table_head", "code_fill"):
        assert role in UI_ROLES
        assert re.fullmatch(r"#[0-9a-f]{6}", css(role))
    assert css("caveat") == "#6b7380"  # the same grey as before the literal went
    assert css_rgba("error", 70) == "rgba(255,112,112,70)"
