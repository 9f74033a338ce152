"""Texts from the model and the language (issue 40.7): every text of the Explain dock, for each of the four bundled
models in English and Korean, after an explanation and after a language switch — no K3 number (93 layers, 896
experts, 163,840 / 7,168 sizes) on another model, the lens note's layer count and AttnRes wording the loaded model's,
and no string of the other language (a catalogue text of the other language, or Hangul in English beside an English
prompt). The tokenizer experiment names the loaded model's sizes."""
from __future__ import annotations

import re
import time

import pytest
from PySide6.QtWidgets import QAbstractButton, QComboBox, QGroupBox, QLabel, QTableWidget

from app import i18n
from compute.config import ModelConfig, available_configs
from compute.trace import Knobs
from gui_helpers import pump

PROMPT = "the robot picks up the cup. it puts the"


def k3_numbers(cfg) -> re.Pattern:
    """K3's layer count, routed experts, vocabulary and width, less those this model shares (K2 and DeepSeek-V3
    are 7,168 wide too), as whole numbers (with or without thousands commas)."""
    k3 = ModelConfig.from_json(available_configs()["kimi-k3"])
    fields = ("num_hidden_layers", "n_routed_experts", "vocab_size", "hidden_size")
    own = {getattr(cfg, f) for f in fields}
    alts = [alt for f in fields if getattr(k3, f) not in own for alt in (f"{getattr(k3, f):,}", str(getattr(k3, f)))]
    return re.compile(r"(?<![\d,.])(" + "|".join(sorted(set(alts), key=len, reverse=True)) + r")(?![\d,]|\.\d)")

EXPERT_ID = re.compile(r"\b[Ee]xpert (\d+)")


def _without_expert_ids(text: str, n_experts: int) -> str:
    """The text less the expert names whose index this model has (an index, not a size)."""
    return EXPERT_ID.sub(lambda m: "Expert #" if int(m.group(1)) < n_experts else m.group(0), text)


HANGUL = re.compile(r"[\uac00-\ud7a3]")
QUOTED = re.compile(r"'[^'\n]*'|“[^”]*”|‘[^’]*’")


def _texts(root) -> list[str]:
    out = []
    for w in root.findChildren(QLabel):
        out.append(w.text())
    for w in root.findChildren(QAbstractButton):
        out.append(w.text())
    for w in root.findChildren(QGroupBox):
        out.append(w.title())
    for w in root.findChildren(QComboBox):
        out += [w.itemText(i) for i in range(w.count())]
    for t in root.findChildren(QTableWidget):
        for r in range(t.rowCount()):
            for c in range(t.columnCount()):
                if t.item(r, c) is not None:
                    out.append(t.item(r, c).text())
        for c in range(t.columnCount()):
            if t.horizontalHeaderItem(c) is not None:
                out.append(t.horizontalHeaderItem(c).text())
    return [s for s in out if s]


def _catalogue_values(lang: str, prefix: str = "explain.") -> set[str]:
    other = i18n.load_catalogues("ko" if lang == "en" else "en")
    mine = i18n.load_catalogues(lang)
    # the texts of this language that the other language says differently (so seeing one is a missed switch)
    return {v for k, v in mine.items() if k.startswith(prefix) and len(v) >= 12 and "{" not in v
            and other.get(k) != v}


def _wait(dock, timeout_s=120.0):
    end = time.monotonic() + timeout_s
    while dock.result is None or dock.busy:
        assert time.monotonic() < end, "timed out"
        pump(30)


