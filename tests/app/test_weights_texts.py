"""Texts true for the weights that run : with a real main window on each bundled model and the
weights that model runs — K3 with its trained weights and with random ones, DeepSeek-V3 / Kimi K2 / Kimi Linear
with the default choice "trained", which runs their own trained toy where one ships (compute.weights.SHIPPED_TOYS)
and random weights where none does — walk every
step of the trace player, every dock tab and the inspector for every block kind, in English and Korean, and
read every visible text and every tooltip of the docks: no text claims trained weights while random ones run,
none claims random weights while the trained ones run, and no K3 number shows on another model.

The walk is test_model_truth's (steps, docks, inspector); this file adds the docks' tooltips and the weights
claims. A text that names both kinds (a comparison, a menu of both, "random: no trained toy for this model")
claims neither; combo-box items are choices, not claims."""
import json
import os
import re

import pytest
from PySide6.QtWidgets import QComboBox, QTabWidget, QWidget

from app import i18n
from compute.config import ModelConfig, available_configs
from compute.weights import SHIPPED_TOYS
from tests.app.test_model_follow import wait_model
from tests.app.test_player import odd_user_config
from tests.app.test_model_truth import Reader, _texts_of, _walk_inspector, _walk_steps, dock_pages

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


def _walk_docks(win, read: Reader, choices: set[str]) -> None:
    """Every tab of every dock: its texts and tooltips (combo items are remembered as choices)."""
    for key, dock in dock_pages(win):
        read.add(key, [dock.windowTitle()] + _texts_of(dock))
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


def _choose(win, qtbot, weights: str) -> None:
    if win.weights.chosen != weights:
        win.weights.choose(weights)
    want = "trained" if weights == "trained" and win.config.name in SHIPPED_TOYS else "random"
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.weights_name == want
                    and not win.engine.busy, timeout=120000)


CASES = [("deepseek-v3", "trained"), ("kimi-k2", "trained"), ("kimi-linear-48b", "trained"),
         ("odd-user", "trained"),  # a user's config.json: no q_lora_rank, no shared experts, no AttnRes, 1 MLA layer
         ("kimi-k3", "random"), ("kimi-k3", "trained")]  # K3 trained last: the shared window ends as it began


@pytest.mark.parametrize("stem, chosen", CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_texts_claim_only_the_weights_that_run(main_window, qtbot, tmp_path, stem, chosen):
    win = main_window
    qtbot.waitUntil(lambda: win.late_docks_built and "inspectorDock" in win.docks, timeout=60000)
    if stem == "odd-user":  # opened as a user opens a config.json (Model -> Open config…)
        path = tmp_path / "config.json"
        path.write_text(json.dumps(odd_user_config()), encoding="utf-8")
        cfg = ModelConfig.from_json(path)
        assert win.models.open_path(str(path))
        wait_model(qtbot, win, cfg.name)
    else:
        cfg = ModelConfig.from_json(available_configs()[stem])
    if win.config.name != cfg.name:
        win.models.model_actions[stem].trigger()
        wait_model(qtbot, win, cfg.name)
    _choose(win, qtbot, chosen)
    running = win.state.trace.weights_name
    assert running == ("trained" if chosen == "trained" and stem in SHIPPED_TOYS else "random")
    try:
        for lang in ("en", "ko"):
            i18n.set_language(lang)
            qtbot.waitUntil(lambda: i18n.language() == lang, timeout=5000)
            read, choices = Reader(cfg), set()
            _walk_steps(win, qtbot, read)
            _walk_docks(win, read, choices)
            _walk_inspector(win, qtbot, read, cfg)
            read.add("status.weights", [win.weights.label.text(), win.weights.label.toolTip()])
            if os.environ.get("K3_DUMP_TEXTS"):
                with open(os.environ["K3_DUMP_TEXTS"], "a", encoding="utf-8") as fh:
                    for place, text in read.seen:
                        fh.write(f"{stem}/{chosen}/{lang}\t{place}\t{' '.join(text.split())}\n")
            bad = weights_claims(read.seen, running, choices)
            assert not bad, "\n".join(f"{p}: {t[:300]}" for p, t in bad)
            assert read.untrue() == [], "\n".join(f"{p}: {t[:300]}" for p, t in read.untrue())
            k3 = sorted(set(k3_sentences(read.seen, cfg)))
            assert not k3, "\n".join(f"{p}: {t[:300]}" for p, t in k3)
    finally:
        i18n.set_language("en")
        if (win.config.name, win.weights.chosen) != ("kimi-k3", "trained"):
            if win.config.name != "kimi-k3":
                win.models.model_actions["kimi-k3"].trigger()
                wait_model(qtbot, win, "kimi-k3")
            _choose(win, qtbot, "trained")


def test_the_claim_check_can_fail():
    seen = [("inspector.x", "Values are from the seeded random weights."), ("a", "Weights: random (no trained toy)"),
            ("b", "학습된 가중치로 돌린 값"), ("c", "trained weights")]
    assert [p for p, _t in weights_claims(seen, "trained", set())] == ["inspector.x"]
    assert [p for p, _t in weights_claims(seen, "random", {"trained weights"})] == ["b"]
    deepseek = ModelConfig.from_json(available_configs()["deepseek-v3"])
    texts = [("inspector.ffn.out", "A transform (MoE with 16 of 896 experts + 2 shared). In K3: 896 experts."),
             ("inspector.embedding", "Everything the 93 layers do starts here."), ("learn.1", "All 896 experts.")]
    assert k3_sentences(texts, deepseek) == [("inspector.ffn.out", "A transform (MoE with 16 of 896 experts + 2 shared)."),
                                             ("inspector.embedding", "Everything the 93 layers do starts here.")]
