"""Plain data for the contribution route lit through the 3D stack (feature I3, issue 21).

`lit_blocks` takes plain (layer, part, value) direct contributions to the chosen word's logit and a threshold
and returns the blocks that glow: |value| >= threshold, with the sign that picks the palette role (positive or
negative). Routed experts and the shared expert fold into their layer's "ffn" block (the 3D stack draws one FFN
slab per layer), summing their values. The GL drawing is not built yet; this module is the data it will draw.
"""
from __future__ import annotations

__all__ = ["block_values", "lit_blocks"]


def block_values(contributions) -> dict[tuple[int, str], float]:
    """(layer, part) -> value, with "expert N" and "shared" summed into (layer, "ffn")."""
    out: dict[tuple[int, str], float] = {}
    for layer, part, value in contributions:
        key_part = "ffn" if (part.startswith("expert") or part == "shared") else part
        key = (int(layer), key_part)
        out[key] = out.get(key, 0.0) + float(value)
    return out


def lit_blocks(contributions, threshold: float) -> dict[tuple[int, str], int]:
    """(layer, part) -> +1 / -1 for every block with |value| >= threshold (threshold must be >= 0)."""
    if not threshold >= 0:
        raise ValueError(f"route threshold must be >= 0, got {threshold!r}")
    return {k: (1 if v >= 0 else -1) for k, v in block_values(contributions).items() if abs(v) >= threshold}
