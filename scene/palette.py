"""Colour roles used everywhere in the app (3D scene, docks, exports), and the diverging value map.

One colour per kind of block; tensor cells use `diverging(values, scale)` (blue = negative, near-white = 0,
orange/red = positive), so a number looks the same in every view. Qt-free: colours are RGBA floats 0..1.
"""
from __future__ import annotations

import numpy as np

# role -> RGBA (0..1)
ROLES: dict[str, tuple[float, float, float, float]] = {
    "kda": (0.10, 0.66, 0.64, 1.0),  # teal: Kimi Delta Attention
    "mla": (0.55, 0.36, 0.85, 1.0),  # purple: Gated MLA
    "dense": (0.85, 0.55, 0.20, 1.0),  # amber: layer 1's dense MLP
    "activation": (0.32, 0.56, 0.92, 1.0),  # blue: activations flowing between blocks
    "weight": (0.50, 0.54, 0.60, 1.0),  # slate: weight matrices
    "state": (0.12, 0.75, 0.55, 1.0),  # green: KDA state / MLA latent cache (memory)
    "expert": (0.96, 0.70, 0.18, 1.0),  # gold: routed experts (lit when selected)
    "shared": (0.90, 0.45, 0.25, 1.0),  # orange: shared experts
    "norm": (0.70, 0.70, 0.75, 1.0),  # grey: RMSNorm / L2 norm
    "attnres": (0.93, 0.36, 0.55, 1.0),  # pink: block attention residuals
    "output": (0.95, 0.30, 0.30, 1.0),  # red: logits / LM head / sampled token
    "embedding": (0.35, 0.75, 0.95, 1.0),  # sky: embedding rows
    "background": (0.07, 0.08, 0.10, 1.0),
    "text": (0.92, 0.93, 0.95, 1.0),
    "label_mark": (120 / 255, 126 / 255, 140 / 255, 1.0),  # a plain label's side mark and leader line
    "no_gl_text": (235 / 255, 200 / 255, 120 / 255, 1.0),  # the message drawn where no GL frame could be made
}

_NEG = np.array([0.16, 0.42, 0.90])
_MID = np.array([0.93, 0.93, 0.93])
_POS = np.array([0.93, 0.40, 0.12])
_DARK = np.array([0.17, 0.17, 0.17])  # lit_diverging's zero, neutral: a part that does nothing stays dark


def role(name: str) -> tuple[float, float, float, float]:
    return ROLES[name]


def role_qcolor_tuple(name: str) -> tuple[int, int, int, int]:
    """0..255 ints, for QColor(*...)."""
    return tuple(int(round(c * 255)) for c in ROLES[name])  # type: ignore[return-value]


def diverging(values: np.ndarray, scale: float | None = None) -> np.ndarray:
    """Map values to RGBA [..., 4]: sign -> hue (blue < 0 < orange), |v|/scale -> saturation.

    scale defaults to max |v| (so the largest magnitude is fully saturated); values beyond scale clip.
    """
    v = np.asarray(values, dtype=np.float64)
    if scale is None:
        scale = float(np.nanmax(np.abs(v))) if v.size else 1.0
    scale = scale if scale > 0 and np.isfinite(scale) else 1.0
    t = np.clip(np.nan_to_num(v / scale), -1.0, 1.0)[..., None]
    rgb = np.where(t < 0, _MID + (-t) * (_NEG - _MID), _MID + t * (_POS - _MID))
    return np.concatenate([rgb, np.ones(rgb.shape[:-1] + (1,))], axis=-1).astype(np.float32)


def lit_diverging(values: np.ndarray, scale: float | None = None) -> np.ndarray:
    """As `diverging`, with the same blue and orange ends, but dark at 0 (a lit map: what matters glows, what
    does nothing stays dark — the heads' and experts' total effects in the exploded layer)."""
    v = np.asarray(values, dtype=np.float64)
    if scale is None:
        scale = float(np.nanmax(np.abs(v))) if v.size else 1.0
    scale = scale if scale > 0 and np.isfinite(scale) else 1.0
    t = np.clip(np.nan_to_num(v / scale), -1.0, 1.0)[..., None]
    rgb = np.where(t < 0, _DARK + (-t) * (_NEG - _DARK), _DARK + t * (_POS - _DARK))
    return np.concatenate([rgb, np.ones(rgb.shape[:-1] + (1,))], axis=-1).astype(np.float32)
