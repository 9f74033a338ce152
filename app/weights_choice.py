"""Which weights the toy engine runs: the Model menu's "Trained weights / Random weights" choice, and the texts
that say which weights produced the numbers on screen.

The choice ("trained" | "random") is remembered in the settings, can be given as `--weights` (GUI and
`export`) and comes with view files. The engine is rebuilt with it in its worker thread
(EngineController.request_weights) and the prompt on screen runs again. What a trace SAYS comes from the
trace itself (`Trace.weights_name`): when the trained file is not installed, "trained" falls back to random
weights, and every caption then says random — the caption never claims more than the numbers are.

Qt-free helpers: `weights_of(trace)`, `answer_caption(trace, tr)`, `status_text(trace, tr)`, `short_name`.
`WeightsActions(window)` adds the menu items and a permanent status-bar label to a MainWindow.
"""
from __future__ import annotations

WEIGHTS = ("trained", "random")
DEFAULT = "trained"


def check(name) -> str:
    """name when it is one of WEIGHTS; ValueError (one line) otherwise."""
    if name not in WEIGHTS:
        raise ValueError(f"weights must be 'trained' or 'random', got {name!r}")
    return name


def weights_of(trace) -> str | None:
    """The weights that produced the trace ("trained" | "random"), None without a trace."""
    if trace is None:
        return None
    name = getattr(trace, "weights_name", "random")
    return name if name in WEIGHTS else "random"


FALLBACKS = ("other_model", "missing", "damaged")  # Trace.weights_fallback values with their own status text


def expected_weights(config_name: str | None, chosen: str) -> str:
    """The weights an engine built now with `chosen` for this model runs, as far as is known before it loads:
    "random" when so chosen or when no trained toy ships for this model (another model); else "trained" (a
    missing or damaged file shows once it is read: the trace says so then)."""
    if chosen != "trained":
        return "random"
    from dataclasses import asdict

    from compute.dims import ToyDims
    from compute.weights import has_trained_toy

    return "trained" if has_trained_toy(config_name, {k: int(v) for k, v in asdict(ToyDims()).items()}) else "random"


def short_name(name: str | None, tr) -> str:
    """'trained weights' / 'random weights' (translated); '' for None."""
    return tr(f"weights.short.{name}") if name in WEIGHTS else ""


def answer_caption(trace, tr) -> str:
    """The line under the streamed answer: which weights produced it, and that a toy model's text is not K3's."""
    name = weights_of(trace)
    return tr(f"weights.answer.{name}") if name else ""


NOTE_PREFIX = "trained weights not used: "  # how compute.engine_weights.choose_weights starts its note
REASON_CHARS = 56  # the status bar's share of a damaged file's reason (the tooltip has all of it): at 1280 px
# the label then leaves room for the status messages (100 characters took 672 of 1280 px)


def fallback_reason(note: str | None, limit: int | None = None) -> str:
    """The WeightsError's reason in a fallback note ('weights file x.npz is not a zip archive (...)'), one
    line, cut to `limit` characters; '' without a note."""
    text = " ".join(str(note or "").split())
    if text.startswith(NOTE_PREFIX):
        text = text[len(NOTE_PREFIX):]
    if limit is not None and len(text) > limit:
        text = text[:limit - 1].rstrip() + "…"
    return text


def status_text(trace, tr, chosen: str | None = None, note: str | None = None) -> str:
    """The status bar's weights label: 'Weights: trained (toy)'; when the choice was trained but the trace
    ran on random weights (no trained file), it says so — for a damaged file with the reason from the engine's
    `weights_note` when it is given."""
    name = weights_of(trace)
    if name is None:
        return ""
    if chosen == "trained" and name == "random":
        why = getattr(trace, "weights_fallback", "")
        reason = fallback_reason(note, REASON_CHARS)
        if why == "damaged" and reason:
            return tr("weights.status.fallback.damaged.why", reason=reason)
        return tr(f"weights.status.fallback.{why}" if why in FALLBACKS else "weights.status.fallback")
    return tr("weights.status", weights=short_name(name, tr))


def engine_note(window) -> str:
    """The running engine's fallback note (compute's `ToyK3.weights_note`: why the trained weights were not
    used), '' when there is none or no engine yet."""
    model = getattr(getattr(getattr(window, "engine", None), "engine", None), "model", None)
    return str(getattr(model, "weights_note", "") or "")


def _tr():
    from app.i18n import tr

    return tr


class WeightsActions:
    """The weights items of the Model menu (actions of the one registry: 'weights_trained', 'weights_random'),
    the status bar's weights label, and the remembered choice. Built by the MainWindow after the Model menu."""

    def __init__(self, window, initial: str | None = None):
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QLabel

        self.window = window
        self.chosen = check(initial) if initial is not None else window.settings.weights()
        reg = window.registry
        self.actions = {name: reg.actions[f"weights_{name}"] for name in WEIGHTS}
        menu = window.models.menu
        menu.addSeparator()
        for name in WEIGHTS:
            menu.addAction(self.actions[name])
        self.label = QLabel()
        self.label.setObjectName("status_weights")
        self.label.setTextFormat(Qt.PlainText)
        self.label.setContentsMargins(8, 0, 8, 0)
        window.statusBar().addPermanentWidget(self.label)
        window.engine.set_weights(self.chosen)  # the first engine is built with them
        window.state.weights = self.chosen
        window.engine.weights_applied.connect(self.applied)
        window.state.trace_changed.connect(lambda _t: self.update())
        window.state.language_changed.connect(lambda _l: self.update())
        self.update()

    def choose(self, name: str) -> None:
        """Switch to `name` ("trained" | "random"): remembered, the engine rebuilt in its thread, the prompt
        on screen re-run (the captions follow the new trace)."""
        name = check(name)
        changed = name != self.chosen
        self.chosen = name
        self.window.state.weights = name
        self.window.settings.set_weights(name)
        self.update()
        engine = self.window.engine
        if not engine.thread.isRunning():  # not started yet: the first engine is built with them
            engine.set_weights(name)
            return
        if changed:
            engine.request_weights(name)

    def applied(self, name: str) -> None:
        """The engine now runs with `name` (also when a view file asked for them): the menu follows."""
        if name in WEIGHTS and name != self.chosen:
            self.chosen = name
            self.window.state.weights = name
            self.window.settings.set_weights(name)
        self.update()

    def update(self) -> None:
        tr = _tr()
        for name, action in self.actions.items():
            action.setChecked(name == self.chosen)
        trace = self.window.state.trace
        fell_back = self.chosen == "trained" and weights_of(trace) == "random"
        note = engine_note(self.window) if fell_back else ""
        self.label.setText(status_text(trace, tr, self.chosen, note))
        from app.widgets.safe_text import plain_tip

        tip = answer_caption(trace, tr)  # names the model (a config's display_name)
        if fell_back and getattr(trace, "weights_fallback", "") in ("missing", "damaged") and note:
            tip = tr("weights.status.why_tip", reason=fallback_reason(note)) + "\n" + tip
        self.label.setToolTip(plain_tip(tip))  # the reason quotes a file name: plain text
        self.label.setVisible(trace is not None)
