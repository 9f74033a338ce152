"""Untrusted text is plain text.

A model config's name / display_name, a view file's fields, the prompt and the error messages quoting them
reach many widgets. Hostile markup in them — `<img src>` at a FIFO (opening it is seen by a watcher process,
and the reader is let go, so a regression fails instead of hanging), `<a href>`, `<style>`, `<b>` — must be
shown as the literal text and never make Qt load anything. The window test goes the app's own paths (File ->
Open model config, the prompt box, File -> Open view, every dock and tab, every step) and then inspects every
widget, item, tooltip and action of the application."""
import json
import os
import tempfile

import pytest
from PySide6.QtGui import QAction
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox

from gui_helpers import flush_layouts, wait_idle
from untrusted_helpers import MARK, FifoTrap, hostile, markup_in, rich_text_leaks, shown_plain

from compute.config import available_configs


@pytest.fixture
def trap():
    folder = tempfile.mkdtemp(prefix=MARK)  # short: the payload fits a config name (200 characters)
    t = FifoTrap(os.path.join(folder, "f"))
    yield t
    t.close()
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)


def _visit_everything(win, qtbot, steps=(0, 1, 3, 7, -1)):
    """Show every dock, every tab (nested ones too), select a block and walk some steps: the texts that follow
    are built (panels refresh when first seen)."""
    from PySide6.QtWidgets import QTabWidget

    for dock in list(win.docks.values()):
        dock.show()
        dock.raise_()
        _painted(dock)
        seen = set()
        for _round in range(3):  # tabs appear inside tabs once these are built
            for tabs in dock.findChildren(QTabWidget):
                if id(tabs) in seen:
                    continue
                seen.add(id(tabs))
                for i in range(tabs.count()):
                    tabs.setCurrentIndex(i)
                    _painted(dock)
    blocks = [b.id for b in win.scene.layout.blocks]
    for block in blocks[:3] + [b for b in blocks if "mla" in b][:1]:
        win.state.select_block(block)
        _painted(win)
    n = len(win.state.player.steps) if hasattr(win.state.player, "steps") else 0
    for s in steps:
        if n:
            win.state.player.seek(s % n)
            _painted(win)


def _painted(widget) -> None:
    """What was posted has run (refreshes deferred to the event loop, layouts) and the widget with everything
    in it is painted now: a rich text would have loaded its resources by then."""
    flush_layouts()
    widget.repaint()


def _shown_literally(win, names):
    """objectName -> whether that widget shows the hostile text as literal text ('<img src=' visible)."""
    from PySide6.QtWidgets import QLabel, QTextEdit

    out = {}
    for w in win.findChildren(QLabel) + win.findChildren(QTextEdit):
        if w.objectName() in names and w.isVisibleTo(win):
            out[w.objectName()] = out.get(w.objectName(), False) or '<img src="' in shown_plain(w)
    return out


def _all_actions(win):
    return win.findChildren(QAction)


def _check(win, trap, where, found):
    from PySide6.QtWidgets import QApplication

    flush_layouts()
    for top in QApplication.topLevelWidgets():  # the window and any message box
        if top.isVisible():
            top.repaint()
    leaks = rich_text_leaks(actions=_all_actions(win))
    found.extend(f"{where}: {leak}" for leak in leaks)
    opened = trap.logged()
    assert opened == 0, f"{where}: a file named in untrusted text was opened ({opened}x); leaks: {leaks}"


