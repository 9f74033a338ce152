"""Knock-outs from where the parts are, in the real window with real events:
- right-click a slab of the 3D stack: "Knock out layer ℓ's mixer / FFN (zero | mean ablation)"; the chosen one
  runs in the Explain dock, whose "after" equals compute.explain's own knock-out of the same block; Ctrl+Z
  restores;
- right-click an expert cell: that expert at its layer or at every MoE layer (the view-file form [null, id]);
- right-click a token chip of the trace player: knock that token out; the active list shows every entry and
  Delete removes one;
- a prompt outside the toy language: the player and the 3D header say the answer is not meaningful, and the
  chips of pieces the language never uses are marked."""
from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu

from app import api
from app.window.knockout_menu import scene_items
from compute.language import task
from scene import camera as camlib
from tests.app.gui_helpers import pump, wait_idle


def _until(cond, timeout_s=5.0) -> None:
    """Run the event loop (releasing the GIL) until cond() holds."""
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, "timed out"
        pump(10)


def _menus(root) -> list:
    return [m for m in root.findChildren(QMenu, "knockout_menu") if m.isVisible()]


def _settled(win, timeout_s=120.0):
    dock = win.docks["ExplainDock"]
    end = time.monotonic() + timeout_s
    QApplication.processEvents()  # what was posted (a new trace's refresh) has run: busy says the truth
    while dock.busy or dock.result is None:
        assert time.monotonic() < end, dock.status.text()
        pump(30)
    return dock


def _ready(make_window, qtbot):
    """A real window, idle, its explanation in, no camera move under way: (win, dock, scene)."""
    win = make_window()
    wait_idle(qtbot, win)
    dock = _settled(win)
    qtbot.waitUntil(lambda: win.scene.camera.path is None, timeout=5000)
    return win, dock, win.scene


def _pixel(scene, block_id, cell=None):
    b = scene.layout.by_id[block_id]
    w, h = scene.gl.width(), scene.gl.height()
    if cell is not None:
        centres = b.cell_centers()
        pts = [centres[cell[0] * b.grid[1] + cell[1]]]
    else:
        pts = [(b.lo[0] + f * (b.hi[0] - b.lo[0]), b.lo[1], b.center[2]) for f in (0.5, 0.35, 0.65, 0.2, 0.8)]
    for pt in pts:
        (x, y), = camlib.project(np.asarray(pt, float)[None], scene.cam, w, h)[0]
        hit = scene.pick_at(x, y)
        if hit is not None and hit.block_id == block_id and (cell is None or hit.cell == tuple(cell)):
            return QPoint(int(round(x)), int(round(y)))
    raise AssertionError(f"{block_id} {cell} is not under a sampled pixel")


def _right_click(widget, at: QPoint) -> QMenu:
    """A right-click as the platform delivers it: the press, then the context-menu event at that point."""
    QTest.mousePress(widget, Qt.RightButton, Qt.NoModifier, at)
    QTest.mouseRelease(widget, Qt.RightButton, Qt.NoModifier, at)
    ev = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, at, widget.mapToGlobal(at))
    QApplication.sendEvent(widget, ev)
    _until(lambda: bool(_menus(widget.window())))  # a knock-out menu opened
    return _menus(widget.window())[-1]


def _choose(menu: QMenu, item, mode="zero"):
    act = next(a for a in menu.actions() if a.data() == (item, mode))
    menu.hide()
    act.trigger()


def _prompt_text(trace) -> str:
    return "".join(p for p, _ in trace.tokens[:trace.prompt_len])


def test_a_slab_knocked_out_from_the_3d_view(make_window, qtbot):
    win, dock, scene = _ready(make_window, qtbot)
    layer = 5
    menu = _right_click(scene.gl, _pixel(scene, f"L{layer}/stack.layer"))
    texts = [a.text() for a in menu.actions()]
    assert any(f"layer {layer}'s mixer" in t and "zero ablation" in t for t in texts), texts
    assert any(f"layer {layer}'s FFN" in t and "mean ablation" in t for t in texts), texts
    _choose(menu, ("block", layer, "mixer"))
    assert dock.knockout_panel.items == (("block", layer, "mixer"),)
    qtbot.waitUntil(lambda: not dock.busy and dock.result is not None and dock.result.knockout is not None,
                    timeout=60000)
    ko = dock.result.knockout
    ref = api.explain(_prompt_text(win.state.trace), weights=win.state.trace.weights_name,
                      position=dock.explained_position()).knockout(blocks=[(layer, "mixer")])
    assert ko["word"] == ref.word
    assert abs(ko["logit_after"] - float(ref.logits[ref.index_of(dock.result.word)])) < 1e-3
    assert dock.ko_list.count() == 1 and f"{layer}" in dock.ko_list.item(0).text()
    win.activateWindow()
    qtbot.keyClick(win, Qt.Key_Z, Qt.ControlModifier)
    qtbot.waitUntil(lambda: dock.knockout_panel.items == (), timeout=5000)
    assert not dock.ko_list.isVisible()


