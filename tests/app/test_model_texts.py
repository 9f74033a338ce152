"""No K3 number in texts shown for another model: after a switch through the Model menu of a real
main window, the texts a person sees about the shown model — the scene's placed labels, legend and step note,
the experts and shared-experts hover texts, the inspector's explanation and formula for the MoE blocks, the
controls' α hint, the LM-head step text, the routing dock's MoE card, the silicon hierarchy's cache and vocabulary
explanations — name that model's numbers and none of K3's that differ, in English and Korean."""
import re

import pytest

from app import i18n, player
from compute.config import ModelConfig, available_configs
from scene.labels import _legend_layout, place_labels
from scene.tooltips import tooltip_text

from tests.app.test_model_follow import wait_model

K3 = dict(experts=896, layers=93, kda=69, hidden=7168, latent=3584, vocab=163840)


def shown_texts(win, qtbot, moe_layer: int) -> dict[str, str]:
    """What the user sees, by place, for the current model, language and the MoE layer `moe_layer` (1-based)."""
    view = win.scene
    trace = win.state.trace
    steps = player.build_steps(trace)
    win.state.player.seek(next(s for s in steps if s.kind == "moe").index)
    qtbot.waitUntil(lambda: view.step_kind == "moe", timeout=5000)
    # the camera flies to the MoE blocks (from the start-up framing a model switch gives): labels once it is there
    qtbot.waitUntil(lambda: view.camera.path is None, timeout=5000)
    inp = view.overlay_input()
    placed = place_labels(inp, 1800, 1100)
    labels = " | ".join(f"{lb.name} {lb.shape}" for lb in placed.labels)
    legend = " ".join(_legend_layout(inp, 1800, 1100, 1.0)["notes"])
    tip = tooltip_text(view.layout, f"L{moe_layer}/moe.experts", None, trace, 0, 0, view.tr)
    inspector = win.docks["inspectorDock"]
    shared_tip = tooltip_text(view.layout, f"L{moe_layer}/moe.shared/E", None, trace, 0, 0, view.tr)
    out = dict(labels=labels, legend=legend, step=inp.step_note, tip=tip, shared_tip=shared_tip)
    for kind in ("moe.experts", "moe.router", "moe.shared"):
        win.state.select_block(f"L{moe_layer}/{kind}")
        qtbot.waitUntil(lambda: inspector.block_id == f"L{moe_layer}/{kind}", timeout=5000)
        out[f"inspector.{kind}"] = inspector.what.toPlainText() + "\n" + inspector.formula_label.text()
        out[f"inspector.{kind}.meta"] = inspector.meta_label.text()
    out["alpha"] = win.docks["ControlsDock"].rows["alpha"].hint.text()
    hier = win.docks["SiliconDock"].hier
    for item in ("mla_cache", "kda_state", "token_ids"):
        hier.select_item(item)
        out[f"hier.{item}"] = hier.explain.text()
    explain = win.docks["TracePlayerDock"].explain
    win.state.player.seek(next(s for s in steps if s.kind == "lm_head").index)
    vocab = f"{win.config.vocab_size:,}"
    qtbot.waitUntil(lambda: f"[{vocab}]" in explain.toMarkdown(), timeout=5000)  # the step text's logits shape
    out["lm_head"] = explain.toMarkdown()
    card = win.docks["RoutingDock"].meanings_tab.cards["moe"]
    assert not card.diagram.grab().isNull()  # the expert grid draws the model's experts
    out["routing"] = card.facts.text() + "\n" + card.diagram.selection()[1]
    win.state.player.seek(0)
    return out


@pytest.fixture
def k3_after(main_window, qtbot):
    win = main_window
    qtbot.waitUntil(lambda: all(d in win.docks for d in ("inspectorDock", "ControlsDock", "SiliconDock", "RoutingDock",
                                                    "TracePlayerDock")),
                    timeout=60000)
    yield win
    i18n.set_language("en")
    if win.config.name != "kimi-k3":  # leave the shared window on K3
        win.models.model_actions["kimi-k3"].trigger()
        wait_model(qtbot, win, "kimi-k3")