def test_hostile_config_prompt_and_views_stay_plain_text(make_window, qtbot, tmp_path, trap):
    win = make_window()
    payload = hostile(trap.path)
    found: list[str] = []

    # a model config named with markup, through File -> Open model config (the Model menu's path)
    raw = json.loads(available_configs()["kimi-k3"].read_text())
    raw["name"] = raw["display_name"] = payload
    cfg_path = tmp_path / "hostile.json"
    cfg_path.write_text(json.dumps(raw))
    assert win.models.open_path(str(cfg_path))
    qtbot.waitUntil(lambda: win.config.name == payload and win.state.trace is not None
                    and win.state.trace.config_name == payload, timeout=240000)
    wait_idle(qtbot, win, timeout=240000)
    _visit_everything(win, qtbot)
    _check(win, trap, "config", found)
    # where the model's name is shown, it reads as the literal text
    literal = _shown_literally(win, {"hier_explain", "bf16_facts", "experts.header", "inspector_values_note",
                                     "stream_weights", "tok_facts"})
    assert literal and all(literal.values()), literal

    # the prompt
    player = win.docks["TracePlayerDock"]
    player.prompt.setText(payload)
    player.run_prompt()
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.text == payload, timeout=240000)
    wait_idle(qtbot, win, timeout=240000)
    _visit_everything(win, qtbot)
    _check(win, trap, "prompt", found)
    literal = _shown_literally(win, {"stream_label"})
    assert literal == {"stream_label": True}, literal

    # view files: every text field hostile (refused ones quote the value in a message box), and 100 kB ones
    from app.files.viewfile import View

    base = View(prompt="The robot", tokens=2).to_dict()
    big = hostile(trap.path, pad=100_000)
    variants = {"language": payload, "model": payload, "weights": payload, "prompt": big, "format": payload,
                "version": payload, "selection": {"block": payload, "cell": None, "expert": None},
                "knobs": {"temperature": payload}, payload: 1, "layer": payload, "camera": {payload: 1},
                "language ": big}
    for i, (key, value) in enumerate(variants.items()):
        doc = dict(base)
        doc[key] = value
        path = tmp_path / f"v{i}.k3view"
        path.write_text(json.dumps(doc), encoding="utf-8")
        win.views.open_path(str(path))
        box = win.views.message_box
        _check(win, trap, f"view {key[:20]!r}", found)
        if box is not None and box.isVisible():
            if MARK in box.text():  # the refused value is quoted: as the literal text
                assert "<img" in shown_plain(box), box.text()[:200]
            box.accept()
    wait_idle(qtbot, win, timeout=240000)
    # a view whose prompt is hostile (and valid) runs it
    doc = dict(base, prompt=payload)
    path = tmp_path / "ok.k3view"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert win.views.open_path(str(path))
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.text == payload, timeout=240000)
    wait_idle(qtbot, win, timeout=240000)
    _visit_everything(win, qtbot, steps=(0, 2))
    _check(win, trap, "view prompt", found)

    # refused configs quote the bad value (the Model menu's message box)
    for key, value in (("n_routed_experts", payload), ("name", big), ("hidden_act", payload),
                       ("display_name", [payload]), ("model_type", big)):
        bad = dict(raw, **{key: value})
        path = tmp_path / f"bad-{key}.json"
        path.write_text(json.dumps(bad))
        if win.models.open_path(str(path)):
            qtbot.waitUntil(lambda: not win.engine.busy, timeout=240000)
            continue
        box = win.models.message_box
        _check(win, trap, f"config {key}", found)
        if MARK in box.text():
            assert "<img" in shown_plain(box), box.text()[:200]
        box.accept()

    # a model without KDA layers (other texts: "has no KDA layers", the hints of inert knobs)
    raw2 = json.loads(available_configs()["deepseek-v3"].read_text())
    raw2["name"] = raw2["display_name"] = payload + " v3"
    path = tmp_path / "hostile-v3.json"
    path.write_text(json.dumps(raw2))
    assert win.models.open_path(str(path))
    qtbot.waitUntil(lambda: win.config.name == payload + " v3" and win.state.trace is not None
                    and win.state.trace.config_name == payload + " v3", timeout=240000)
    wait_idle(qtbot, win, timeout=240000)
    _visit_everything(win, qtbot, steps=(0, 4, -1))
    _check(win, trap, "config without KDA", found)
    assert found == [], "\n".join(found)


