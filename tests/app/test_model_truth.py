"""Every model tells the truth, for the weights it runs: with each bundled model and a user config with unusual
values open in a real main window — each with the weights it runs by default (its shipped trained toy, random
weights where none ships) and K3 with random weights too — walk every step of the trace player, every tab of every
dock (texts and tooltips) and the inspector for every block kind of a KDA and an MLA layer, in English and Korean,
once (tests/app/text_walk.py), and apply every check to what was read:
- no exception leaves a Qt slot;
- no K3 number shows on another model (896 experts, the 163,840 vocabulary, "real K3"), unless the text itself says
  it is K3's (the seed's K3 demos of the Learn / Experiments docks name K3); per sentence in the per-model texts;
- no text claims trained weights while random ones run, none claims random weights while trained ones run (a text
  naming both kinds claims neither; combo-box items are choices, not claims);
- the steps about parts a model lacks say so; "Gated MLA" only for a model whose MLA has the gate; no "W_qb 0 → …".
The model switch re-frames the camera like a fresh start, keeps whole dock tab titles, and names the model's real
mixers ("MLA" / "Gated MLA").
"""
import json
import os
import re
import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTabBar

from app import i18n
from compute.config import ModelConfig, available_configs
from compute.weights import SHIPPED_TOYS
from scene.labels import _header_lines

from tests.app.test_model_follow import wait_model
from tests.app.test_player import odd_user_config
from tests.app.text_walk import (K3_NAME, NAMES_K3, Reader, k3_sentences, walk_docks, walk_inspector, walk_steps,
                                 weights_claims)


@pytest.fixture(scope="module")
def excepthook():
    """Every exception that reaches sys.excepthook (an exception leaving a Qt slot does) is recorded."""
    caught = []
    old = sys.excepthook

    def hook(kind, value, tb):
        caught.append(f"{kind.__name__}: {value}")
        old(kind, value, tb)

    sys.excepthook = hook
    yield caught
    sys.excepthook = old


def _open(win, qtbot, case, tmp_path_factory) -> ModelConfig:
    if case == "odd-user":  # opened as a user opens a config.json (Model -> Open config…)
        path = tmp_path_factory.mktemp("odd") / "config.json"
        path.write_text(json.dumps(odd_user_config()), encoding="utf-8")
        assert win.models.open_path(str(path))
        cfg = ModelConfig.from_json(path)
    else:
        cfg = ModelConfig.from_json(available_configs()[case])
        win.models.model_actions[case].trigger()
    wait_model(qtbot, win, cfg.name)
    qtbot.waitUntil(lambda: win.scene.trace is not None and win.scene.trace.config_name == cfg.name, timeout=30000)
    return cfg


def _choose(win, qtbot, weights: str) -> None:
    if win.weights.chosen != weights:
        win.weights.choose(weights)
    want = "trained" if weights == "trained" and win.config.name in SHIPPED_TOYS else "random"
    qtbot.waitUntil(lambda: win.state.trace is not None and win.state.trace.weights_name == want
                    and not win.engine.busy, timeout=120000)


def _model_checks(win, qtbot, read: Reader, cfg: ModelConfig) -> None:
    """What a model's texts must say about the parts it has and lacks."""
    gated = cfg.mla_output_gate is not None
    everything = "\n".join(t for _, t in read.seen)
    # the steps about parts the model lacks say so, in the player and in the 3D view
    has_kda, has_attnres = "kda" in cfg.mixer_types, bool(cfg.attn_res_block_size)
    for kind, has in (("kda_state", has_kda), ("attnres", has_attnres)):
        assert (cfg.display_name in read.titles[kind]) == (not has), read.titles[kind]
        assert (cfg.display_name in read.notes[kind]) == (not has), read.notes[kind]
    assert ("AttnRes" in read.titles["final_norm"]) == has_attnres, read.titles["final_norm"]
    assert ("AttnRes" in read.notes["final_norm"]) == has_attnres, read.notes["final_norm"]
    assert ("KDA" in read.notes["decode_cache"]) == has_kda, read.notes["decode_cache"]
    assert ("KDA" in read.titles["decode_cache"]) == has_kda or "(" in read.titles["decode_cache"]
    # the model's real mixers: "Gated MLA" only for a model whose MLA has the gate
    mla_layer = cfg.mixer_types.index("mla") + 1
    win.state.select_layer(mla_layer - 1)
    qtbot.waitUntil(lambda: win.scene.layout.layer == mla_layer - 1, timeout=10000)
    status = win.status.layer_label.text()
    sub = dict(_header_lines(win.scene.overlay_input()))["sub"]
    assert ("Gated MLA" in status) == gated and ("Gated MLA" in sub) == gated, (status, sub)
    if not gated:  # (a text about K3 may name K3's Gated MLA)
        wrong = [t for _, t in read.seen if "Gated MLA" in t and not NAMES_K3.search(t)]
        assert not wrong, wrong[:5]
    # Kimi Linear / the odd config (q_lora_rank null): W_q 2,304 → 6,144, never "W_qb 0 → …"
    if not cfg.q_lora_rank:
        names = [t for p, t in read.seen if p.startswith(("name.", "tooltip.", "step.prefill.scene"))]
        assert not [t for t in names if "W_qb" in t], [t for t in names if "W_qb" in t][:5]
        zero = [(p, t) for p, t in read.seen if re.search(r"(?<![\d,.])0 → ", t)]
        assert not zero, zero[:3]
        assert "W_q" in [t for p, t in read.seen if p == "name.mla.q_b"]
        hq = cfg.num_attention_heads * (cfg.qk_nope_head_dim + cfg.qk_rope_head_dim)
        assert f"{cfg.hidden_size:,} → {hq:,}" in everything
    win.state.select_layer(0)