def test_an_expert_cell_knocked_out_at_every_layer(make_window, qtbot):
    win, dock, scene = _ready(make_window, qtbot)
    bid = f"L{scene.layout.layer + 1}/moe.experts"
    b = scene.layout.by_id[bid]
    cell = (2, 3)
    e = cell[0] * b.grid[1] + cell[1]
    menu = _right_click(scene.gl, _pixel(scene, bid, cell))
    data = [a.data() for a in menu.actions() if a.data()]
    assert (("expert", b.layer, e), "zero") in data and (("expert", None, e), "mean") in data
    assert (("block", b.layer, "ffn"), "zero") in data  # the experts' block is the FFN's
    _choose(menu, ("expert", None, e), "mean")
    assert dock.knockouts() == {"mode": "mean", "tokens": [], "blocks": [], "experts": [[None, e]]}
    qtbot.waitUntil(lambda: not dock.busy and dock.result.knockout is not None, timeout=60000)
    assert "failed" not in dock.status.text()
    ref = api.explain(_prompt_text(win.state.trace), weights=win.state.trace.weights_name,
                      position=dock.explained_position()).knockout(experts=[e], mode="mean")
    assert dock.result.knockout["word"] == ref.word
    dock.restore_knockout()


def test_a_token_chip_knocked_out_and_removed_from_the_list(make_window, qtbot):
    win = make_window()
    wait_idle(qtbot, win)
    dock = _settled(win)
    player = win.docks["TracePlayerDock"]
    win.state.show_dock("TracePlayerDock", "")
    label = player.tokens_label
    qtbot.waitUntil(lambda: label.isVisible(), timeout=5000)
    at = None
    for y in range(2, label.height(), 3):  # find chip 1's anchor on screen
        for x in range(2, label.width(), 3):
            if label.anchorAt(QPoint(x, y)) == "tok:1":
                at = QPoint(x, y)
                break
        if at is not None:
            break
    assert at is not None
    QApplication.sendEvent(label.viewport(), QContextMenuEvent(QContextMenuEvent.Reason.Mouse, at,
                                                               label.viewport().mapToGlobal(at)))
    _until(lambda: bool(_menus(win)))
    menu = _menus(win)[-1]
    _choose(menu, ("token", 1))
    dock.add_knockout(("block", 3, "ffn"), "zero")  # a second entry (what another menu adds)
    assert dock.knockout_panel.items == (("token", 1), ("block", 3, "ffn"))
    assert dock.ko_list.count() == 2
    dock.ko_list.setCurrentRow(0)
    dock.ko_list.setFocus()
    QTest.keyClick(dock.ko_list, Qt.Key_Delete)
    assert dock.knockout_panel.items == (("block", 3, "ffn"),) and dock.ko_list.count() == 1
    dock.restore_knockout()


def test_outside_the_language_is_said_and_unused_pieces_marked(make_window, qtbot):
    win = make_window()
    wait_idle(qtbot, win)
    player = win.docks["TracePlayerDock"]
    assert win.state.trace.prompt_in_language
    assert not player.outside_note.isVisible() and win.scene.overlay_input().outside_note == ""
    win.state.request_prompt("hello world")
    qtbot.waitUntil(lambda: "hello" in win.state.trace.text, timeout=60000)
    qtbot.waitUntil(lambda: "outside the toy language" in player.outside_note.text().lower(), timeout=5000)
    assert not win.state.trace.prompt_in_language
    assert "outside the toy language" in player.outside_note.text().lower()
    assert player.outside_note.isVisibleTo(player)
    assert "outside the toy language" in win.scene.overlay_input().outside_note.lower()
    used = task.language_pieces()
    unused = [p for p, _ in win.state.trace.tokens[:win.state.trace.prompt_len] if p not in used]
    assert unused  # 'hello' is not a piece of the language
    html_text = player.tokens_label.text()
    assert html_text.count(">?</sup>") >= len(unused)
    win.state.request_prompt("아이가 상자를 집었다. 그리고")
    qtbot.waitUntil(lambda: "상자" in win.state.trace.text, timeout=60000)
    qtbot.waitUntil(lambda: not player.outside_note.isVisibleTo(player), timeout=5000)
    assert not player.outside_note.isVisibleTo(player) and win.scene.overlay_input().outside_note == ""
    assert ">?</sup>" not in player.tokens_label.text()