# --- the building blocks ---------------------------------------------------------------------------------
def test_the_trap_sees_a_rich_label_open_the_file_and_safe_views_open_nothing(qapp, trap):
    """The FIFO trap works (a plain QLabel given the markup opens the file), and RichTextView, SafeTextBrowser
    and SafeTextDocument — images, CSS backgrounds, linked style sheets, Markdown images — open nothing."""
    from app.widgets.rich_text_view import RichTextView
    from app.widgets.safe_text import SafeTextBrowser, SafeTextDocument

    markup = (f'<img src="{trap.path}"><p style="background-image: url({trap.path})">x</p>'
              f'<link rel="stylesheet" href="{trap.path}"><table background="{trap.path}"><tr><td>y</td></tr></table>')
    view = RichTextView("probe")
    view.resize(300, 200)
    view.show()
    view.setText(markup)
    browser = SafeTextBrowser()
    browser.resize(300, 200)
    browser.show()
    browser.setMarkdown(f"![x]({trap.path}) and <img src=\"{trap.path}\">")
    doc = SafeTextDocument()
    doc.setHtml(markup)
    doc.size()
    _painted(view)
    _painted(browser)
    assert trap.logged() == 0
    label = QLabel(f'<img src="{trap.path}"> a raw label')  # what the app must never do
    label.show()
    _painted(label)
    assert trap.logged() >= 1
    for w in (view, browser, label):
        w.close()
        w.deleteLater()


def test_escaping_helpers_keep_the_text_literal(qapp):
    from app import i18n
    from app.widgets.safe_text import (Html, SafeTextDocument, esc, md_escape, plain_message_box, plain_tip,
                                       rich_tr)

    text = '<img src="/dev/zero"><a href="x">l</a><style>p{color:red}</style> & ![i](/dev/zero) *b* `c` #h'
    assert "<" not in esc(text) and esc(esc(text)) == esc(text)  # escaping twice is once (Html passes)
    key = next(k for k, v in i18n.table().items() if "{model}" in v and "<" not in v)
    shown = rich_tr(key, model=text)
    assert "<img" not in shown and "&lt;img" in shown
    assert rich_tr(key, model=Html("<b>x</b>")).count("<b>x</b>") == 1
    doc = SafeTextDocument()
    doc.setMarkdown(md_escape(text))
    assert doc.toPlainText().strip() == text
    doc.setHtml(f"<p>{esc(text)}</p>")
    assert doc.toPlainText().strip() == text
    tip = plain_tip(text)
    doc.setHtml(tip)
    assert "<img" not in tip and doc.toPlainText() == text
    assert plain_tip("plain path/to/file.k3view") == "plain path/to/file.k3view"
    box = plain_message_box(QMessageBox.Warning, "t", text)
    assert box.textFormat() == Qt.PlainText and box.text() == text
    box.deleteLater()



def test_markdown_escaping_keeps_every_special_character_literal(qapp):
    """md_escape (one str.translate pass) through Qt's own Markdown parser: each special character alone, in runs,
    at a line's start (heading, list, quote marks) and inside words comes back as the very text."""
    from app.widgets.safe_text import SafeTextDocument, md_escape

    specials = "\\`*_{}[]()#+-.!<>|~&"
    cases = [c for c in specials] + [c * 3 for c in specials] + [
        specials, "# not a heading", "- not a list", "1. not a list", "> not a quote", "a*b*c __d__ ~~e~~",
        "[x](y) ![z](/dev/zero) <b>t</b> &amp; `code`", "K3 (2.8T) · 1,024-dim latent, 0.125 * x_t", "레이어 {n} → 37"]
    doc = SafeTextDocument()
    for text in cases:
        doc.setMarkdown(md_escape(text))
        assert doc.toPlainText().strip() == text.strip(), text
        assert md_escape(text).count("\\") >= sum(text.count(c) for c in specials)  # every one escaped

def test_every_message_box_of_the_app_shows_plain_text():
    """Message boxes quote paths, refused values and error messages: none is made by QMessageBox's static
    helpers (their text is AutoText: rich when it looks like markup); each one built directly is set to plain
    text right away (or built by safe_text.plain_message_box)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "app"
    static, unplain = [], []
    for path in sorted(root.rglob("*.py")):
        if path.name == "safe_text.py":
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if re.search(r"QMessageBox\.(warning|critical|information|question)\(", line):
                static.append(f"{path.relative_to(root)}:{i + 1}")
            if re.search(r"\bQMessageBox\(", line) and not any("setTextFormat(Qt.PlainText)" in nxt
                                                             for nxt in lines[i:i + 6]):
                unplain.append(f"{path.relative_to(root)}:{i + 1}")
    assert static == [] and unplain == [], (static, unplain)
