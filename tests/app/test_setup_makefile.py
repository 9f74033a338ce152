"""`make`'s set-up on any Linux machine: PyTorch's CPU build from PyTorch's CPU index, with a fallback to pip's
configured index when that cannot be reached; a half-made .venv made again with one line saying so. Run against
a fake venv whose python logs what it is asked (no package is installed)."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/bash
echo "$@" >> {log}
case "$1 $2" in
  "-m pip") exit {pip_rc} ;;
  "-c "*) exit {probe_rc} ;;  # the CPU index's reachability probe
esac
exit 0
"""


def _venv(tmp_path: Path, pip_rc: int = 0, probe_rc: int = 0) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin/python"
    python.write_text(FAKE_PYTHON.format(log=tmp_path / "calls.log", pip_rc=pip_rc, probe_rc=probe_rc))
    python.chmod(0o755)
    return venv


def _make(tmp_path, *args, **env):
    return subprocess.run(["make", "-s", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **env))


def _calls(tmp_path) -> list[str]:
    return (tmp_path / "calls.log").read_text().splitlines()


def test_torch_comes_from_the_cpu_index_when_it_answers(tmp_path):
    venv = _venv(tmp_path)
    done = _make(tmp_path, "torch", f"VENV={venv}")
    assert done.returncode == 0, done.stderr
    installs = [c for c in _calls(tmp_path) if c.startswith("-m pip install")]
    assert installs == ["-m pip install -q --retries 0 --timeout 15 --index-url https://download.pytorch.org/whl/cpu "
                        "torch==2.13.0"]
    assert (venv / ".k3-torch").read_text() == "torch==2.13.0"
    assert "cannot be reached" not in done.stdout
    done = _make(tmp_path, "torch", f"VENV={venv}")  # recorded: nothing to do
    assert sum(c.startswith("-m pip install") for c in _calls(tmp_path)) == 1


def test_an_unreachable_cpu_index_falls_back_with_one_line(tmp_path):
    venv = _venv(tmp_path, probe_rc=1)  # as on a machine that reaches only its own package mirror
    done = _make(tmp_path, "torch", f"VENV={venv}")
    assert done.returncode == 0, done.stderr
    installs = [c for c in _calls(tmp_path) if c.startswith("-m pip install")]
    assert installs == ["-m pip install -q torch==2.13.0"]
    said = [line for line in done.stdout.splitlines() if "cannot be reached" in line]
    assert len(said) == 1 and "https://download.pytorch.org/whl/cpu" in said[0]
    assert (venv / ".k3-torch").read_text() == "torch==2.13.0"


def test_a_chosen_torch_skips_the_cpu_index(tmp_path):
    venv = _venv(tmp_path)
    done = _make(tmp_path, "torch", f"VENV={venv}", "TORCH=torch")
    assert done.returncode == 0, done.stderr
    assert [c for c in _calls(tmp_path) if c.startswith("-m pip install")] == ["-m pip install -q torch"]


