"""Trace player core (Qt-free): steps from a real engine trace, seeking, per-step facts; the real sizes come
from the model that ran (hand-computed here from each config.json's own fields, not from compute.dims)."""
import json

import pytest

from app import i18n, player
from compute.config import ModelConfig, available_configs, load_default

PROMPT = "로봇이 컵"  # 5 characters: 4 Hangul syllables (3 UTF-8 bytes each) + 1 space -> 13 bytes


@pytest.fixture(scope="module")
def trace():
    from compute.engine import ToyK3

    return ToyK3().run(PROMPT, max_new_tokens=3)


def raw_config(stem: str) -> dict:
    with open(available_configs()[stem], encoding="utf-8") as fh:
        return json.load(fh)


def odd_user_config() -> dict:
    """A user's config.json with unusual values: no q_lora_rank, no shared experts, no AttnRes, 1 MLA layer."""
    raw = raw_config("kimi-linear-48b")
    raw.update(name="odd-user", display_name="Odd User Model", num_hidden_layers=4, num_shared_experts=0)
    raw["linear_attn_config"] = dict(raw["linear_attn_config"], kda_layers=[1, 2, 3], full_attn_layers=[4])
    return raw


def hand_sizes(raw: dict) -> dict:
    """The real sizes a person reads off a config.json (field names of each model's own file)."""
    lin = raw.get("linear_attn_config") or {}
    kda_layers = len(lin.get("kda_layers", []))
    return dict(hidden=raw["hidden_size"], vocab=raw["vocab_size"], kv_lora=raw["kv_lora_rank"],
                experts=raw.get("n_routed_experts", raw.get("num_experts")), kda=kda_layers,
                kda_state=(lin["num_heads"], lin["head_dim"], lin["head_dim"]) if kda_layers else None,
                attnres=bool(raw.get("attn_res_block_size")), name=raw.get("display_name", raw["name"]))


def _config_cases():
    return [pytest.param(raw_config(stem), id=stem) for stem in sorted(available_configs())] + \
        [pytest.param(odd_user_config(), id="odd-user")]


@pytest.mark.parametrize("raw", _config_cases())
def test_every_step_states_the_running_models_real_sizes(raw):
    """Every step of every bundled model and of an unusual user config has facts, with that model's real
    sizes; a step about a part the model lacks says so instead of failing."""
    from compute.engine import ToyK3

    cfg = ModelConfig.from_dict(raw, "config.json")
    tr = ToyK3(cfg).run("hi", max_new_tokens=2)
    want = hand_sizes(raw)
    steps = player.build_steps(tr)
    facts = {}
    for s in steps:
        f = player.describe(tr, s, 0, cfg)  # never raises
        facts.setdefault(s.kind, f)
        for key, fmt in f.extra:
            for lang in ("en", "ko"):
                text = i18n.tr(key, lang=lang, **fmt)
                assert "{" not in text and "K3" not in text or "K3" in want["name"], (s.kind, text)
    P, T = tr.prompt_len, tr.prompt_len
    assert facts["embedding"].real_shape == (P, want["hidden"])
    assert facts["lm_head"].real_shape == (T, want["vocab"])
    assert facts["moe"].real_shape == (T, want["experts"])
    assert facts["final_norm"].real_shape == (T, want["hidden"])
    assert facts["mla_cache"].real_shape == (P, want["kv_lora"])
    vocab_line = dict(facts["token_ids"].extra)["app.fact.vocab"]["vocab"]
    assert vocab_line == f"{want['vocab']:,}"
    assert dict(facts["embedding"].extra)["app.fact.embedding_row_of"]["bytes"] == f"{2 * want['hidden']:,}"
    if want["kda_state"]:
        assert not facts["kda_state"].absent and facts["kda_state"].real_shape == want["kda_state"]
    else:  # DeepSeek-V3 / Kimi K2: no KDA layer; the step says so
        assert facts["kda_state"].absent and facts["kda_state"].extra[0][0] == "app.fact.none.kda"
        assert "app.fact.decode_cache_mla" in dict(facts["decode_cache"].extra)
    if want["attnres"]:
        assert not facts["attnres"].absent and "app.fact.final" in dict(facts["final_norm"].extra)
    else:
        assert facts["attnres"].absent and "app.fact.final_plain" in dict(facts["final_norm"].extra)
    # the step titles name what the model has ("Final RMSNorm" without AttnRes, "none in <model>")
    from scene.steps import text_args

    for lang in ("en", "ko"):
        args = text_args(cfg, lambda k, **f: i18n.tr(k, lang=lang, **f))
        title = i18n.tr("app.step.final_norm.title", lang=lang, **args)
        assert ("AttnRes" in title) == want["attnres"], title
        kda_title = i18n.tr("app.step.kda_state.title", lang=lang, **args)
        assert (want["name"] in kda_title) == (not want["kda_state"]), kda_title


