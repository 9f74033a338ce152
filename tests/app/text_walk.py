"""One walk over every text a person can read in a real main window (tests/app/test_model_truth.py): every step of
the trace player, every tab of every dock (texts and tooltips) and the inspector for every block kind of a KDA and
an MLA layer; and the checks applied to what it read: K3 numbers shown on another model (Reader.untrue,
k3_sentences) and texts that claim weights that are not the ones running (weights_claims)."""
import re

from PySide6.QtWidgets import (QAbstractButton, QComboBox, QDockWidget, QGroupBox, QLabel, QListWidget, QTabBar,
                               QTableWidget, QTabWidget, QTextEdit, QWidget)

from compute.config import ModelConfig
from scene.labels import _legend_layout, header_title, place_labels
from scene.tooltips import tooltip_text

from tests.app.gui_helpers import flush_layouts

K3_NAME = "kimi-k3"
K3_EXPERTS, K3_VOCAB = "896", "163,840"
NAMES_K3 = re.compile(r"K3")


def texts_of(widget: QWidget) -> list[str]:
    """The texts a person can read in `widget` and its visible children (labels, text views, buttons, group
    titles, tab titles, list rows, table cells and headers, combo items)."""
    out = []
    for w in [widget] + widget.findChildren(QWidget):
        if not w.isVisibleTo(widget) and w is not widget:
            continue
        if isinstance(w, QLabel):
            out.append(w.text())
        elif isinstance(w, QTextEdit):
            out.append(w.toPlainText())
        elif isinstance(w, QAbstractButton):
            out.append(w.text())
        elif isinstance(w, QGroupBox):
            out.append(w.title())
        elif isinstance(w, QTabBar):
            out += [w.tabText(i) for i in range(w.count())]
        elif isinstance(w, QListWidget):
            out += [w.item(i).text() for i in range(w.count())]
        elif isinstance(w, QComboBox):
            out += [w.itemText(i) for i in range(w.count())]
        elif isinstance(w, QTableWidget):
            for c in range(w.columnCount()):
                h = w.horizontalHeaderItem(c)
                out.append(h.text() if h is not None else "")
            for r in range(min(w.rowCount(), 40)):
                for c in range(w.columnCount()):
                    it = w.item(r, c)
                    out.append(it.text() if it is not None else "")
    return [t for t in out if t]


class Reader:
    """Collects (place, text) pairs and the K3 numbers found on another model."""

    def __init__(self, cfg: ModelConfig):
        self.cfg = cfg
        self.seen: list[tuple[str, str]] = []
        self.notes: dict[str, str] = {}  # the 3D view's note per step kind
        self.titles: dict[str, str] = {}  # the trace player's title per step kind

    def add(self, place: str, texts) -> None:
        for t in ([texts] if isinstance(texts, str) else texts):
            self.seen.append((place, t))

    def untrue(self) -> list[tuple[str, str]]:
        """Texts that show a K3 number on another model without saying it is K3's."""
        cfg = self.cfg
        if cfg.name == K3_NAME:
            return []
        bad = []
        forbidden = []
        if cfg.n_routed_experts != 896:
            forbidden.append(re.compile(r"(?<![\d,.])896(?![\d,])"))  # not the digits of "+4.896"
        if cfg.vocab_size != 163840:
            forbidden.append(re.compile(re.escape(K3_VOCAB)))
        # a page of the Learn / Experiments docks that names K3 is one of the seed's K3 demos (its quiz answers
        # "All 896" belong to the question "In K3, ..."); elsewhere the text itself must say it is K3's
        demo_pages = {place for place, text in self.seen
                      if place.startswith(("learn", "experiments")) and NAMES_K3.search(text)}
        # the Compare dock shows the two models it was asked for (Kimi K3 by default), named in its own pickers,
        # whatever model the window runs
        demo_pages |= {place for place, _text in self.seen if place.lower().startswith("compare")}
        for place, text in self.seen:
            # a "real K3: [2, 896]" size label, or a block text's "Real K3 size:" paragraph, on another model
            if re.search(r"real K3:|실제 K3:|Real K3 size|실제 K3 크기", text):
                bad.append((place, text))
            elif any(p.search(text) for p in forbidden) and not NAMES_K3.search(text) and place not in demo_pages:
                bad.append((place, text))
        return bad


