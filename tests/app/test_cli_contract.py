"""The command line's contract (README): a bad argument exits 2, an unwritable file or a failed engine 1, a
missing or unreachable display 3 — each with one line on stderr, never a traceback, never the GUI's wording."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_display() -> str:
    """A display number no X server uses (no socket, no lock file)."""
    for n in range(140, 400):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return f":{n}"
    raise RuntimeError("no free display number")


def run_app(*args, env_extra=None, timeout=240):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True,
                          timeout=timeout)


def error_lines(r) -> list[str]:
    """stderr's lines, logging records left out (a record carries a time stamp and a level)."""
    text = r.stderr.decode("utf-8", "replace")
    return [line for line in text.splitlines() if line.strip() and " INFO " not in line]


@pytest.mark.parametrize("args, code, words", [
    (["--scale", "inf"], 2, ["--scale inf", "finite"]),
    (["--scale", "1e308"], 2, ["--scale 1e+308", "8192"]),
    (["--scale", "nan"], 2, ["--scale nan"]),
    (["--scale", "0"], 2, ["--scale 0"]),
    (["--device", "bogus"], 2, ["--device", "'cpu', 'cuda', 'auto'"]),
    (["--tokens", "0"], 2, ["--tokens 0"]),
    (["--prompt", b"ab\xffcd"], 2, ["--prompt", "UTF-8", "0xFF", "character 3"]),
    (["--prompt", "가" * 300], 2, ["--prompt has 300 toy tokens", "256"]),
    (["--out", b"/tmp/k3-\xfe.png"], 2, ["--out", "0xFE", "character 9"]),
])
def test_a_bad_argument_exits_2_with_one_line(tmp_path, args, code, words):
    out = tmp_path / "x.png"
    r = run_app("export", "--size", "320x200", *([] if "--out" in args else ["--out", str(out)]), *args)
    lines = error_lines(r)
    assert r.returncode == code, (r.returncode, lines)
    assert len(lines) == 1, lines
    assert lines[0].startswith("k3-explorer export: error: ")
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "last good trace" not in lines[0]
    assert not out.exists()


def test_the_gui_rejects_a_bad_device_in_one_line():
    r = run_app("--device", "bogus")
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, lines)
    assert lines[0].startswith("k3-explorer: error: argument --device")


