"""Issue 44 N2: a view file's knock-outs (and its explained position) are checked against the view's own prompt
when it is opened, dropped, exported or rendered: a knock-out past the prompt is refused with the view message
and nothing changes; the command line and app.api.render apply a view's knock-outs as the window's Explain dock
does (the same explanation, with its "after")."""
from __future__ import annotations

import json

import pytest

from app.files import viewfile
from app.files.view_knockouts import explained_position, prompt_tokens
from app.files.viewfile import View, ViewError

PROMPT = "로봇이 컵을 집었다"  # 6 toy tokens: positions 0..5


def _doc(**changes) -> dict:
    doc = {"format": "k3-explorer-view", "version": "1.2", "prompt": PROMPT, "tokens": 4, "layer": 37}
    doc.update(changes)
    return doc


def _refused(doc, field: str) -> ViewError:
    with pytest.raises(ViewError) as info:
        viewfile.loads(json.dumps(doc), "v.k3view")
    assert info.value.field == field and "\n" not in str(info.value), str(info.value)
    return info.value


def test_the_prompt_has_six_tokens():
    from compute.language.tokenizer import ToyTokenizer

    assert prompt_tokens(PROMPT) == len(ToyTokenizer(vocab_size=163840).encode(PROMPT)) == 6


def test_the_issue_view_is_refused_naming_the_knocked_out_token():
    exc = _refused(_doc(knockouts={"mode": "zero", "tokens": [255]}), "knockouts.tokens[0]")
    assert "255" in str(exc) and "0…5" in str(exc) and "v.k3view" in str(exc)


@pytest.mark.parametrize("tokens, ok", [([0], True), ([5], True), ([0, 5, 3], True), ([6], False),
                                        ([2, 9], False)])
def test_knockouts_up_to_the_last_prompt_position_load(tokens, ok):
    doc = _doc(knockouts={"mode": "zero", "tokens": tokens})
    if ok:
        assert viewfile.loads(json.dumps(doc)).knockouts["tokens"] == tokens
    else:
        _refused(doc, f"knockouts.tokens[{next(i for i, p in enumerate(tokens) if p > 5)}]")


def test_the_explained_position_bounds_the_knockouts_and_the_trace_bounds_it():
    # explaining generated position 8 (of 6 + 4 = 10): tokens up to 8 may be knocked out
    v = viewfile.loads(json.dumps(_doc(knockouts={"tokens": [7]}, explain3d={"position": 8})))
    assert explained_position(v) == 8
    _refused(_doc(knockouts={"tokens": [9]}, explain3d={"position": 8}), "knockouts.tokens[0]")
    _refused(_doc(knockouts={"tokens": [3]}, explain3d={"position": 2}), "knockouts.tokens[0]")
    exc = _refused(_doc(explain3d={"position": 10}), "explain3d.position")
    assert "0…9" in str(exc)
    assert explained_position(View(prompt=PROMPT)) == 5


def test_save_refuses_what_load_would(tmp_path):
    target = tmp_path / "x.k3view"
    with pytest.raises(ViewError):
        viewfile.save(View(prompt=PROMPT, knockouts={"mode": "zero", "tokens": [6], "blocks": [], "experts": []}),
                      target)
    assert not target.exists()


def test_check_model_refuses_knockouts_the_other_model_lacks():
    from compute.config import ModelConfig, available_configs

    linear = ModelConfig.from_json(available_configs()["kimi-linear-48b"])
    v = View(prompt=PROMPT, layer=1, knockouts={"mode": "zero", "tokens": [], "blocks": [[90, "mixer"]], "experts": []})
    with pytest.raises(ViewError) as info:
        viewfile.check_model(v, linear, "v.k3view")
    assert info.value.field == "knockouts.blocks[0][0]"
    many = View(prompt=PROMPT, layer=1, knockouts={"mode": "zero", "tokens": [], "blocks": [],
                                                   "experts": [[None, linear.n_routed_experts]]})
    with pytest.raises(ViewError):
        viewfile.check_model(many, linear)


def test_an_api_prompt_override_is_checked_against_the_knockouts():
    from app.api import resolve_view

    v = viewfile.loads(json.dumps(_doc(knockouts={"tokens": [5]})))
    with pytest.raises(ValueError) as info:
        resolve_view(v, prompt="The robot")  # 2 toy tokens: position 5 is gone
    assert "knockouts.tokens[0]" in str(info.value)


# ----------------------------------------------------------------------------------------- the window


