"""Shared helpers of the tests that read the code (ast): the docstring constants to leave out."""
from __future__ import annotations

import ast


def docstring_ids(tree: ast.AST) -> set[int]:
    """id() of every docstring constant (module, class, function) in tree."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out
