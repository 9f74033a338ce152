"""Checks where a view's values enter: special files refused by the guarded reader,
knobs checked against the model that will run them, the seed range round-trips, a refused value changes
nothing in the window, and a selection naming a layer the model lacks is refused or shown as such."""
import json
import os
import signal

import pytest

from app.files import viewfile
from app.files.viewfile import View, ViewError
from compute.config import ModelConfig, available_configs
from compute.trace import Knobs

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

POSIX = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")


@pytest.fixture
def no_hang():
    def fire(*_a):
        raise TimeoutError("blocked on a special file")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _doc(**changes):
    doc = View().to_dict()
    doc.update(changes)
    return doc


def _write(tmp_path, doc, name="v.k3view"):
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _refused(call, field=None, words=()):
    with pytest.raises(ViewError) as err:
        call()
    msg = str(err.value)
    assert "\n" not in msg, msg
    if field is not None:
        assert err.value.field == field and f"'{field}'" in msg, msg
    for w in words:
        assert w in msg, msg
    return err.value


# --------------------------------------------------------------------------- the guarded reader


@POSIX
@pytest.mark.parametrize("kind", ["fifo", "link_to_fifo", "dev_zero", "directory"])
def test_special_files_are_refused_at_once(tmp_path, no_hang, kind):
    if kind in ("fifo", "link_to_fifo"):
        os.mkfifo(tmp_path / "pipe")
        path, what = tmp_path / "pipe", "a FIFO"
        if kind == "link_to_fifo":
            (tmp_path / "v.k3view").symlink_to(path)
            path = tmp_path / "v.k3view"
    elif kind == "dev_zero":
        path, what = "/dev/zero", "a character device"
    else:
        path, what = tmp_path, "a directory"
    err = _refused(lambda: viewfile.load(path), words=(str(path), what))
    assert err.kind == "read"


@pytest.mark.parametrize("bad", ["", "   ", 123, None, 1.5, True, ["a.k3view"]])
def test_an_empty_or_non_path_name_is_refused(bad):
    err = _refused(lambda: viewfile.load(bad))
    assert err.kind == "read"


# --------------------------------------------------------------------------- knobs against the model


def _config(name="kimi-k3"):
    return ModelConfig.from_json(available_configs()[name])


def test_expert_bias_outside_the_model_is_refused_naming_the_field(tmp_path):
    n = _config().n_routed_experts
    doc = _doc()
    doc["knobs"]["expert_bias"] = {str(n - 1): 2.0}
    assert viewfile.load(_write(tmp_path, doc)).knobs.expert_bias == {n - 1: 2.0}
    doc["knobs"]["expert_bias"] = {"3": 1.0, str(n): 2.0}
    _refused(lambda: viewfile.load(_write(tmp_path, doc)), "knobs.expert_bias", (f"expert {n}", str(n - 1)))
    # the view's own model decides: kimi-k2 has fewer experts than K3
    k2 = _config("kimi-k2").n_routed_experts
    assert k2 < n
    doc = _doc(model="kimi-k2", layer=30)
    doc["knobs"]["expert_bias"] = {str(k2): 1.0}
    _refused(lambda: viewfile.load(_write(tmp_path, doc)), "knobs.expert_bias", (f"expert {k2}",))


def test_check_model_against_another_config():
    k2 = _config("kimi-k2")
    view = View(knobs=Knobs(expert_bias={k2.n_routed_experts + 5: 1.0}))
    viewfile.check_model(view, _config())  # fits K3
    _refused(lambda: viewfile.check_model(view, k2, "v.k3view"), "knobs.expert_bias", ("kimi-k2",))
    _refused(lambda: viewfile.check_model(View(layer=90), k2), "layer", ("61",))
    viewfile.check_model(View(layer=90), k2, layer=False)
    _refused(lambda: viewfile.check_model(View(layer=30, block="L70/kda.state"), k2), "selection.block")