def test_steps_cover_the_pipeline_in_order(trace):
    steps = player.build_steps(trace)
    kinds = [s.kind for s in steps]
    # 15 prefill steps, then 6 for each of the 2 decode passes (3 tokens generated: pass 0 + 2 decode passes)
    assert len(steps) == 15 + 6 * 2
    assert kinds[:15] == ["input", "utf8", "tokenize", "token_ids", "embedding", "prefill", "kda_state",
                          "mla_cache", "attnres", "moe", "final_norm", "lm_head", "sampling", "detokenize",
                          "stream"]
    assert kinds[15:21] == ["decode", "decode_cache", "lm_head", "sampling", "detokenize", "stream"]
    assert set(kinds) == set(player.STEP_KINDS) and len(player.STEP_KINDS) == 17
    assert [s.index for s in steps] == list(range(len(steps)))
    assert {s.phase for s in steps[:15]} == {"A"} and {s.phase for s in steps[15:]} == {"B"}
    assert [s.pass_index for s in steps[15:]] == [1] * 6 + [2] * 6


def test_decode_steps_focus_the_new_token(trace):
    steps = player.build_steps(trace)
    P = trace.prompt_len
    decode = [s for s in steps if s.kind == "decode"]
    assert [s.token for s in decode] == [P, P + 1]  # the token sampled by the previous pass
    assert steps[11].token == P - 1  # prefill LM head: the last prompt position


def test_every_step_says_where_data_lives_and_has_texts_in_both_languages(trace):
    for step in player.build_steps(trace):
        assert step.path and set(step.path) <= set(player.PLACES)
        for lang in ("en", "ko"):
            for key in (step.title_key, step.what_key, step.move_key):
                assert key in i18n.table(lang), (lang, key)
    steps = {s.kind: s for s in player.build_steps(trace)}
    assert steps["input"].location == "cpu_ram"
    assert steps["token_ids"].path == ("cpu_ram", "pcie", "hbm")  # host -> device copy
    assert steps["sampling"].location == "cpu_ram"  # only the ID comes back


def test_facts_are_the_trace_values(trace):
    steps = player.build_steps(trace)
    by_kind = {}
    for s in steps:
        by_kind.setdefault(s.kind, s)
    utf8 = player.describe(trace, by_kind["utf8"])
    assert utf8.dtype == "uint8" and utf8.shape == (13,)
    assert utf8.value.startswith("EB A1 9C")  # '로' = U+B85C = EB A1 9C
    emb = player.describe(trace, by_kind["embedding"])
    k3 = hand_sizes(raw_config("kimi-k3"))
    assert emb.shape == (trace.prompt_len, 8) and emb.real_shape == (trace.prompt_len, k3["hidden"])
    ids = player.describe(trace, by_kind["token_ids"])
    assert ids.value.split(", ") == [str(i) for _, i in trace.tokens[:trace.prompt_len]]
    kda = player.describe(trace, by_kind["kda_state"], layer=36)
    assert kda.shape == (2, 4, 4) and kda.real_shape == k3["kda_state"]
    samp = player.describe(trace, by_kind["sampling"])
    piece, token_id = trace.tokens[trace.prompt_len]  # first generated token
    assert samp.value == f"{piece!r} → {token_id}"


def test_caches_grow_for_mla_and_stay_constant_for_kda(trace):
    steps = player.build_steps(trace)
    P = trace.prompt_len
    rows = [player.describe(trace, s, layer=36).shape[0] for s in steps if s.kind == "decode_cache"]
    assert rows == [P + 1, P + 2]
    states = {trace.passes[p].layers[36].tensors["kda.state"].shape for p in range(len(trace.passes))}
    assert states == {(2, 4, 4)}


