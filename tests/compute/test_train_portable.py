"""compute.training.train_portable (issue 45): training whose matmuls and triangular solve skip MKL, so MKL's choice of
kernels (by CPU vendor and ISA, or by MKL_CBWR) cannot change its numbers."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from compute.training import train_portable as tp

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("sa,sb", [((5, 3), (3, 4)), ((2, 5, 3), (3, 4)), ((7, 1, 2, 3), (6, 3, 2)), ((3,), (3, 4)),
                                   ((5, 3), (3,)), ((4,), (4,)), ((2, 1, 1, 4), (3, 4, 5))])
def test_matmul_is_numpys(sa, sb):
    g = np.random.default_rng(1)
    a, b = g.standard_normal(sa), g.standard_normal(sb)
    want = np.matmul(a, b)
    got = tp.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_forward_substitution_solves_the_unit_lower_system():
    g = torch.Generator().manual_seed(2)
    L = torch.tril(torch.randn(3, 2, 9, 9, generator=g, dtype=torch.float64), -1) * 0.3 + torch.eye(9)
    B = torch.randn(3, 2, 9, 4, generator=g, dtype=torch.float64)
    X = tp.solve_unit_lower(L, B)
    assert torch.allclose(L @ X, B, atol=1e-12)
    assert torch.allclose(X, torch.linalg.solve_triangular(L, B, upper=False, unitriangular=True), atol=1e-12)


def test_inside_the_mode_every_matmul_spelling_is_the_product_and_sum():
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(4, 6, 5, generator=g), torch.randn(4, 5, 3, generator=g)
    want = tp.matmul(a, b)
    with tp.NoBlas():
        for got in (a @ b, torch.matmul(a, b), a.matmul(b), torch.bmm(a, b)):
            assert torch.equal(got, want)
        assert torch.equal(torch.mm(a[0], b[0]), tp.matmul(a[0], b[0]))
        L = torch.eye(3) + torch.tril(torch.ones(3, 3), -1)
        assert torch.equal(torch.linalg.solve_triangular(L, b[0, :3], upper=False, unitriangular=True),
                           tp.solve_unit_lower(L, b[0, :3]))
        with pytest.raises(NotImplementedError):
            torch.linalg.solve_triangular(L.T, b[0, :3], upper=True)


def test_a_portable_step_is_the_same_math():
    """The first losses through MKL and through the products agree to float32 rounding (they are not bitwise equal:
    the sums are taken in another order)."""
    from compute.training import train as tr

    kw = dict(seed=1, steps=2, batch=2, seq_len=8, warmup=1)
    a = tr.train(**kw)[1]["losses"]
    b = tr.train(portable=True, **kw)[1]
    assert b["portable"] is True and b["losses"][0] == pytest.approx(a[0], abs=1e-4)


CHILD = """
import json, sys
from compute.training import train as tr
r = tr.train(seed=0, steps=3, batch=2, seq_len=10, warmup=1, stop_after=2, soft=True, portable=True)[1]
print(json.dumps(r["losses"]))
"""


def test_portable_losses_do_not_change_with_mkls_kernels():
    """The same two portable steps under MKL's default, MKL_CBWR=COMPATIBLE and SSE4_2 kernels (through MKL the v2
    recipe's second loss moves with them: 5.271506 at the default, 5.269616 with COMPATIBLE): bit for bit equal."""
    got = []
    base = {k: v for k, v in os.environ.items() if not k.startswith("MKL_")}
    # the three children at once (most of each is start-up: torch, dynamo, numba; MKL reads its settings once per
    # process, so each setting needs a process of its own), read in the same order
    children = [subprocess.Popen([sys.executable, "-c", CHILD], cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=dict(base, PYTHONPATH=str(ROOT), **extra))
                for extra in ({}, {"MKL_CBWR": "COMPATIBLE"},
                              {"MKL_CBWR": "SSE4_2", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"})]
    try:
        for p in children:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0, err[-2000:]
            got.append(json.loads(out.splitlines()[-1]))
    finally:
        for p in children:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert got[0] == got[1] == got[2] and len(got[0]) == 2 and all(np.isfinite(got[0])), got


def test_the_command_takes_portable_but_not_with_a_recipe(tmp_path, capsys):
    from compute.training import train_cli

    a, _, _ = train_cli.parse(["--portable", "--steps", "1", "--out", str(tmp_path / "w.npz")])
    assert a.portable is True
    with pytest.raises(SystemExit) as e:
        train_cli.parse(["--portable", "--recipe", "v2", "--out", str(tmp_path / "w.npz")])
    assert e.value.code == 2 and "--portable" in capsys.readouterr().err