def test_a_half_made_venv_is_made_again_with_one_line(tmp_path):
    venv = _venv(tmp_path, pip_rc=1)  # python runs, pip does not: what Debian leaves without python3-venv
    fake_python3 = tmp_path / "python3"
    fake_python3.write_text(f"#!/bin/bash\necho \"python3 $@\" >> {tmp_path}/calls.log\n"
                            f"mkdir -p {venv}/bin && cp {tmp_path}/good-python {venv}/bin/python\n")
    fake_python3.chmod(0o755)
    (tmp_path / "good-python").write_text("#!/bin/bash\nexit 0\n")
    (tmp_path / "good-python").chmod(0o755)
    done = _make(tmp_path, "venv-check", f"VENV={venv}", f"PYTHON={fake_python3}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"venv: {venv} has no working python or pip (half made): making it again"]
    assert f"python3 -m venv {venv}" in _calls(tmp_path)
    done = _make(tmp_path, "venv-check", f"VENV={venv}", f"PYTHON={fake_python3}")  # whole now: left alone
    assert done.returncode == 0 and done.stdout == ""


def test_a_failed_venv_says_what_to_install_and_leaves_none(tmp_path):
    venv = tmp_path / "venv"
    fake_python3 = tmp_path / "python3"
    fake_python3.write_text(f"#!/bin/bash\nmkdir -p {venv}/bin\necho 'ensurepip is not available' >&2\nexit 1\n")
    fake_python3.chmod(0o755)
    done = _make(tmp_path, "venv-check", f"VENV={venv}", f"PYTHON={fake_python3}")
    assert done.returncode != 0
    assert "sudo apt-get install -y python3-venv" in done.stdout
    assert not venv.exists()  # the next run starts clean


def test_the_qt_requirement_is_a_range_that_keeps_6_12_0_out():
    """A range, not a pin: joining an environment with another 6.11 PySide6 does not downgrade it; 6.12.0 (which
    crashes under pyqtgraph, docs/spec/platform.md) is refused, and the PySide6 the suite runs is admitted."""
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (qt,) = [Requirement(d) for d in deps if d.startswith("PySide6")]
    assert qt.name == "PySide6-Essentials" and "==" not in str(qt.specifier)
    assert not qt.specifier.contains("6.12.0") and not qt.specifier.contains("6.12.1")
    assert qt.specifier.contains(metadata.version("PySide6-Essentials"))


def test_ci_runs_the_slow_tests_and_a_plain_run_skips_them():
    """.ci/run runs the README's test command with K3_SLOW=1 (a make variable the Makefile exports), so the tests marked slow (fresh venvs, the bundle,
    the warm-up child) run in CI; the suite's conftest skips them only when K3_SLOW is unset or 0."""
    lines = [ln.split("#")[0].strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    assert "make test K3_SLOW=1" in lines
    import tests.conftest as conftest

    assert conftest.SLOW == (os.environ.get("K3_SLOW", "") not in ("", "0"))
    slow_files = [p for p in (ROOT / "tests").rglob("test_*.py") if "pytest.mark.slow" in p.read_text()]
    assert {p.name for p in slow_files} >= {"test_wheel_namespace.py", "test_editable_namespace.py",
                                            "test_bundle.py", "test_kernel_warmup.py"}


PARTS_PYTHON = """#!/bin/bash
echo "$@" >> {log}
case "$*" in
  *"not alone"*) exit {parallel_rc} ;;
  *"-m alone"*) exit {alone_rc} ;;
esac
exit 0
"""


@pytest.mark.parametrize("parallel_rc, alone_rc, want", [
    (0, 0, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1),
    (5, 0, 0), (0, 5, 0),  # a part with no test of the files named: passed
    (5, 5, 5),  # nothing tested at all: fails, as .ci/run's "a run that collects no test"
    (2, 5, 1),  # interrupted or a usage error
])
def test_make_test_runs_both_parts_and_fails_when_either_fails(tmp_path, parallel_rc, alone_rc, want):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin/python"
    python.write_text(PARTS_PYTHON.format(log=tmp_path / "calls.log", parallel_rc=parallel_rc, alone_rc=alone_rc))
    python.chmod(0o755)
    # PYTEST_WORKERS named: a suite started as `make test PYTEST_WORKERS=3` passes its variables down (MAKEFLAGS)
    done = _make(tmp_path, "test-parts", f"VENV={venv}", "PYTEST_WORKERS=2", "PYTEST_ARGS=tests/app/test_x.py")
    calls = _calls(tmp_path)
    assert len(calls) == 2, calls  # both parts run, whatever the first gave
    assert "-n 2 --dist loadfile --max-worker-restart=0 -m not alone tests/app/test_x.py" in calls[0]
    assert calls[1].endswith("-m alone tests/app/test_x.py") and "-n" not in calls[1].split()
    assert (done.returncode == 0) == (want == 0), (done.returncode, done.stdout)  # make exits 2 for any failure
    if want == 5:
        assert "no test selected" in done.stdout
    elif want:
        assert f"the parallel part exited {parallel_rc}, the alone part {alone_rc}" in done.stdout


COMPILE_PYTHON = """#!/bin/bash
echo "$@" >> {log}
[ "$1 $2" = "-m pytest" ] && echo "pytest sees PYTHONDONTWRITEBYTECODE=[$PYTHONDONTWRITEBYTECODE]" >> {log}
case "$1" in
  -c) case "$2" in *purelib*) echo {purelib} ;; esac ;;  # the venv's site-packages, as sysconfig names it
esac
exit 0
"""


def test_the_test_venv_and_the_checkout_are_byte_compiled_before_the_tests(tmp_path):
    """Python never writes a .pyc under PYTHONDONTWRITEBYTECODE (set in these machines' shells): without compileall, each child
    process of the suite compiled numba, PyOpenGL, numpy, pyqtgraph and the app from source again (make run's
    --no-compile leaves them as source). The test venv's packages are compiled once, when it is made, after the
    test requirements; the checkout's own modules on every `make test`, before the kernels' warm-up and the tests."""
    venv, purelib = tmp_path / "venv", tmp_path / "site-packages"
    (venv / "bin").mkdir(parents=True)
    purelib.mkdir()
    python = venv / "bin/python"
    python.write_text(COMPILE_PYTHON.format(log=tmp_path / "calls.log", purelib=purelib))
    python.chmod(0o755)
    (venv / ".k3-torch").write_text("torch==2.13.0")
    (venv / ".k3-app-installed").touch()
    done = _make(tmp_path, str(venv / ".k3-installed"), f"VENV={venv}")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = _calls(tmp_path)
    test_deps = calls.index('-m pip install -q -e .[test]')
    compiles = [i for i, c in enumerate(calls) if c.startswith("-m compileall")]
    assert [calls[i] for i in compiles] == [f"-m compileall -q -j 0 {purelib}"] and compiles[0] > test_deps, calls

    (tmp_path / "calls.log").unlink()
    done = _make(tmp_path, "test", f"VENV={venv}", "PYTEST_WORKERS=2", PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = _calls(tmp_path)
    # both parts write the bytecode of the rewritten test modules (and their children of what they import)
    assert calls.count("pytest sees PYTHONDONTWRITEBYTECODE=[]") == 2, calls
    calls = [c for c in calls if not c.startswith("pytest sees")]
    project = calls.index("-m compileall -q -j 0 app compute scene")
    first_test = next(i for i, c in enumerate(calls) if c.startswith("-m pytest"))
    warm = next(i for i, c in enumerate(calls) if c.startswith("-m app.engine.kernel_warmup"))
    assert project < warm < first_test, calls
    assert not any(c.startswith("-m compileall") and str(purelib) in c for c in calls), calls  # the venv: once