@pytest.mark.parametrize("block", ["L999/kda.state", "L0/kda.state", "L94/moe.down/W"])
def test_a_selection_on_a_layer_the_model_lacks_is_refused(tmp_path, block):
    _refused(lambda: viewfile.load(_write(tmp_path, _doc(selection={"block": block}))), "selection.block",
             ("names layer",))


def test_a_selection_on_a_real_layer_or_a_global_block_loads(tmp_path):
    for block in ("L93/kda.state", "lm_head", "embedding"):
        assert viewfile.load(_write(tmp_path, _doc(selection={"block": block}))).block == block


# --------------------------------------------------------------------------- the seed range


def test_every_seed_in_range_round_trips_and_none_outside_is_saved(tmp_path):
    for seed in (0, 1, 2 ** 63 - 1, viewfile.MAX_SEED):
        if seed > viewfile.MAX_SEED:
            continue
        path = viewfile.save(View(knobs=Knobs(sample_seed=seed)), tmp_path / f"s{seed}.k3view")
        assert viewfile.load(path).knobs.sample_seed == seed
    assert viewfile.MAX_SEED == 10 ** 18 - 1
    for seed in (10 ** 18, 2 ** 63, 10 ** 30):
        target = tmp_path / "big.k3view"
        _refused(lambda: viewfile.save(View(knobs=Knobs(sample_seed=seed)), target), "knobs.sample_seed",
                 ("outside 0…999999999999999999",))
        assert not target.exists()  # nothing written
    _refused(lambda: View.from_dict({**_doc(), "knobs": {"sample_seed": 10 ** 18}}), "knobs.sample_seed")
    _refused(lambda: View.from_dict({**_doc(), "knobs": {"sample_seed": -1}}), "knobs.sample_seed")


def test_save_refuses_what_load_would(tmp_path):
    target = tmp_path / "x.k3view"
    _refused(lambda: viewfile.save(View(knobs=Knobs(expert_bias={5000: 1.0})), target), "knobs.expert_bias")
    _refused(lambda: viewfile.save(View(block="L999/kda.state"), target), "selection.block")
    assert not target.exists()


# --------------------------------------------------------------------------- the window


def test_a_view_biasing_a_missing_expert_changes_nothing_in_the_window(main_window, qtbot, tmp_path):
    win = main_window
    before = (win.state.knobs, win.state.prompt, win.state.trace, win.engine.max_new_tokens, win.state.layer)
    doc = _doc(prompt="The robot", tokens=2)
    doc["knobs"]["expert_bias"] = {"5000": 3.0}
    path = _write(tmp_path, doc)
    assert win.views.open_path(str(path)) is False
    box = win.views.message_box
    assert box.isVisible() and "knobs.expert_bias" in box.text() and "5000" in box.text()
    box.close()
    assert (win.state.knobs, win.state.prompt, win.state.trace, win.engine.max_new_tokens,
            win.state.layer) == before
    assert win.views.pending is None
    # a later run still works
    win.state.request_knobs(temperature=0.5)
    qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 0.5, timeout=90000)


def test_a_view_the_engine_refuses_puts_the_window_knobs_back(main_window, qtbot, tmp_path, monkeypatch):
    """Should a view pass the checks and the engine still refuse it, the window's own knobs, prompt and token
    count come back: the next run is not the failing one again."""
    win = main_window
    knobs, prompt, tokens = win.state.knobs, win.state.prompt, win.engine.max_new_tokens
    monkeypatch.setattr(viewfile, "check_model", lambda *a, **k: None)  # let the bad expert reach the engine
    view = View(prompt="The robot", tokens=2, knobs=Knobs(expert_bias={100000: 1.0}))
    errors = []
    win.state.engine_error.connect(errors.append)
    try:
        assert win.views.apply(view)
        qtbot.waitUntil(lambda: bool(errors) and win.views.pending is None, timeout=90000)
    finally:
        win.state.engine_error.disconnect(errors.append)  # the window is shared with the next tests
    assert (win.state.knobs, win.state.prompt, win.engine.max_new_tokens) == (knobs, prompt, tokens)
    win.state.request_knobs(temperature=0.5)
    qtbot.waitUntil(lambda: win.state.trace.knobs.temperature == 0.5, timeout=90000)


