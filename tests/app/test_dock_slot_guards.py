"""Every dock slot is guarded ("no exception leaves a Qt slot", per dock).

An AST scan of app/docks: each method connected with `.connect(self.x)` / `.connect(self.child.x)`, each lambda
passed to `.connect`, and each Qt `*Event` / `eventFilter` override must carry app/slot_guard.py's `guarded`
(decorator, or `guarded(lambda ...)`), so an exception in it is one status line and a logged traceback, never a
half-drawn panel (the trace player's own `_guarded`, which also says it on the panel, is accepted). A real window then makes one dock slot raise through a real key
press and checks the status-bar line and that the window goes on."""
from __future__ import annotations

import ast
import collections
import pathlib
import re

from PySide6.QtCore import Qt

DOCKS = pathlib.Path(__file__).resolve().parents[2] / "app" / "docks"
EVENT = re.compile(r"^[a-z][A-Za-z]*Event$|^eventFilter$")
EXCLUDED = ()  # every dock (the Explain dock and the trace player joined once their edits were in)
GUARDS = {"guarded", "_guarded"}  # app.slot_guard.guarded; the trace player's own wrapper around it
# connected callables that are not Python code of ours (nothing of ours can raise in them)
NOT_OURS = {"update", "repaint", "setValue", "setEnabled", "setVisible", "show", "hide", "emit", "stop", "start"}


def _is_guard(node) -> bool:
    f = node.func if isinstance(node, ast.Call) else node
    return (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) in GUARDS


def scan(root: pathlib.Path = DOCKS) -> list[str]:
    """'file:line what' for every unguarded slot / override under root."""
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.py"))
             if not any(x in p.relative_to(root).as_posix() for x in EXCLUDED)}
    methods: dict[str, list[tuple[pathlib.Path, ast.FunctionDef]]] = collections.defaultdict(list)
    signals: set[str] = set()
    for path, tree in trees.items():
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for item in cls.body:
                if isinstance(item, ast.FunctionDef):
                    methods[item.name].append((path, item))
                elif (isinstance(item, ast.Assign) and isinstance(item.value, ast.Call)
                      and getattr(item.value.func, "id", "") == "Signal"):
                    signals.update(t.id for t in item.targets if isinstance(t, ast.Name))
    bad: set[str] = set()

    def where(path, node) -> str:
        return f"{path.relative_to(root).as_posix()}:{node.lineno}"

    for path, tree in trees.items():
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for item in cls.body:
                if (isinstance(item, ast.FunctionDef) and EVENT.match(item.name)
                        and not any(map(_is_guard, item.decorator_list))):
                    bad.add(f"{where(path, item)} override {cls.name}.{item.name}")
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "connect" and call.args):
                continue
            slot = call.args[0]
            if isinstance(slot, ast.Call) and _is_guard(slot):
                continue
            if isinstance(slot, ast.Lambda):
                bad.add(f"{where(path, call)} lambda not wrapped in guarded(): {ast.unparse(slot)[:60]}")
            elif isinstance(slot, ast.Attribute):
                if slot.attr in signals or (slot.attr in NOT_OURS and slot.attr not in methods):
                    continue  # a signal relayed, or a Qt method
                defs = methods.get(slot.attr)
                if not defs:
                    bad.add(f"{where(path, call)} connected to {ast.unparse(slot)}: no such method in app/docks")
                for dpath, fn in defs or ():
                    if not any(map(_is_guard, fn.decorator_list)):
                        bad.add(f"{where(dpath, fn)} {fn.name} (connected at {where(path, call)}) is not @guarded")
            else:
                bad.add(f"{where(path, call)} connected to {ast.unparse(slot)[:60]}: not a guarded callable")
    return sorted(bad)


def test_every_dock_slot_and_event_override_is_guarded():
    problems = scan()
    assert not problems, "unguarded dock slots:\n" + "\n".join(problems)


def test_the_scan_fails_on_an_unguarded_slot(tmp_path):
    (tmp_path / "d.py").write_text(
        "from PySide6.QtCore import Signal\n"
        "from app.slot_guard import guarded\n"
        "class D:\n"
        "    relayed = Signal()\n"
        "    def __init__(self, s):\n"
        "        s.a.connect(self.plain)\n"
        "        s.b.connect(self.ok)\n"
        "        s.c.connect(lambda: self.ok())\n"
        "        s.d.connect(guarded(lambda: self.plain()))\n"
        "        s.e.connect(self.relayed)\n"
        "    def plain(self): pass\n"
        "    @guarded\n"
        "    def ok(self): pass\n"
        "    def paintEvent(self, e): pass\n"
        "    @guarded\n"
        "    def resizeEvent(self, e): pass\n", encoding="utf-8")
    problems = scan(tmp_path)
    assert len(problems) == 3, problems
    assert any("plain" in p and "not @guarded" in p for p in problems)
    assert any("lambda not wrapped" in p for p in problems)
    assert any("override D.paintEvent" in p for p in problems)


def test_a_dock_slot_that_raises_is_one_status_line_and_the_window_goes_on(main_window, qtbot, monkeypatch,
                                                                            slot_errors):
    import app.docks.silicon.bf16 as bf16

    win = main_window
    dock = win.docks["SiliconDock"]
    dock.show()
    dock.raise_()
    dock.show_tab("bf16")
    tab = dock.bf16
    real = bf16.parse_number

    def broken(_text):
        raise RuntimeError("the number parser broke")

    monkeypatch.setattr(bf16, "parse_number", broken)
    tab.input.setFocus()
    tab.input.selectAll()
    qtbot.keyClick(tab.input, Qt.Key_3)  # a real key press: textEdited -> Bf16Tab._typed raises
    qtbot.waitUntil(lambda: "RuntimeError: the number parser broke" in win.statusBar().currentMessage(),
                    timeout=5000)
    message = win.statusBar().currentMessage()
    assert "\n" not in message and "Traceback" not in message
    assert len(slot_errors) == 1 and "Bf16Tab._typed" in slot_errors[0][0]
    slot_errors.clear()
    monkeypatch.setattr(bf16, "parse_number", real)
    tab.input.selectAll()
    qtbot.keyClicks(tab.input, "2.5")  # the same slot works again, and so does the window
    qtbot.waitUntil(lambda: tab.error.text() == "" and "2.5" in tab.input.text(), timeout=5000)
    assert win.isVisible() and not slot_errors
    step = win.state.step
    win.docks["TracePlayerDock"].step_by(1)
    qtbot.waitUntil(lambda: win.state.step == step + 1, timeout=10000)
    win.docks["TracePlayerDock"].step_by(-1)
    qtbot.waitUntil(lambda: win.state.step == step, timeout=10000)
