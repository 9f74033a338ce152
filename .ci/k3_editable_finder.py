"""`pip install -e .` of K3 Explorer (PEP 660, .ci/k3_build_backend.py build_editable): like the wheel it gives the
environment only the name k3_explorer, served live from the checkout. A meta-path finder maps k3_explorer.app,
k3_explorer.scene, k3_explorer.compute, k3_explorer.assets (and everything below them) to the checkout's folders
and rewrites their imports as they load, with the wheel's own rewrite (k3_namespace.py, whose text the backend puts
here in place of the import below). The bare names app, scene, compute, assets stay the user's.

Bytecode goes to the checkout's __pycache__ under its own name (x.cpython-311.opt-k3explorer.pyc) and records
what it was rewritten against: the checkout's own `import app.x` keeps its x.cpython-311.pyc, never mixed up
with a rewritten one (both would be keyed on the same source mtime)."""
import importlib.machinery
import importlib.util
import marshal
import os
import sys

from k3_namespace import NAMESPACE, TOP, modules_of, rewrite_source  # K3_NAMESPACE_TEXT

ROOT = None  # the checkout; set by install()
TAG = "k3explorer"


def _tree_modules(root: str) -> set[str]:
    names = []
    for top in TOP:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x != "__pycache__" and not x.startswith(".")]
            rel = os.path.relpath(d, root).replace(os.sep, "/")
            names += [f"{rel}/{f}" for f in files if f.endswith(".py")]
    return modules_of(names)


def _own_numba_cache(module) -> None:
    """numba's cache index pickles the compiled signatures' record types by module name (compute.compiled.fused_nb_layout
    in the checkout's own `python -m app`, k3_explorer.compute.compiled.fused_nb_layout here), while the cache's place is
    keyed on the source file, which both share: an index written by one could not be read by the other
    ("No module named 'compute'"). The editable install's kernels get their own folder, numba-editable beside
    numba in the user's cache (compute.compiled.numba_setup.cache_dir_setup keeps a NUMBA_CACHE_DIR set before it)."""
    setup = module.__dict__.get("cache_dir_setup")
    if setup is None:
        return

    def cache_dir_setup():
        if not os.environ.get("NUMBA_CACHE_DIR"):
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            d = os.path.join(base, "k3-explorer", "numba-editable")
            try:
                os.makedirs(d, exist_ok=True)
                os.environ["NUMBA_CACHE_DIR"] = d
            except OSError:
                pass
        setup()

    module.cache_dir_setup = cache_dir_setup


class _Loader(importlib.machinery.SourceFileLoader):
    """The checkout's source file, rewritten into the k3_explorer namespace."""

    def exec_module(self, module):
        super().exec_module(module)
        if module.__name__ == f"{NAMESPACE}.compute.compiled.numba_setup":
            _own_numba_cache(module)

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        data = self.get_data(path)
        st = os.stat(path)
        key = _FINDER.key()
        # the header: the interpreter's magic, the source's mtime and size (as a .pyc), what the rewrite saw
        head = (importlib.util.MAGIC_NUMBER + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little") + key)
        pyc = importlib.util.cache_from_source(path, optimization=TAG)
        try:
            with open(pyc, "rb") as f:
                cached = f.read()
            if cached.startswith(head):
                return marshal.loads(cached[len(head):])
        except (OSError, ValueError, EOFError, TypeError):
            pass
        text = rewrite_source(importlib.util.decode_source(data), _FINDER.modules())
        code = compile(text, path, "exec", dont_inherit=True)
        if not sys.dont_write_bytecode:
            try:
                os.makedirs(os.path.dirname(pyc), exist_ok=True)
                tmp = f"{pyc}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(head + marshal.dumps(code))
                os.replace(tmp, pyc)
            except OSError:  # a read-only checkout: compile each time
                pass
        return code


class _Finder:
    """Finds k3_explorer.<app|scene|compute|assets>[.<...>] in the checkout; anything else is not its business."""

    def __init__(self, root: str):
        self.root = root
        self._modules = None
        self._key = None

    def modules(self) -> set[str]:
        if self._modules is None:
            self._modules = _tree_modules(self.root)
        return self._modules

    def key(self) -> bytes:
        """What a rewritten module depends on besides its own source: the checkout's module names and this file."""
        if self._key is None:
            import hashlib  # here: the .pth imports this module in every process of the venv

            h = hashlib.sha256("\n".join(sorted(self.modules())).encode())
            with open(__file__, "rb") as f:
                h.update(f.read())
            self._key = h.digest()[:16]
        return self._key

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if len(parts) < 2 or parts[0] != NAMESPACE or parts[1] not in TOP:
            return None
        base = os.path.join(self.root, *parts[1:])
        if os.path.isfile(os.path.join(base, "__init__.py")):
            origin = os.path.join(base, "__init__.py")
            spec = importlib.util.spec_from_file_location(fullname, origin, loader=_Loader(fullname, origin),
                                                          submodule_search_locations=[base])
        elif os.path.isfile(base + ".py"):
            spec = importlib.util.spec_from_file_location(fullname, base + ".py", loader=_Loader(fullname, base + ".py"))
        else:
            return None
        spec.cached = importlib.util.cache_from_source(spec.origin, optimization=TAG)
        return spec

    def invalidate_caches(self):
        self._modules = self._key = None


_FINDER = None


def install(root: str) -> None:
    """Called by the .pth file at start-up: serve k3_explorer.* from the checkout at `root`. First on
    sys.meta_path: the path finder would otherwise load k3_explorer.app.x from the package's folder unrewritten."""
    global ROOT, _FINDER
    if _FINDER is not None or not os.path.isdir(os.path.join(root, "app")):
        return  # installed twice, or the checkout is gone (k3_explorer then fails to import, saying so)
    ROOT = root
    _FINDER = _Finder(root)
    sys.meta_path.insert(0, _FINDER)