def test_scene_items_name_the_parts_a_block_can_lose(make_window, qtbot):
    win = make_window()
    wait_idle(qtbot, win)
    lay = win.scene.layout
    L = lay.layer + 1
    pieces = [p for p, _ in win.state.trace.tokens]
    items = [it for _w, it in scene_items(lay, f"L{L}/stack.layer", -1, -1, pieces, 3)]
    assert items == [("block", L, "mixer"), ("block", L, "ffn")]
    assert [it for _w, it in scene_items(lay, "embedding", -1, -1, pieces, 3)] == [("source", 0)]  # AttnRes R_0
    assert scene_items(lay, "lm_head", 0, 0, pieces, 3) == []
    ffn = next(b for b in lay.layer_blocks() if b.kind == "moe.router")
    assert scene_items(lay, ffn.id, -1, -1, pieces, 3)[0][1] == ("block", L, "ffn")
    wall = next(b for b in lay.layer_blocks() if b.kind == "norm.mixer")
    rows = lay.row_positions
    r_late = next(r for r, p in enumerate(rows) if p > 1)
    got = [it for _w, it in scene_items(lay, wall.id, r_late, 0, pieces, 1)]
    assert not any(it[0] == "token" for it in got)  # after the explained position: nothing to change
    got = [it for _w, it in scene_items(lay, wall.id, rows.index(1), 0, pieces, 1)]
    assert ("token", 1) in got and got[-2:] == [("block", L, "mixer"), ("block", L, "ffn")]


def test_a_chip_menu_explains_another_position(make_window, qtbot):
    win = make_window()
    wait_idle(qtbot, win)
    dock = _settled(win)
    at = dock.explained_position()
    from app.window.knockout_menu import open_for_chip

    menu = open_for_chip(win, 1, win.mapToGlobal(QPoint(50, 50)))
    act = next(a for a in menu.actions() if a.data() == ("explain", 1))
    assert "token 1" in act.text()
    menu.hide()
    act.trigger()
    assert dock.explained_position() == 1 and at != 1
    qtbot.waitUntil(lambda: not dock.busy and dock.result is not None and dock.result.position == 1, timeout=60000)
    trace = win.state.trace
    ref = api.explain(_prompt_text(trace), weights=trace.weights_name, position=1)
    assert dock.result.word == ref.word
    qtbot.waitUntil(lambda: win.scene.explanation is not None and win.scene.explanation.position == 1, timeout=5000)
    # the explained position's own chip offers no "explain" line
    menu = open_for_chip(win, 1, win.mapToGlobal(QPoint(50, 50)))
    assert not any(a.data() == ("explain", 1) for a in menu.actions())
    menu.hide()


def test_an_attnres_source_knocked_out_from_its_bracket(make_window, qtbot):
    """Right-click the AttnRes bracket of block 3 in the stack: knock out its stored sum (AttnRes source 3) from
    every later mix; the after equals compute.explain's own knock-out; a view file keeps it."""
    win, dock, scene = _ready(make_window, qtbot)
    lay = scene.layout
    b = lay.by_id["stack.attnres_bracket/3"]
    items = [it for _w, it in scene_items(lay, b.id, -1, -1, [], None)]
    assert items == [("source", 3)]
    assert scene_items(lay, "stack.attnres_bracket/8", -1, -1, [], None) == []  # the running partial
    assert ("source", 0) in [it for _w, it in scene_items(lay, "embedding", -1, -1, [], None)]
    wall = next(x for x in lay.layer_blocks() if x.kind == "attnres.mixer")
    assert ("source", 2) in [it for _w, it in scene_items(lay, wall.id, 0, 2, ["a"] * 99, None)]
    menu = _right_click(scene.gl, _pixel_box(scene, b))
    _choose(menu, ("source", 3))
    qtbot.waitUntil(lambda: not dock.busy and dock.result.knockout is not None, timeout=60000)
    assert "failed" not in dock.status.text()
    ref = api.explain(_prompt_text(win.state.trace), weights=win.state.trace.weights_name,
                      position=dock.explained_position()).knockout(sources=[3])
    assert dock.result.knockout["word"] == ref.word
    assert abs(dock.result.knockout["logit_after"] - float(ref.logits[ref.index_of(dock.result.word)])) < 1e-3
    assert "block 3" in dock.ko_list.item(0).text()
    assert dock.knockouts()["sources"] == [3]
    dock.restore_knockout()


def _pixel_box(scene, b):
    """A pixel on block b's front face where the picker finds it."""
    w, h = scene.gl.width(), scene.gl.height()
    for fz in (0.5, 0.3, 0.7, 0.15, 0.85):
        pt = np.array([b.center[0], b.lo[1], b.lo[2] + fz * (b.hi[2] - b.lo[2])])
        (x, y), = camlib.project(pt[None], scene.cam, w, h)[0]
        hit = scene.pick_at(x, y)
        if hit is not None and hit.block_id == b.id:
            return QPoint(int(round(x)), int(round(y)))
    raise AssertionError(f"{b.id} is not under a sampled pixel")
