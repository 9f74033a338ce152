"""Knock-out menus outside the Explain dock: right-click a block or a cell of the 3D view, or a
token chip of the trace player, and knock that part out of the explained prediction. The experiment runs in the
Explain dock (its position, its before / after columns; Edit -> Undo restores), which is brought to the front.

`scene_items` says what a picked block / cell can knock out: a layer's mixer or FFN (a stack slab, or any block of
the exploded layer's mixer or FFN column), a routed expert (an expert cell: at its layer, or at every MoE layer),
a token (a cell of a block whose rows are tokens, at or before the explained position), an AttnRes source (an
AttnRes bracket of the stack: block j's stored sum; the embedding; a column of an AttnRes weights block)."""
from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QMenu, QWidget

from app.i18n import tr
from app.slot_guard import guarded
from scene.block_kinds import entry

MODES = ("zero", "mean")


def _q(piece: str) -> str:
    return "'" + piece.replace("\n", "\\n") + "'"


def scene_items(layout, block_id: str, row: int, col: int, pieces, position: int | None) -> list[tuple[str, tuple]]:
    """(what, item) for a picked block (and cell; -1 = none) of `layout`; item as the Explain dock keeps it:
    ("token", p) | ("block", layer, "mixer" | "ffn") | ("expert", layer, id). `pieces`: the trace's pieces;
    `position`: the explained position (tokens after it are left out: they cannot change it)."""
    b = layout.by_id.get(block_id)
    if b is None:
        return []
    dims = layout.dims
    out: list[tuple[str, tuple]] = []
    if b.kind == "moe.experts" and row >= 0 and b.grid is not None:
        e = row * b.grid[1] + col
        if 0 <= e < dims.experts:
            out.append((tr("knockout.what.expert", n=e, layer=b.layer), ("expert", b.layer, e)))
            out.append((tr("knockout.what.expert_all", n=e), ("expert", None, e)))
    n_src = len(range(0, dims.n_layers, dims.block_size)) if dims.block_size else 0  # stored AttnRes candidates
    if b.part == "bracket" and 1 <= b.meta.get("index", 0) < n_src:  # block j's stored sum (the last is the partial)
        j = b.meta["index"]
        out.append((tr("knockout.what.source_block", n=j, first=b.meta["first"], last=b.meta["last"]), ("source", j)))
    if b.kind == "embedding" and n_src:
        out.append((tr("knockout.what.source0"), ("source", 0)))
    kind = entry(b.kind)
    if kind is not None and kind.cols == "candidates" and col >= 0 and n_src:  # a column = an AttnRes candidate
        if col < n_src:
            out.append((tr("knockout.what.source0") if col == 0 else tr("knockout.what.source", n=col),
                        ("source", col)))
    k = entry(b.kind)
    if row >= 0 and k is not None and k.rows_are_tokens and b.layer is not None and b.family != "stack":
        positions = layout.row_positions
        if row < len(positions):
            p = int(positions[row])
            if position is None or p <= position:
                piece = pieces[p] if p < len(pieces) else ""
                out.append((tr("knockout.what.token", position=p, piece=_q(piece)), ("token", p)))
    layer = b.layer if b.part == "slab" or (k is not None and k.station in ("mixer", "ffn")) else 0
    if layer:
        mixer = dims.mixers[layer - 1] if layer - 1 < len(dims.mixers) else "kda"
        ffn = dims.ffns[layer - 1] if layer - 1 < len(dims.ffns) else "moe"
        mixer_item = (tr("knockout.what.mixer", layer=layer, mixer=mixer.upper()), ("block", layer, "mixer"))
        ffn_item = (tr("knockout.what.ffn", layer=layer, ffn="MoE" if ffn == "moe" else tr("explain.part.ffn")),
                    ("block", layer, "ffn"))
        station = "slab" if b.part == "slab" else k.station
        out += [mixer_item, ffn_item] if station != "ffn" else [ffn_item, mixer_item]
    return out


def token_row_position(layout, block_id: str, row: int) -> int | None:
    """The token position of a picked row of a block whose rows are tokens (exploded layer), else None."""
    b = layout.by_id.get(block_id)
    k = entry(b.kind) if b is not None else None
    if row < 0 or k is None or not k.rows_are_tokens or b.family == "stack" or row >= len(layout.row_positions):
        return None
    return int(layout.row_positions[row])


def build_menu(parent: QWidget, items: list[tuple[str, tuple]], knock, title: str = "") -> QMenu:
    """A menu with one action per (item, mode): knock(item, mode) when chosen; a disabled line when empty."""
    menu = QMenu(parent)
    menu.setObjectName("knockout_menu")
    if title:
        menu.addSection(title)
    if not items:
        menu.addAction(tr("knockout.none")).setEnabled(False)
    for what, item in items:
        for mode in MODES:
            act = menu.addAction(tr("knockout.action", what=what, mode=tr(f"explain.mode.{mode}")))
            act.setData((item, mode))
            act.triggered.connect(lambda _c=False, item=item, mode=mode: knock(item, mode))
    return menu


@guarded
def open_for_scene(window, block_id: str, row: int, col: int, global_pos: QPoint) -> QMenu | None:
    """The 3D view's right-click menu (the window's Explain dock runs the experiment)."""
    dock = window.docks.get("ExplainDock")
    trace = window.state.trace
    if dock is None or trace is None:
        return None
    position = dock.explained_position()
    pieces = [p for p, _ in trace.tokens]
    items = scene_items(window.scene.layout, block_id, row, col, pieces, position)
    menu = build_menu(window, items, dock.add_knockout,
                      tr("knockout.scene.title", position=position if position is not None else "—"))
    row_pos = token_row_position(window.scene.layout, block_id, row)
    if row_pos is not None and row_pos < len(pieces):
        add_explain_here(menu, dock, row_pos, pieces[row_pos])
    menu.popup(global_pos)
    return menu


@guarded
def open_for_chip(window, position: int, global_pos: QPoint) -> QMenu | None:
    """A token chip's right-click menu: knock that token out (at or before the explained position)."""
    dock = window.docks.get("ExplainDock")
    trace = window.state.trace
    if dock is None or trace is None or not 0 <= position < len(trace.tokens):
        return None
    at = dock.explained_position()
    piece = trace.tokens[position][0]
    items = [(tr("knockout.what.token", position=position, piece=_q(piece)), ("token", position))]
    menu = build_menu(window, items if at is None or position <= at else [], dock.add_knockout,
                      tr("knockout.scene.title", position=at if at is not None else "—"))
    if at is not None and position > at:
        menu.addAction(tr("knockout.later_token", position=position, at=at)).setEnabled(False)
    add_explain_here(menu, dock, position, piece)
    menu.popup(global_pos)
    return menu


def add_explain_here(menu: QMenu, dock, position: int, piece: str) -> None:
    """'Why the next word after <piece>: explain position p' (the Explain dock's position box), unless it is the
    explained one already."""
    if position == dock.explained_position():
        return
    menu.addSeparator()
    act = menu.addAction(tr("knockout.explain_here", position=position, piece=_q(piece)))
    act.setData(("explain", position))
    act.triggered.connect(lambda _c=False: dock.explain_position(position))


def install(window) -> None:
    """Connect the 3D view's and the trace player's context menus to the knock-out menus."""
    window.scene.context_requested.connect(
        lambda bid, r, c, gp: open_for_scene(window, bid, r, c, gp))
    player = window.docks.get("TracePlayerDock")
    if player is not None:
        player.chip_menu_requested.connect(lambda p, gp: open_for_chip(window, p, gp))
