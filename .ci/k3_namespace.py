"""K3 Explorer's install namespace, shared by the wheel and the editable install: an installed K3
Explorer owns only the name k3_explorer; the checkout's top-level folders app/, scene/, compute/, assets/ become
k3_explorer.app, ... and their absolute imports are rewritten to match, as pip's vendoring tool does.

Rewritten: `import X...` / `from X... import` statements and string literals that name an existing submodule
exactly ("app.docks.inspector" for the registry's import_module, "app.engine.kernel_warmup" for `python -m`); i18n keys
such as "app.cli.bad_scale" name no module and stay. Line numbers never change (tracebacks point at the checkout's
lines). Imports nothing outside the standard library: the editable install's finder carries this file's text
(.ci/k3_build_backend.py, build_editable)."""
from __future__ import annotations

import re

NAMESPACE = "k3_explorer"
TOP = ("app", "scene", "compute", "assets")
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)(%s)(?=[\s.])" % "|".join(TOP), re.M)

INIT = '''"""K3 Explorer, installed: `from k3_explorer import render, run, explain`; `python -m k3_explorer`."""
from k3_explorer.app import __version__

__all__ = ["__version__", "explain", "render", "run"]


def __getattr__(name):  # render/run/explain load the engine (and Qt) only when asked for
    if name in ("render", "run", "explain"):
        from k3_explorer.app import api
        return getattr(api, name)
    raise AttributeError(f"module 'k3_explorer' has no attribute {name!r}")
'''
MAIN = '''"""`python -m k3_explorer`: the k3-explorer command."""
import sys

from k3_explorer.app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
'''


def modules_of(names) -> set[str]:
    """Dotted names of every module and package among relative paths (app/docks/x.py -> app.docks.x)."""
    out = set()
    for n in names:
        if n.endswith(".py") and n.split("/")[0] in TOP:
            parts = n[:-3].split("/")
            out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def rewrite_source(text: str, modules: set[str]) -> str:
    text = _IMPORT.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{NAMESPACE}.{m[4]}", text)
    dotted = sorted((m for m in modules if "." in m), key=len, reverse=True)  # a bare "assets" is a folder name
    if not dotted:
        return text
    pattern = re.compile(r"""(["'])(%s)\1""" % "|".join(re.escape(m) for m in dotted))
    return pattern.sub(lambda m: f"{m[1]}{NAMESPACE}.{m[2]}{m[1]}", text)


def rewrite_entry_points(text: str, modules: set[str]) -> str:
    text = rewrite_source(text, modules)
    return re.sub(r"=\s*(%s)([.:])" % "|".join(TOP), rf"= {NAMESPACE}.\1\2", text)
