"""Training without MKL: every matmul and the one triangular solve as ATen's elementwise products and sums.

Why (issue 45): float32 training is bit for bit only on one CPU class, because its matmuls go through MKL's sgemm,
which picks its kernels by CPU vendor and ISA (and MKL_CBWR does not make Intel and AMD agree). The toy's matrices
are tiny (hidden 8, a few hundred tokens), so a matmul can be spelled as a broadcast product and a sum over the
shared axis; the triangular solve of KDA's chunked form (torch.linalg.solve_triangular, LAPACK) as forward
substitution. Then every floating-point operation of a training step, forward and backward (autograd of a product
and a sum is products and sums), runs in ATen's own vectorised loops, which compute.training.train pins to AVX2 on x86: the
same instructions in the same order on any CPU that has them.

Measured on a 2-core AMD EPYC (AVX2), the v2 recipe's first three losses: through MKL they change with MKL's
settings (default 5.38699, 5.271506, 5.340709; MKL_CBWR=COMPATIBLE 5.38699, 5.269616, 5.365835), through this mode
they do not (5.38699, 5.270288, 5.342038 with MKL at its default, MKL_CBWR=COMPATIBLE, and MKL_CBWR=SSE4_2 with
MKL_ENABLE_INSTRUCTIONS=SSE4_2). It was not run on an Intel CPU. Its numbers are not the shipped file's (that was
trained through MKL), so using it for the shipped toy means a new recipe and a new file: it is opt-in
(`python -m compute.training.train --portable`, compute.training.train.train(portable=True)).
"""
from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode

_MATMULS = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.bmm}


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b (numpy's broadcasting rules, 1-D operands included) as a product and a sum over the shared axis."""
    if a.dim() == 1 and b.dim() == 1:
        return (a * b).sum(-1)
    if a.dim() == 1:
        return matmul(a[None], b)[..., 0, :]
    if b.dim() == 1:
        return matmul(a, b[:, None])[..., 0]
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


def solve_unit_lower(L: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """X with L X = B for unit lower-triangular L [..., n, n] and B [..., n, m]: forward substitution, row by row."""
    rows: list[torch.Tensor] = []
    for i in range(L.shape[-1]):
        r = B[..., i, :]
        if i:
            r = r - (L[..., i, :i].unsqueeze(-1) * torch.stack(rows, -2)).sum(-2)
        rows.append(r)
    return torch.stack(rows, -2)


class NoBlas(TorchFunctionMode):
    """Inside it, torch's matmuls and the unit lower-triangular solve run as matmul / solve_unit_lower above;
    any other triangular solve raises (nothing in training makes one)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _MATMULS:
            return matmul(*args, **kwargs)
        if func is torch.Tensor.__rmatmul__:
            return matmul(args[1], args[0])
        if func is torch.linalg.solve_triangular:
            L, B = args[:2]
            if kwargs.get("upper", args[2] if len(args) > 2 else None) is not False or \
                    not kwargs.get("unitriangular", False) or kwargs.get("left", True) is not True:
                raise NotImplementedError("portable training solves unit lower-triangular systems only")
            return solve_unit_lower(L, B)
        return func(*args, **kwargs)


def mode(portable: bool):
    """NoBlas() when portable, else a context that changes nothing."""
    return NoBlas() if portable else contextlib.nullcontext()


__all__ = ["NoBlas", "matmul", "solve_unit_lower", "mode"]