@pytest.mark.parametrize("name", sorted(available_configs()))
def test_every_explain_text_fits_the_model_and_the_language(qtbot, name):
    from app.docks.explain import ExplainDock
    from app.state import AppState
    from compute.engine import ToyK3

    cfg = ModelConfig.from_json(available_configs()[name])
    state = AppState()
    engine = ToyK3(config=cfg, device="cpu")
    state.set_config(cfg)
    dock = ExplainDock(state)
    qtbot.addWidget(dock)
    dock.resize(560, 1500)
    dock.show()
    qtbot.waitExposed(dock)
    try:
        state.set_trace(engine.run(PROMPT, 2, Knobs(temperature=0.0)))
        _wait(dock)
        for lang in ("ko", "en", "ko"):  # a switch each way: every text follows
            state.set_language(lang)
            pump(50)
            texts = _texts(dock)
            joined = "\n".join(texts)
            if name != "kimi-k3":  # an expert's own index ("Expert 93" of Kimi Linear's 256) is not a K3 number
                k3 = k3_numbers(cfg)
                bare = [_without_expert_ids(t, cfg.n_routed_experts) for t in texts]
                assert not k3.search("\n".join(bare)), (lang, [t for t in bare if k3.search(t)][:3])
            note = dock.lens_note.text()
            assert str(cfg.num_hidden_layers) in note
            kind = "attnres" if cfg.attn_res_block_size else "plain"
            assert note == i18n.tr(f"explain.lens.note.{kind}", layers=cfg.num_hidden_layers,
                                   model=cfg.display_name)
            stale = [t for t in texts for v in _catalogue_values("ko" if lang == "en" else "en") if v in t]
            assert stale == [], (lang, stale[:3])
            if lang == "en":
                # the toy's pieces are quoted data (a random model's top piece may be ' 공'): the words around them
                assert [t for t in texts if HANGUL.search(QUOTED.sub("", t))] == []
            else:
                assert HANGUL.search(dock.status.text()), dock.status.text()  # "… ms에 계산했습니다"
    finally:
        i18n.set_language("en")
        dock.close()


def test_the_lens_note_says_the_models_own_depth_and_residuals():
    from app.engine.lens_note import lens_note

    for lang in ("en", "ko"):
        tr = lambda key, **kw: i18n.tr(key, lang=lang, **kw)  # noqa: E731
        k2 = lens_note(ModelConfig.from_json(available_configs()["kimi-k2"]), tr)
        k3 = lens_note(ModelConfig.from_json(available_configs()["kimi-k3"]), tr)
        assert "61" in k2 and "93" not in k2 and "93" in k3
        assert ("without" in k2 and "without" not in k3) if lang == "en" else ("없는" in k2 and "없는" not in k3)


@pytest.mark.parametrize("name", ["deepseek-v3", "kimi-k3"])
def test_the_tokenizer_experiment_names_the_loaded_models_sizes(qtbot, name):
    from app.docks.experiments.tokenizer import TokenizerPanel
    from app.state import AppState

    cfg = ModelConfig.from_json(available_configs()[name])
    state = AppState()
    state.set_config(cfg)
    for lang in ("en", "ko"):
        i18n.set_language(lang)
        try:
            panel = TokenizerPanel(state)
            qtbot.addWidget(panel)
            panel.show()
            panel.recompute()
            texts = "\n".join([panel.note.text(), panel.constructed.text(), panel.detail.text(), panel.facts.text()])
            assert f"{cfg.vocab_size:,} × {cfg.hidden_size:,}" in panel.note.text()
            assert f"{cfg.hidden_size:,}" in panel.detail.text() and cfg.display_name in panel.detail.text()
            if name != "kimi-k3":
                assert not k3_numbers(cfg).search(texts) and "K3" not in panel.note.text()
        finally:
            i18n.set_language("en")


def test_the_other_experiments_say_their_sizes_are_k3s_on_another_model(qtbot):
    from app.docks.experiments.moe import MoePanel

    panel = MoePanel()
    qtbot.addWidget(panel)
    assert not panel.seed_note.isVisibleTo(panel)
    panel.show_model(ModelConfig.from_json(available_configs()["deepseek-v3"]))
    assert panel.seed_note.isVisibleTo(panel) and "DeepSeek-V3" in panel.seed_note.text()
    assert "Kimi K3" in panel.seed_note.text()
    i18n.set_language("ko")
    try:
        panel.retranslate()
        assert "기본 예시" in panel.seed_note.text()
    finally:
        i18n.set_language("en")
    panel.show_model(ModelConfig.from_json(available_configs()["kimi-k3"]))
    assert not panel.seed_note.isVisibleTo(panel)
