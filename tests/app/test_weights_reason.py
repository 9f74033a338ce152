"""When K3's trained weights cannot be used (file missing or damaged: a WeightsError, the engine falls
back to random weights) the window and the CLI say WHY in one line — the WeightsError's reason from the
engine's `weights_note` — not just "random". Damaged files are made in tmp_path as the other weights tests do
(a truncated copy of the shipped file), the engine finds them through a patched `weights.default_path`."""
from types import SimpleNamespace

from app import cli, i18n, weights_choice
from app.i18n import tr

import pytest

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


def _truncated(tmp_path):
    from compute import weights

    bad = tmp_path / "damaged.npz"
    bad.write_bytes(weights.default_path().read_bytes()[: 1 << 20])
    return bad


def test_the_reason_is_the_engines_note_in_one_short_line():
    note = "trained weights not used: weights file x.npz is not a zip archive (no end of central directory)"
    assert weights_choice.fallback_reason(note) == "weights file x.npz is not a zip archive (no end of central directory)"
    assert weights_choice.fallback_reason("") == "" and weights_choice.fallback_reason(None) == ""
    long = weights_choice.fallback_reason("trained weights not used: " + "a\nb " * 200, 100)
    assert len(long) == 100 and long.endswith("…") and "\n" not in long
    trace = SimpleNamespace(weights_name="random", weights_fallback="damaged")
    text = weights_choice.status_text(trace, tr, "trained", note)
    assert text == "Weights: random (weights file x.npz is not a zip archive (no end of cent…)"
    short = "trained weights not used: weights file x.npz: bad CRC"
    assert weights_choice.status_text(trace, tr, "trained", short) == "Weights: random (weights file x.npz: bad CRC)"
    assert weights_choice.status_text(trace, tr, "trained") == tr("weights.status.fallback.damaged")  # no note
    assert weights_choice.status_text(trace, tr, "random", note) == tr("weights.status",
                                                                      weights=tr("weights.short.random"))


def test_the_window_says_why_a_damaged_file_was_not_used(make_window, qtbot, monkeypatch, tmp_path):
    from compute import weights

    bad = _truncated(tmp_path)
    monkeypatch.setattr(weights, "default_path", lambda: bad)
    win = make_window()
    assert win.weights.chosen == "trained" and win.state.trace.weights_name == "random"
    note = win.engine.engine.model.weights_note
    reason = weights_choice.fallback_reason(note)
    assert "damaged.npz" in reason and reason in note and not reason.startswith("trained weights not used")
    text = win.weights.label.text()
    assert text.startswith("Weights: random (weights file damaged.npz ") and "\n" not in text
    assert len(text) <= len("Weights: random ()") + weights_choice.REASON_CHARS
    assert "reason is in the log" not in text
    assert reason in win.weights.label.toolTip()
    i18n.set_language("ko")
    qtbot.waitUntil(lambda: win.weights.label.text().startswith("가중치: 무작위 (weights file "), timeout=5000)
    assert "damaged.npz" in win.weights.label.text() and "학습된 가중치를 쓰지 않음" in win.weights.label.toolTip()
    i18n.set_language("en")
    assert win.isVisible()


def test_the_window_tooltip_names_a_missing_file(make_window, qtbot, monkeypatch, tmp_path):
    from compute import weights

    monkeypatch.setattr(weights, "default_path", lambda: tmp_path / "gone.npz")
    win = make_window()
    assert win.weights.label.text() == tr("weights.status.fallback.missing")  # "not installed" is the why
    assert "gone.npz" in win.weights.label.toolTip()


def test_the_cli_says_why_in_one_stderr_line(tmp_path, monkeypatch, capsys):
    from app import api
    from compute import weights

    bad = _truncated(tmp_path)
    monkeypatch.setattr(weights, "default_path", lambda: bad)
    monkeypatch.setattr(api, "_ENGINES", {})
    out = tmp_path / "x.png"
    assert cli.main(["--size", "320x180", "--out", str(out)]) == 0
    assert out.is_file()
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    why = [line for line in err if "damaged.npz" in line]
    assert len(why) == 1, err
    assert why[0].startswith("k3-explorer export: note: random weights ran, the trained weights were not used: "
                             "weights file damaged.npz ")
    assert not any("WARNING" in line and "trained weights not used" in line for line in err), err


def test_the_cli_is_quiet_when_the_trained_weights_run(tmp_path, capsys):
    out = tmp_path / "x.png"
    assert cli.main(["--size", "320x180", "--out", str(out)]) == 0
    assert "not used" not in capsys.readouterr().err