@pytest.mark.parametrize("command", [["export", "--size", "320x200"], []])
def test_a_display_no_server_answers_exits_3_with_one_line(tmp_path, command):
    display = free_display()
    args = [*command, "--out", str(tmp_path / "x.png")] if command else ["--settings", str(tmp_path / "s.ini")]
    # no Xvfb on PATH: the export would otherwise draw on a private one (test_export.py)
    r = run_app(*args, env_extra={"DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "PATH": str(tmp_path)}, timeout=120)
    lines = error_lines(r)
    assert r.returncode == 3, (r.returncode, lines)  # not SIGABRT (-6) from Qt's xcb plugin
    assert len(lines) == 1, lines
    assert f"Cannot open the display {display}" in lines[0] and "Xvfb" in lines[0]
    assert "xcb-cursor" not in lines[0]


def test_cuda_without_cuda_fails_in_one_line_without_the_gui_wording(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    r = run_app("export", "--size", "320x200", "--device", "cuda", "--out", str(tmp_path / "x.png"))
    lines = [line for line in error_lines(r) if " WARNING " not in line and " ERROR " not in line]
    assert r.returncode == 1, (r.returncode, lines)
    assert len(lines) == 1, lines
    assert lines[0].startswith("k3-explorer export: error: The engine could not run on --device cuda: ")
    assert "last good trace" not in lines[0] and "Traceback" not in r.stderr.decode()


def test_a_lone_surrogate_in_the_prompt_names_the_prompt_and_its_position():
    from compute.engine import ToyK3

    with pytest.raises(ValueError) as info:
        ToyK3(device="cpu").run("로봇이\ud83d 컵을")
    assert "the prompt" in str(info.value) and "character 4" in str(info.value) and "U+D83D" in str(info.value)


def test_scale_and_text_checks_directly():
    from app.cli import invalid_text, scaled_size
    from app.export.image import ExportError

    assert scaled_size(1920, 1080, 2.0) == (3840, 2160)
    for bad in (float("inf"), float("-inf"), float("nan"), 0.0, -2.0, 1e308, 5.0):
        with pytest.raises(ExportError):
            scaled_size(1920, 1080, bad)
    assert invalid_text("로봇이 컵을", "--prompt") is None
    assert "character 2" in invalid_text("a\udc80", "--prompt")
    assert "U+D800" in invalid_text("ab\ud800", "--prompt") and "character 3" in invalid_text("ab\ud800", "--prompt")


def test_export_theme_light_gives_a_light_slide_and_a_bad_theme_exits_2(tmp_path):
    """`export --theme light` draws for light slides (the export dialog's slide theme, from the command line)."""
    from PySide6.QtGui import QImage

    means = {}
    for theme in ("dark", "light"):
        out = tmp_path / f"{theme}.png"
        r = run_app("export", "--size", "320x200", "--theme", theme, "--out", str(out),
                    env_extra={"QT_QPA_PLATFORM": "xcb"})
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        img = QImage(str(out))
        corner = img.pixelColor(3, img.height() - 3)  # background, away from the title and legend
        means[theme] = (corner.red() + corner.green() + corner.blue()) / 3
    assert means["light"] > 180 > 60 > means["dark"], means
    r = run_app("export", "--theme", "beige", "--out", str(tmp_path / "x.png"))
    assert r.returncode == 2 and len(error_lines(r)) == 1 and "--theme" in error_lines(r)[0]


def test_an_out_that_is_or_links_to_a_special_file_exits_2_and_stays(tmp_path):
    """`ln -s /dev/full x.png; export --out x.png` replaced the device when run as root. A FIFO and links to
    one are refused in one line (exit 2) and stay FIFOs; a folder at --out stays exit 1 (can't write)."""
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    (tmp_path / "x.png").symlink_to(fifo)
    (tmp_path / "chain.png").symlink_to(tmp_path / "x.png")
    for out in (fifo, tmp_path / "x.png", tmp_path / "chain.png"):
        r = run_app("export", "--size", "160x90", "--out", str(out), timeout=120)
        lines = error_lines(r)
        assert r.returncode == 2 and len(lines) == 1, (r.returncode, lines)
        assert "named pipe (FIFO)" in lines[0] and str(out) in lines[0]
    assert (tmp_path / "x.png").is_symlink() and os.path.realpath(tmp_path / "chain.png") == str(fifo)
    import stat

    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(os.listdir(tmp_path)) == ["chain.png", "pipe.png", "x.png"]
    (tmp_path / "folder.png").mkdir()
    r = run_app("export", "--size", "160x90", "--out", str(tmp_path / "folder.png"), timeout=120)
    assert r.returncode == 1 and len(error_lines(r)) == 1


def _special(tmp_path, kind: str) -> str:
    """A path of the given kind for the guarded-reader cases (each under tmp_path, or a device)."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "pipe")
        return str(tmp_path / "pipe")
    if kind == "link_to_fifo":
        os.mkfifo(tmp_path / "pipe")
        (tmp_path / "link.k3view").symlink_to(tmp_path / "pipe")
        return str(tmp_path / "link.k3view")
    if kind == "directory":
        return str(tmp_path)
    return "/dev/zero"


WHAT = {"fifo": "a FIFO", "link_to_fifo": "a FIFO", "directory": "a directory", "dev_zero": "a character device"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
@pytest.mark.parametrize("option, kind", [("--view", "fifo"), ("--view", "link_to_fifo"), ("--view", "dev_zero"),
                                          ("--view", "directory"), ("--config", "fifo"), ("--config", "dev_zero")])
def test_a_special_file_as_view_or_config_exits_2_in_one_line_at_once(tmp_path, option, kind):
    """A FIFO as --view got no answer in 120 s, as --config it was killed at 180 s; /dev/zero ran
    out of memory. The guarded reader refuses each before reading a byte."""
    import time

    path = _special(tmp_path, kind)
    out = tmp_path / "x.png"
    start = time.monotonic()
    r = run_app("export", "--size", "320x200", "--out", str(out), option, path, timeout=60)
    took = time.monotonic() - start
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, lines)
    assert lines[0].startswith("k3-explorer export: error: ") and path in lines[0] and WHAT[kind] in lines[0]
    assert took < 30 and not out.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
@pytest.mark.parametrize("option", ["view", "--config"])
def test_the_gui_refuses_a_fifo_view_or_config_before_any_window(tmp_path, option):
    os.mkfifo(tmp_path / "pipe")
    r = run_app(*([] if option == "view" else [option]), str(tmp_path / "pipe"), timeout=60)
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1 and "a FIFO" in lines[0], (r.returncode, lines)


@pytest.mark.parametrize("command", [["export", "--out", "x.png"], []])
def test_an_empty_view_name_exits_2_in_one_line(tmp_path, command):
    """`--view ''` was silently ignored."""
    args = [*command, "--view", ""] if command else [""]
    r = run_app(*args, timeout=60)
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1 and "empty" in lines[0], (r.returncode, lines)


def _view_with_bias(tmp_path, expert: int, **changes) -> str:
    import json

    from app.files.viewfile import View

    doc = View(prompt="The robot", tokens=1, **changes).to_dict()
    doc["knobs"]["expert_bias"] = {str(expert): 2.0}
    path = tmp_path / "bias.k3view"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def test_a_view_biasing_a_missing_expert_exits_2_naming_the_field(tmp_path):
    """The CLI exited 1 "engine could not run"; the view check now names the field (exit 2)."""
    r = run_app("export", "--out", str(tmp_path / "x.png"), "--view", _view_with_bias(tmp_path, 896), timeout=60)
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, lines)
    assert "knobs.expert_bias" in lines[0] and "expert 896" in lines[0]
    # an expert K3 has but the --config model lacks (DeepSeek-V3: 256 routed experts)
    config = str(ROOT / "assets" / "configs" / "deepseek-v3.json")
    r = run_app("export", "--out", str(tmp_path / "x.png"), "--view", _view_with_bias(tmp_path, 300, layer=30),
                "--config", config, timeout=60)
    lines = error_lines(r)
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, lines)
    assert "knobs.expert_bias" in lines[0] and "expert 300" in lines[0] and "256" in lines[0]