@pytest.mark.parametrize("stem", ["deepseek-v3", "kimi-k2", "kimi-linear-48b", "kimi-k3"])
def test_texts_name_the_opened_models_numbers(k3_after, qtbot, stem):
    win = k3_after
    cfg = ModelConfig.from_json(available_configs()[stem])
    win.models.model_actions[stem].trigger()
    wait_model(qtbot, win, cfg.name)
    n, k, L, shared = cfg.n_routed_experts, cfg.num_experts_per_tok, cfg.num_hidden_layers, cfg.n_shared_experts
    kda = sum(1 for m in cfg.mixer_types if m == "kda")
    hidden, latent = cfg.hidden_size, cfg.moe_latent_size or cfg.hidden_size
    layer0 = next(i for i, f in enumerate(cfg.ffn_types) if f == "moe")
    win.state.select_layer(layer0)
    qtbot.waitUntil(lambda: win.scene.layout.layer == layer0, timeout=10000)
    alpha = win.docks["ControlsDock"].rows["alpha"]
    for lang in ("en", "ko"):
        i18n.set_language(lang)
        qtbot.waitUntil(lambda: i18n.language() == lang, timeout=5000)
        t = shown_texts(win, qtbot, layer0 + 1)
        everything = "\n".join(t.values())
        # this model's numbers, where the user reads them
        assert f"{n:,} · top-{k}" in t["labels"] and f"{n:,} · top-{k}" in t["tip"]
        assert f"{cfg.display_name} " in t["tip"] and (stem == "kimi-k3" or "K3" not in t["tip"])  # said so
        assert f"{cfg.vocab_size:,} × {hidden:,}" in t["legend"] and cfg.display_name in t["legend"]
        assert (f"{k} of {n:,} experts" if lang == "en" else f"{n:,}개 중 {k}개") in t["step"]
        assert (f"{n:,} routed experts" if lang == "en" else f"{n:,}개 라우팅 Expert") in t["inspector.moe.experts"]
        assert f"{k}" in t["inspector.moe.experts"] and cfg.display_name in t["inspector.moe.experts"]
        assert cfg.display_name in t["inspector.moe.experts.meta"] and f"{n:,} · top-{k}" in t["inspector.moe.experts.meta"]
        assert f"topk(s + b, {k})" in t["inspector.moe.router"] and f"{hidden:,} → {n:,}" in t["inspector.moe.router"]
        assert f"Shared Expert {shared}" in t["inspector.moe.shared"] or f"{shared} shared" in t["inspector.moe.shared"]
        if kda:
            assert f"{kda} KDA" in t["alpha"] or f"{kda}개 KDA" in t["alpha"]
            assert alpha.slider.isEnabled()
        else:  # α and β do nothing without KDA layers: the hint says so and the sliders are off
            assert "KDA" in t["alpha"] and cfg.display_name in t["alpha"] and not alpha.slider.isEnabled()
            assert not win.docks["ControlsDock"].rows["beta"].slider.isEnabled()
        assert f"{shared} × {cfg.moe_intermediate_size:,}" in t["shared_tip"]
        if shared != 2:  # K3 has 2 shared experts
            assert not re.search(r"(2 shared|Shared Expert 2)", everything), t
        assert (f"{k} of {n:,} expert MLPs" if lang == "en" else f"{n:,}개 중 어느 {k}개") in t["routing"]
        assert f"top-{k} of s + b" in t["routing"] or f"Top-{k}" in t["routing"]
        mla = L - kda
        assert (f"× {mla} MLA layers" if lang == "en" else f"MLA {mla}층") in t["hier.mla_cache"]
        assert f"{cfg.vocab_size:,}" in t["hier.token_ids"] and cfg.display_name in t["hier.token_ids"]
        if kda:
            assert (f"for {kda} layers" if lang == "en" else f"{kda}층에") in t["hier.kda_state"]
            assert f"{cfg.kda_num_heads} × {cfg.kda_head_dim} × {cfg.kda_head_dim}" in t["hier.kda_state"]
        else:
            assert cfg.display_name in t["hier.kda_state"] and "MiB" not in t["hier.kda_state"]
        # and none of K3's numbers that differ
        if n != K3["experts"]:
            assert "896" not in everything, t
        if hidden != K3["hidden"]:
            assert "7,168" not in everything, t
        if latent != K3["latent"]:
            assert "3,584" not in everything, t
        if cfg.vocab_size != K3["vocab"]:
            assert "163,840" not in everything, t
        if kda != K3["kda"]:
            assert not re.search(r"\b69\b", everything), t
        if L != K3["layers"]:
            assert not re.search(r"\b93\b", everything), t
        assert "{" not in everything.replace("{}", ""), t  # no unfilled placeholder
