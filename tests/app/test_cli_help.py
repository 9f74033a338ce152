"""`k3-explorer --help` names every form (the export subcommand, the warm-up, the desktop launcher), the exit codes
and the environment variables; `--man` writes a man page that groff renders cleanly; `--warm-kernels` succeeds
with 0."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _app(*args, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=120)


def test_help_names_the_forms_exit_codes_and_environment():
    done = _app("--help")
    assert done.returncode == 0, done.stderr
    usage = done.stdout.split("\n\n")[0]
    assert usage.startswith("usage: k3-explorer [options] [FILE.k3view]")
    assert "k3-explorer export --out FILE" in usage and "k3-explorer --warm-kernels" in usage
    assert "--install-desktop" in usage and "--man" in usage
    epilog = done.stdout[done.stdout.index("exit status:"):]
    codes = re.findall(r"^  (\d+(?:, \d+)*) ", epilog, re.M)
    assert codes == ["0", "1", "2", "3", "130, 143"]
    for name in ("K3_NO_NUMBA", "K3_NO_FIRST_RUN_HINT", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        assert re.search(rf"^  {name}\b", epilog, re.M), name
    assert "--warm-kernels" in done.stdout.split("options:")[1]  # documented, no longer hidden


def test_the_exit_codes_in_help_are_the_ones_the_export_uses():
    """2: a bad argument; the epilog's words for it match (an independent run, not the table)."""
    done = _app("export", "--out", "x.png", "--layer", "0")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    done = _app("--no-such-option")
    assert done.returncode == 2 and "see --help" in done.stderr


def test_warm_kernels_without_numba_says_so_and_exits_3():
    done = _app("--lang", "en", "--warm-kernels", K3_NO_NUMBA="1")  # not first: the parser hands it over too
    assert done.returncode == 3 and "K3_NO_NUMBA" in done.stderr


def test_warm_kernels_if_needed_exits_0_when_the_cache_is_ready():
    from compute import fused_nb

    if not fused_nb.cache_ready():
        pytest.skip("the compiled kernels are not cached here (make test warms them first)")
    done = _app("--warm-kernels", "--if-needed")
    assert done.returncode == 0, done.stderr


def test_man_page_renders_with_every_section(tmp_path):
    done = _app("--man")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith(".TH K3\\-EXPLORER 1 ")
    sections = re.findall(r"^\.SH (.+)$", page, re.M)
    assert sections == ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXPORT OPTIONS", "EXIT STATUS", "ENVIRONMENT",
                        "FILES", "EXAMPLES", "SEE ALSO"]
    assert all(ord(c) < 128 for c in page)  # groff without preconv reads ASCII: others are \[uXXXX]
    for option in ("\\-\\-lang", "\\-\\-warm\\-kernels", "\\-\\-install\\-desktop", "\\-\\-animate", "\\-\\-orbit"):
        assert f"\\fB{option}\\fR" in page, option
    (tmp_path / "k3-explorer.1").write_text(page)
    if not shutil.which("groff"):
        pytest.skip("groff not installed: structure checked only")
    rendered = subprocess.run(["groff", "-man", "-Tutf8", "-ww", str(tmp_path / "k3-explorer.1")], capture_output=True,
                              text=True, timeout=60, env=dict(os.environ, LC_ALL="C.UTF-8"))
    assert rendered.returncode == 0 and not rendered.stderr.strip(), rendered.stderr  # not even a warning
    text = re.sub(r".\x08", "", rendered.stdout)  # overstrike (bold) removed
    assert "k3-explorer - a 3D explorer of one Kimi K3 inference" in text
    assert "로봇이 컵을 집었다" in text and "--install-desktop" in text