# (model, weights chosen): every bundled model and a user's config.json (no q_lora_rank, no shared experts, no
# AttnRes, 1 MLA layer) with the default choice "trained", and K3 with random weights; K3 trained last: the shared
# window ends as it began
CASES = [("deepseek-v3", "trained"), ("kimi-k2", "trained"), ("kimi-linear-48b", "trained"), ("odd-user", "trained"),
         ("kimi-k3", "random"), ("kimi-k3", "trained")]


@pytest.mark.parametrize("case, chosen", CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_every_text_of_every_model_is_true(main_window, qtbot, tmp_path_factory, excepthook, case, chosen):
    win = main_window
    qtbot.waitUntil(lambda: win.late_docks_built and "inspectorDock" in win.docks, timeout=60000)
    cfg = _open(win, qtbot, case, tmp_path_factory)
    _choose(win, qtbot, chosen)
    running = win.state.trace.weights_name
    assert running == ("trained" if chosen == "trained" and case in SHIPPED_TOYS else "random")
    try:
        for lang in ("en", "ko"):
            i18n.set_language(lang)
            qtbot.waitUntil(lambda: i18n.language() == lang, timeout=5000)
            read, choices = Reader(cfg), set()
            walk_steps(win, qtbot, read)
            walk_docks(win, read, choices)
            walk_inspector(win, qtbot, read, cfg)
            read.add("status.weights", [win.weights.label.text(), win.weights.label.toolTip()])
            if os.environ.get("K3_DUMP_TEXTS"):
                with open(os.environ["K3_DUMP_TEXTS"], "a", encoding="utf-8") as fh:
                    for place, text in read.seen:
                        fh.write(f"{case}/{chosen}/{lang}\t{place}\t{' '.join(text.split())}\n")
            assert not excepthook, excepthook
            assert read.untrue() == [], "\n".join(f"{p}: {t[:300]}" for p, t in read.untrue())
            k3 = sorted(set(k3_sentences(read.seen, cfg)))
            assert not k3, "\n".join(f"{p}: {t[:300]}" for p, t in k3)
            bad = weights_claims(read.seen, running, choices)
            assert not bad, "\n".join(f"{p}: {t[:300]}" for p, t in bad)
            _model_checks(win, qtbot, read, cfg)
    finally:
        i18n.set_language("en")
        if (win.config.name, win.weights.chosen) != (K3_NAME, "trained"):
            if win.config.name != K3_NAME:
                win.models.model_actions[K3_NAME].trigger()
                wait_model(qtbot, win, K3_NAME)
            _choose(win, qtbot, "trained")


def test_a_model_switch_frames_the_camera_and_keeps_whole_tab_titles(main_window, qtbot, tmp_path_factory):
    """After Model → Kimi K2 the camera is the start-up framing of the new stack (as a fresh start), every dock
    tab title is whole, and the status bar names K2's MLA without a gate; back on K3 the same."""
    from scene import navigation as nav

    win = main_window
    qtbot.waitUntil(lambda: win.late_docks_built, timeout=60000)
    for case in ("kimi-k2", "deepseek-v3", K3_NAME):
        cfg = _open(win, qtbot, case, tmp_path_factory)
        qtbot.waitUntil(lambda: not win.models._reframe, timeout=10000)
        want = nav.preset_camera("reset", win.scene.layout, win.scene.camera.aspect(), win.scene.free_band()).to_dict()
        got = win.scene.camera_state()
        for key, value in want.items():
            if isinstance(value, (int, float)):
                assert got[key] == pytest.approx(value, rel=1e-3, abs=1e-3), (case, key)
        for bar in win.findChildren(QTabBar):
            if bar.parent() is win:
                assert bar.elideMode() == Qt.ElideNone, case
        img = win.grab()
        assert not img.isNull()
        img.save(str(tmp_path_factory.mktemp("shots") / f"switch-{case}.png"))
        mla = cfg.mixer_types.index("mla")
        win.state.select_layer(mla)
        qtbot.waitUntil(lambda: win.scene.layout.layer == mla, timeout=10000)
        name = "Gated MLA" if cfg.mla_output_gate else "MLA"
        assert f"· {name} +" in win.status.layer_label.text(), win.status.layer_label.text()
        assert f"· {name} +" in dict(_header_lines(win.scene.overlay_input()))["sub"]
        win.state.select_layer(0)
