"""Data files of K3 Explorer: model configs, UI string catalogues, explanation texts, icons.

`asset_path("configs/kimi-k3.json")` returns the absolute path of a file in this folder.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def asset_path(*parts: str) -> Path:
    """Absolute path of a file under assets/."""
    return ROOT.joinpath(*parts)