def walk_steps(win, qtbot, read: Reader) -> None:
    dock = win.docks["TracePlayerDock"]
    steps = win.state.player.steps
    assert steps
    for step in steps:
        win.state.player.seek(step.index)
        qtbot.waitUntil(lambda: win.state.player.index == step.index, timeout=5000)
        assert not dock.message.isVisible(), dock.message.text()  # no slot failed on this step
        place = f"step.{step.kind}"
        read.add(place, [dock.title.text(), dock.facts.toPlainText(), dock.explain.toPlainText(), dock.counter.text(),
                         win.status.layer_label.text(), win.status.step_label.text()])
        inp = win.scene.overlay_input()
        read.add(place + ".scene", [lb.name + " " + lb.shape for lb in place_labels(inp, 1800, 1100).labels])
        read.add(place + ".scene", _legend_layout(inp, 1800, 1100, 1.0)["notes"] + [header_title(inp), inp.step_note])
        read.notes[step.kind] = inp.step_note
        read.titles[step.kind] = dock.title.text()
    read.add("player", texts_of(dock))
    win.state.player.seek(0)


def dock_pages(win):
    """Show every tab of every dock in turn: yields (key "<dock>.<tab>", dock) once the page is laid out (the
    deferred panels refresh once seen: what that posted has run)."""
    for name, dock in list(win.docks.items()):
        if not isinstance(dock, QDockWidget):
            continue
        dock.show()
        dock.raise_()
        tabs = dock.widget() if isinstance(dock.widget(), QTabWidget) else None
        for i in (range(tabs.count()) if tabs is not None else [None]):
            if tabs is not None:
                tabs.setCurrentIndex(i)
            flush_layouts()
            yield f"{name.lower().replace('dock', '')}.{i}", dock


def walk_inspector(win, qtbot, read: Reader, cfg: ModelConfig) -> None:
    inspector = win.docks["inspectorDock"]
    layers = {cfg.mixer_types.index(m) for m in ("kda", "mla") if m in cfg.mixer_types}
    layers.add(len(cfg.mixer_types) - 1)
    kinds_seen = set()
    for layer0 in sorted(layers):
        win.state.select_layer(layer0)
        qtbot.waitUntil(lambda: win.scene.layout.layer == layer0, timeout=10000)
        for b in win.scene.layout.blocks:
            if (b.part == "slab" and b.layer != layer0 + 1) or b.part == "backdrop":  # (decoration: not pickable)
                continue
            win.state.select_block(b.id)
            qtbot.waitUntil(lambda: inspector.block_id == b.id, timeout=5000)
            kinds_seen.add(b.kind)
            texts = [inspector.name_label.text(), inspector.meta_label.text(), inspector.what.toPlainText(),
                     inspector.formula_label.text(), inspector.values_note.text()]
            read.add(f"inspector.{b.kind}", texts)
            read.add(f"name.{b.kind}", inspector.name_label.text())
            read.add(f"tooltip.{b.kind}", tooltip_text(win.scene.layout, b.id, None, win.state.trace, 0, 0,
                                                       win.scene.tr))
            assert not re.search(r"\{[a-z_]+\}", "".join(texts)), (b.id, texts)  # no unfilled placeholder
            _check_axes(inspector, b, win.state.trace)
    win.state.select_block("")
    assert {"embedding", "lm_head", "stack.layer"} <= kinds_seen


def _check_axes(inspector, b, trace) -> None:
    """The values table's row and column labels match the tensor: the note names the block-kind table's axes of
    this kind (rows = heads × query tokens for MLA scores, head × d_k for the KDA state, ...), the table is that
    tensor flattened to [-1, last] (clipped), and its rows read token positions of the pass only when the rows
    are tokens (or cache positions), plain indices otherwise."""
    import numpy as np

    from app.i18n import tr
    from scene import block_kinds

    table = inspector.table
    if table.rowCount() == 0 or b.part in ("weight", "slab", "marker") or b.kind == "stack.layer":
        return
    kind = "moe.shared" if b.part == "shared_experts" else b.kind
    e = block_kinds.entry(kind)
    assert e is not None, kind  # every block the inspector shows has a table entry
    note = inspector.values_note.text()
    assert tr(f"block_axis.{e.rows}") in note and tr(f"block_axis.{e.cols}") in note, (b.id, note)
    ps = trace.passes[min(inspector.state.pass_index, len(trace.passes) - 1)]
    vals, _ = inspector._values(b.layer, b.kind, b.part)
    v = np.asarray(vals)
    flat = v[None] if v.ndim == 1 else v.reshape(-1, v.shape[-1])
    assert (table.rowCount(), table.columnCount()) == (min(flat.shape[0], 8), min(flat.shape[1], 12)), b.id
    rows = [table.verticalHeaderItem(i).text() for i in range(table.rowCount())]
    if e.rows == "tokens":
        assert flat.shape[0] == len(ps.positions), (b.id, v.shape)
        want = [str(int(p)) for p in ps.positions]
    elif e.rows == "cache":
        want = [str(i) for i in range(len(rows))]
    else:
        assert rows == [str(i) for i in range(len(rows))], (b.id, rows)  # heads / head × d_k: no token names
        return
    assert [r.split(" ")[0] for r in rows] == want[:len(rows)], (b.id, rows, want)