@POSIX
def test_open_view_on_a_fifo_does_not_block_the_window(main_window, tmp_path, no_hang):
    win = main_window
    os.mkfifo(tmp_path / "pipe.k3view")
    assert win.views.open_path(str(tmp_path / "pipe.k3view")) is False
    text = win.views.message_box.text()
    assert "a FIFO" in text and "pipe.k3view" in text
    win.views.message_box.close()


def test_saving_a_view_that_would_not_reopen_is_refused_in_the_window(main_window, tmp_path, monkeypatch):
    win = main_window
    win.state.knobs = Knobs(sample_seed=10 ** 18)
    monkeypatch.setattr(win.state, "trace", None)  # the view takes the state's knobs
    target = tmp_path / "seed.k3view"
    assert win.views.save_to(str(target)) is False
    assert "knobs.sample_seed" in win.views.last_error and not target.exists()
    win.views.message_box.close()


def test_the_inspector_says_when_a_block_names_a_missing_layer(main_window, qtbot):
    win = main_window
    dock = win.docks["inspectorDock"]
    win.state.select_block("L999/kda.state")
    assert "no layer 999" in dock.name_label.text()
    win.state.select_block("L37/kda.state")
    assert dock.name_label.text() == "state S (d_k × d_v)"


@pytest.mark.parametrize("field, good", [
    ("explain3d", {"lens": True}),
    ("knockouts", {"mode": "zero", "tokens": [0]}),
    ("compare", {"models": ["kimi-k3", "kimi-k2"]}),
])
def test_every_object_field_refuses_a_non_object_and_an_unknown_key_alike(tmp_path, field, good):
    """explain3d, knockouts and compare go through one check: the same two messages, naming the field."""
    assert getattr(viewfile.load(_write(tmp_path, _doc(**{field: good}))), field) is not None
    assert getattr(viewfile.load(_write(tmp_path, _doc(**{field: None}))), field) is None
    for bad, words in ((["lens"], "must be an object {"), ("x", "or null"),
                       ({**good, "Extra\u202e" + "k" * 60: 1}, "unknown key 'Extra\\u202e")):
        with pytest.raises(ViewError) as err:
            viewfile.load(_write(tmp_path, _doc(**{field: bad})))
        text = str(err.value)
        assert err.value.field == field and words in text and "\n" not in text and "k" * 41 not in text


def test_a_newer_minor_versions_keys_inside_objects_are_ignored_with_a_note(tmp_path):
    """A file from a later 1.x adds keys (as 1.4 added explain3d.units and compare.stacks): this version opens it,
    reads what it knows and names what it ignored; the same keys in a file of this version are refused."""
    doc = _doc(version=f"{viewfile.VERSION[0]}.{viewfile.VERSION[1] + 1}",
               explain3d={"lens": True, "glow": 2}, knockouts={"tokens": [0], "heads": [[1, 0]]},
               compare={"models": ["kimi-k3", "kimi-k2"], "side": "left"})
    view = viewfile.load(_write(tmp_path, doc))
    assert view.explain3d["lens"] is True and view.knockouts["tokens"] == [0]
    assert view.compare["models"] == ["kimi-k3", "kimi-k2"]
    for key in ("explain3d.glow", "knockouts.heads", "compare.side"):
        assert any(key in note for note in view.notes), (key, view.notes)
    doc["version"] = f"{viewfile.VERSION[0]}.{viewfile.VERSION[1]}"
    with pytest.raises(ViewError) as err:
        viewfile.load(_write(tmp_path, doc))
    assert err.value.field in ("explain3d", "knockouts", "compare")