def test_focus_layer_picks_a_layer_of_the_right_type():
    cfg = load_default()
    mixers, ffns = cfg.mixer_types, cfg.ffn_types
    step = {k: player.Step(0, k, "A", 0, 0) for k in player.STEP_KINDS}
    # 1-based layer 37 is KDA, 36 is MLA (every 4th), layer 1 is the dense one
    assert player.focus_layer(step["kda_state"], mixers, ffns, 36) == 36
    assert player.focus_layer(step["mla_cache"], mixers, ffns, 36) == 35
    assert player.focus_layer(step["moe"], mixers, ffns, 0) == 1
    assert player.focus_layer(step["attnres"], mixers, ffns, 0) == 1
    assert player.focus_layer(step["prefill"], mixers, ffns, 50) == 50


def _digest(value, h=None):
    """A hash of everything a trace holds (arrays by their bytes, dtype and shape)."""
    import dataclasses
    import hashlib

    import numpy as np

    h = h or hashlib.sha256()
    if isinstance(value, np.ndarray) or type(value).__module__.startswith("numpy"):
        a = np.asarray(value)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            h.update(f.name.encode())
            _digest(getattr(value, f.name), h)
    elif isinstance(value, dict):
        for k in sorted(value, key=repr):
            h.update(repr(k).encode())
            _digest(value[k], h)
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _digest(v, h)
    else:
        h.update(repr(value).encode())
    return h


def test_seek_is_pure_and_streamed_text_accumulates(trace):
    import random

    before = _digest(trace).hexdigest()
    a = player.build_steps(trace)

    def facts(i):
        return (player.describe(trace, a[i], layer=36), player.streamed_text(trace, a, i))

    forward = [facts(i) for i in range(len(a))]
    order = list(range(len(a)))
    random.Random(7).shuffle(order)
    jumped = {i: facts(i) for i in order}  # seeking in any order, with no history, says the same
    assert [jumped[i] for i in range(len(a))] == forward
    assert _digest(trace).hexdigest() == before  # building steps and seeking leave the trace as it was
    first_stream = next(s.index for s in a if s.kind == "stream")
    generated = [p for p, _ in trace.tokens[trace.prompt_len:]]
    assert player.streamed_text(trace, a, first_stream - 1) == ""
    assert player.streamed_text(trace, a, first_stream) == generated[0]
    assert player.streamed_text(trace, a, len(a) - 1) == "".join(generated)


def test_the_scene_highlights_what_the_step_table_says(trace, qtbot):
    """One table: the player's step and the 3D scene agree on the highlighted blocks, for every step."""
    from scene.block_kinds import ALL_KINDS
    from scene.steps import STEP_TABLE
    from scene.view import SceneView

    view = SceneView()
    qtbot.addWidget(view)
    view.set_config(load_default())
    view.set_trace(trace)
    for spec in STEP_TABLE.values():  # the table names real scene blocks
        assert set(spec.blocks) <= set(ALL_KINDS) and spec.path and set(spec.path) <= set(player.PLACES)
    for step in player.build_steps(trace):
        view.set_step_focus(step.kind)
        shown = view.step_block_ids
        kinds = {i.split("/")[1] if i.startswith("L") else i.split("/")[0] for i in shown}
        # layer 37 is KDA + MoE: it has every kind the table names but MLA's
        assert kinds == {k for k in step.blocks if not k.startswith("mla.")}, step.kind
        assert view.line_step.visible() == bool(shown)
    view.set_step_focus("kda_state")
    assert view.step_block_ids == ("L37/kda.state", "L37/kda.alpha", "L37/kda.beta")
    view.set_step_focus("attnres")
    assert "stack.attnres_bracket/1" in view.step_block_ids and "L37/attnres.mixer" in view.step_block_ids
    view.set_layer(35, animate=False)  # layer 36 is MLA: the same step table row, resolved in that layer
    view.set_step_focus("mla_cache")
    assert view.step_block_ids == ("L36/mla.c_kv", "L36/mla.k_rope", "L36/mla.kv_a")
