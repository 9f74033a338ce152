"""File-system fixtures shared by the writer tests: a real small tmpfs (a full disk, a read-only one)."""
from __future__ import annotations

import contextlib
import os
import subprocess

import pytest


@contextlib.contextmanager
def tmpfs(path, options: str):
    """A real small file system mounted at `path` with mount `options` ("size=64k", "size=64k,ro"); needs
    root and mount, and skips the test where that is not possible."""
    path.mkdir(exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)
