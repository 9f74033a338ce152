"""The standalone bundle's script (PyInstaller, .ci/k3-explorer.spec): the app's own entry point, unchanged, so the
bundle's executable takes the same arguments as `k3-explorer` (and the hidden --warm-kernels, its warm-up child)."""
import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
