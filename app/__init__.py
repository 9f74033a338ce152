"""K3 Explorer's Qt application. `__version__` is the one place the version is written (pyproject.toml reads
it from here)."""

__version__ = "0.1.0"
