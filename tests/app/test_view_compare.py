"""Issue 41.3: view files keep the compared models (view format 1.3, app/files/view_compare.py). A round trip keeps the
Compare dock's two models and the Same-prompt page's own prompt; an older file (1.2, no "compare") still opens;
every bad value is one ViewError naming a compare field, also in a fixed-seed fuzz. In a real window: File ->
Save view… records the dock's picks and page prompt, File -> Recent views -> the file puts them back after the
user changed them, and a file naming a model that is not bundled is refused with the view message, nothing
changed."""
import json
import random

import pytest

from app.files import viewfile
from app.files.viewfile import View, ViewError
from compute.config import available_configs

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation

BUNDLED = tuple(available_configs())


def doc(**changes) -> dict:
    d = View(prompt="로봇이 컵을 집었다").to_dict()
    d.update(changes)
    return d


def loads(d) -> View:
    return viewfile.loads(json.dumps(d, ensure_ascii=False))


def test_round_trip_keeps_the_models_and_the_pages_prompt(tmp_path):
    for compare in ({"models": ["kimi-k3", "deepseek-v3"], "prompt": None},
                    {"models": ["kimi-linear-48b", "kimi-k2"], "prompt": "아이가 상자를 집었다. 그리고"}):
        path = tmp_path / "v.k3view"
        viewfile.save(View(compare=compare), path)
        raw = json.loads(path.read_text(encoding="utf-8"))
        assert raw["version"] == "1.4" and raw["compare"] == compare
        assert viewfile.load(path).compare == compare


def test_an_older_file_without_compare_still_opens():
    d = doc(version="1.2")
    d.pop("compare", None)
    assert loads(d).compare is None
    assert "compare" not in View().to_dict()  # not recorded: not written


@pytest.mark.parametrize("value, field, words", [
    ("kimi-k3", "compare", "object"),
    ({"models": ["kimi-k3"]}, "compare.models", "two"),
    ({"models": ["kimi-k3", "deepseek-v3", "kimi-k2"]}, "compare.models", "two"),
    ({"models": "kimi-k3,deepseek-v3"}, "compare.models", "two"),
    ({"models": ["kimi-k3", "gpt-5"]}, "compare.models", "'gpt-5'"),
    ({"models": ["kimi-k3", 7]}, "compare.models", "7"),
    ({"models": ["kimi-k3", "../../etc/passwd"]}, "compare.models", "passwd"),
    ({"models": ["kimi-k3", "kimi-k2"], "prompt": ""}, "compare.prompt", "non-empty"),
    ({"models": ["kimi-k3", "kimi-k2"], "prompt": 5}, "compare.prompt", "non-empty"),
    ({"models": ["kimi-k3", "kimi-k2"], "prompt": "a\ud800"}, "compare.prompt", "surrogate"),
    ({"models": ["kimi-k3", "kimi-k2"], "prompt": "가 " * 300}, "compare.prompt", "toy tokens"),
    ({"models": ["kimi-k3", "kimi-k2"], "run": True}, "compare", "unknown key 'run'"),
])
def test_a_bad_compare_is_one_error_naming_its_field(value, field, words):
    with pytest.raises(ViewError) as err:
        loads(doc(compare=value))
    assert err.value.field == field and words in str(err.value) and "\n" not in str(err.value)


def test_fuzz_every_compare_loads_or_is_a_compare_field_error():
    rng = random.Random(4103)
    atoms = [None, True, 0, -1, 2.5, "", " ", "kimi-k3", "KIMI-K3", "kimi-k3.json", "deepseek-v3", "x" * 500, [],
             {}, ["kimi-k3"], "로봇이 컵을", "\u202e", "\x00"]
    loaded = refused = 0
    for _ in range(400):
        value = {}
        if rng.random() < 0.9:
            n = rng.choice([0, 1, 2, 2, 2, 3])
            value["models"] = [rng.choice(BUNDLED) if rng.random() < 0.6 else rng.choice(atoms) for _ in range(n)]
        if rng.random() < 0.5:
            value["prompt"] = rng.choice(atoms)
        if rng.random() < 0.1:
            value[rng.choice(["Models", "extra", "prompt "])] = 1
        if rng.random() < 0.05:
            value = rng.choice(atoms)
        try:
            v = loads(doc(compare=value))
        except ViewError as exc:
            assert (exc.field or "").startswith("compare"), (value, exc)
            refused += 1
            continue
        loaded += 1
        if v.compare is not None:
            assert len(v.compare["models"]) == 2 and set(v.compare["models"]) <= set(BUNDLED)
            assert v.compare["prompt"] is None or v.compare["prompt"].strip()
            assert loads(v.to_dict()).compare == v.compare  # what loads, saves and loads again the same
    assert loaded > 50 and refused > 50


# --- the window -------------------------------------------------------------------------------------------

def pick(dock, a: str, b: str) -> None:
    dock.pick_a.setCurrentIndex(dock.pick_a.findData(a))
    dock.pick_b.setCurrentIndex(dock.pick_b.findData(b))


def test_the_window_saves_and_restores_the_compared_models(make_window, qtbot, tmp_path, monkeypatch):
    from tests.app.gui_helpers import wait_idle
    from tests.app.test_viewfile import _open_from_recent

    win = make_window()
    dock = win.docks["CompareDock"]
    pick(dock, "kimi-linear-48b", "kimi-k2")
    dock.runs.prompt_edit.setText("아이가 상자를 집었다. 그리고")
    path = str(tmp_path / "cmp")
    monkeypatch.setattr("app.window.view_menu.QFileDialog.getSaveFileName", lambda *a, **k: (path, ""))
    win.registry.actions["save_view"].trigger()  # File -> Save view…
    saved = viewfile.load(path + ".k3view")
    assert saved.compare == {"models": ["kimi-linear-48b", "kimi-k2"], "prompt": "아이가 상자를 집었다. 그리고"}

    pick(dock, "kimi-k3", "deepseek-v3")
    dock.runs.prompt_edit.clear()
    wait_idle(qtbot, win)
    _open_from_recent(qtbot, win, path + ".k3view")
    qtbot.waitUntil(lambda: win.views.pending is None and dock.pick_a.currentData() == "kimi-linear-48b",
                    timeout=90000)
    assert (dock.pick_a.currentData(), dock.pick_b.currentData()) == ("kimi-linear-48b", "kimi-k2")
    assert dock.runs.prompt_edit.text() == "아이가 상자를 집었다. 그리고"

    # the page's prompt equal to the window's: not repeated in the file
    dock.runs.prompt_edit.setText(win.state.trace.text)
    assert win.views.current_view().compare["prompt"] is None

    # a model that is not bundled: the view message, nothing changed
    bad = tmp_path / "bad.k3view"
    d = json.loads(open(path + ".k3view", encoding="utf-8").read())
    d["compare"]["models"] = ["kimi-k3", "my-model"]
    d["layer"] = 5
    bad.write_text(json.dumps(d, ensure_ascii=False), encoding="utf-8")
    pick(dock, "kimi-k3", "deepseek-v3")
    before = (win.state.layer, win.state.step, win.state.trace)
    assert win.views.open_path(str(bad)) is False
    box = win.views.message_box
    assert box.isVisible() and "compare.models" in box.text() and "my-model" in box.text()
    assert "\n" not in box.text()
    box.close()
    assert (dock.pick_a.currentData(), dock.pick_b.currentData()) == ("kimi-k3", "deepseek-v3")
    assert (win.state.layer, win.state.step, win.state.trace) == before