TRAINED = re.compile(r"\btrained (weights|toy)\b|\btrained bias [+-]\d|학습된 bias [+-]\d|\bWeights: trained\b|학습된 가중치|학습한 가중치|학습된 토이",
                     re.IGNORECASE)
RANDOM = re.compile(r"\b(seeded )?random (weights|model|toy|ones)\b|\bseeded random\b|\bWeights: random\b|"
                    r"무작위 가중치|무작위 모델|가중치: 무작위|시드.{0,6}무작위", re.IGNORECASE)


def _tips_of(widget: QWidget) -> list[str]:
    """The tooltips of `widget` and its visible children, and of its tab bars' tabs."""
    out = []
    for w in [widget] + widget.findChildren(QWidget):
        if w is not widget and not w.isVisibleTo(widget):
            continue
        if w.toolTip():
            out.append(w.toolTip())
        if isinstance(w, QTabWidget):
            out += [w.tabToolTip(i) for i in range(w.count()) if w.tabToolTip(i)]
    return out


def _combo_items(widget: QWidget) -> set[str]:
    return {c.itemText(i) for c in widget.findChildren(QComboBox) for i in range(c.count())}


def walk_docks(win, read: Reader, choices: set[str]) -> None:
    """Every tab of every dock: its texts and tooltips (combo items are remembered as choices)."""
    for key, dock in dock_pages(win):
        read.add(key, [dock.windowTitle()] + texts_of(dock))
        read.add(key + ".tip", _tips_of(dock))
        choices |= _combo_items(dock)


def _offers() -> set[str]:
    """Texts that offer the other weights (a check box "Side by side with trained weights"): choices too."""
    from app.i18n import tr

    return {tr("explain.side.box", other=tr(f"explain.weights.{w}")) for w in ("trained", "random")}


def weights_claims(seen, running: str, choices: set[str]) -> list[tuple[str, str]]:
    """(place, text) pairs that claim the weights that are NOT running."""
    wrong, right = (RANDOM, TRAINED) if running == "trained" else (TRAINED, RANDOM)
    bad = []
    choices = choices | _offers()
    for place, text in seen:
        if text in choices:  # a combo item or a check box: one of the choices offered, not a claim
            continue
        plain = re.sub(r"<[^>]+>", " ", text)
        if wrong.search(plain) and not right.search(plain):
            bad.append((place, plain))
    return bad


def k3_sentences(seen, cfg: ModelConfig) -> list[tuple[str, str]]:
    """Sentences of the per-model texts (trace player steps, inspector, block names and tooltips) that show one
    of K3's numbers this model does not share without saying, in that sentence, that it is K3's (Reader.untrue
    excuses a whole text naming K3 somewhere; a sentence is the stricter unit)."""
    if cfg.name == "kimi-k3":
        return []
    forbid = []
    if cfg.n_routed_experts != 896:
        forbid.append(r"(?<![\d,.+-])896(?![\d,])")
    if cfg.vocab_size != 163840:
        forbid.append(r"163,840")
    if cfg.num_hidden_layers != 93:
        forbid.append(r"(?<![\d,.])93(?![\d,.])\s*(layers|개 층|층)")
    if cfg.num_experts_per_tok != 16:
        forbid.append(r"[Tt]op-16\b|\b16 of [\d,]+ experts|개 중 16개")
    if cfg.num_attention_heads != 96:
        forbid.append(r"\b96 heads|96개 헤드")
    bad = []
    for place, text in seen:
        if not place.startswith(("step.", "inspector.", "name.", "tooltip.")):
            continue
        plain = re.sub(r"<[^>]+>", " ", text)
        for sentence in re.split(r"(?<=[.;!?。])\s+|\n", plain):
            if "K3" not in sentence and any(re.search(f, sentence) for f in forbid):
                bad.append((place, sentence))
    return bad