def _write(tmp_path, doc, name="ko.k3view"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def _snapshot(win):
    dock = win.docks["ExplainDock"]
    return (win.state.knobs, win.state.prompt, win.state.trace, win.engine.max_new_tokens, win.state.layer,
            dock.knockouts(), win.views.pending)


def test_opening_or_dropping_the_issue_view_is_one_message_and_changes_nothing(main_window, qtbot, tmp_path):
    from PySide6.QtCore import QMimeData, Qt, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    win = main_window
    path = _write(tmp_path, _doc(knockouts={"mode": "zero", "tokens": [255]}))
    before = _snapshot(win)
    assert win.views.open_path(str(path)) is False
    box = win.views.message_box
    assert box.isVisible() and "knockouts.tokens[0]" in box.text() and "255" in box.text()
    box.close()
    assert _snapshot(win) == before
    mime = QMimeData()  # dropped on the window, as from a file manager
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    pos = win.scene.mapTo(win, win.scene.rect().center())
    QApplication.sendEvent(win, QDragEnterEvent(pos, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))
    win.views.message_box = None
    QApplication.sendEvent(win, QDropEvent(pos.toPointF(), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))
    box = win.views.message_box
    assert box is not None and "knockouts.tokens[0]" in box.text()
    box.close()
    assert _snapshot(win) == before


def test_a_version_1_1_view_explains_the_last_prompt_position_its_knockouts_were_checked_for(main_window, qtbot,
                                                                                             tmp_path):
    win = main_window
    dock = win.docks["ExplainDock"]
    doc = _doc(version="1.1", knockouts={"mode": "zero", "tokens": [5]})
    try:
        assert win.views.open_path(str(_write(tmp_path, doc)))
        qtbot.waitUntil(lambda: win.views.pending is None and dock.knockouts() is not None, timeout=120000)
        assert dock.explained_position() == 5
        dock.show()
        dock.raise_()
        qtbot.waitUntil(lambda: not dock.busy and dock.result is not None and dock.result.knockout is not None,
                        timeout=120000)
        assert dock.result.position == 5 and dock.result.knockout["items"] == [("token", 5)]
        assert "failed" not in dock.status.text().lower()
    finally:
        dock.set_knockouts(None)


# ------------------------------------------------------------------------- the command line and render()


def test_render_applies_the_views_knockouts_as_the_dock_does(qapp, monkeypatch):
    from app import api
    from app.engine import explain_service as service  # what the window's dock, the API and the command line share

    seen = []
    real = service.explain_result

    def spy(req):
        res = real(req)
        seen.append((req, res))
        return res

    monkeypatch.setattr(service, "explain_result", spy)
    ko = {"mode": "mean", "tokens": [1], "blocks": [[2, "ffn"]], "experts": []}
    v = View(prompt=PROMPT, knockouts=ko, explain3d={"lens": True, "arcs": False, "route": False,
                                                     "route_threshold": 30, "position": None})
    api.render(view=v, size=(320, 200))
    req, res = seen[-1]
    assert set(req.knockout) == {("token", 1), ("block", 2, "ffn")} and req.mode == "mean"
    assert res.knockout is not None and res.knockout["mode"] == "mean" and res.position == 5
    with pytest.raises(ValueError, match="knockouts.tokens"):
        api.render(view=v, prompt="A", size=(320, 200))  # one toy token: position 1 is gone


def test_cli_export_refuses_a_bad_view_and_prints_a_good_views_knockout(tmp_path):
    from tests.app.test_cli_contract import error_lines, run_app

    bad = _write(tmp_path, _doc(knockouts={"mode": "zero", "tokens": [255]}), "bad.k3view")
    r = run_app("export", "--view", str(bad), "--out", str(tmp_path / "bad.png"))
    assert r.returncode == 2 and any("knockouts.tokens[0]" in line for line in error_lines(r))
    assert not (tmp_path / "bad.png").exists()
    good = _write(tmp_path, _doc(knockouts={"mode": "zero", "tokens": [5]}), "good.k3view")
    short = run_app("export", "--view", str(good), "--prompt", "The robot", "--out", str(tmp_path / "s.png"))
    assert short.returncode == 2 and any("knockouts.tokens[0]" in line for line in error_lines(short))
    ok = run_app("export", "--view", str(good), "--size", "320x200", "--out", str(tmp_path / "good.png"))
    out = ok.stdout.decode()
    assert ok.returncode == 0, ok.stderr.decode()[-800:]
    assert (tmp_path / "good.png").exists()
    line = next(line for line in out.splitlines() if line.startswith("Knock-out"))
    assert "position 5" in line and "token 5" in line and "→" in line
