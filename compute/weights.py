"""Save and load the toy K3's weights as a versioned asset (compressed .npz, no pickles).

The file holds one array per weight, named by its place in the engine's per-layer dicts
("L12.kda.in", "L1.moe.w13", "embedding", "lm_head", "final_norm", "w_out"), and "__meta__": UTF-8 JSON bytes
(uint8) with the format version, config name, toy dims, seed, vocabulary and the training report.

Storage: BF16 (the top 16 bits of a float32, rounded to nearest even, kept as uint16) for every weight
except the few where 8 bits of mantissa would move the model: the router bias (Quantile Balancing sets
it to the 1e-3 scale where top-k ties are decided), KDA's A_log and dt_bias — those stay float32.

Loading never executes anything from the file (np.load with allow_pickle=False) and checks every array's
name, shape, dtype and finiteness against the layout the engine expects; any mismatch raises
WeightsError with a one-line message.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

FORMAT = "k3-explorer-toy-weights"
FORMAT_VERSION = 1
ASSET_VERSION = "v1"
ASSET_NAME = f"toy-k3-{ASSET_VERSION}.npz"
_F32_KEYS = ("moe.bias", "kda.A_log", "kda.dt_bias")


class WeightsError(ValueError):
    """A weights file that cannot be used (missing, corrupt, or not for this model)."""


def default_path() -> Path:
    """The shipped asset: assets/weights/toy-k3-<version>.npz."""
    from assets import asset_path

    return asset_path("weights", ASSET_NAME)


# ---------------------------------------------------------------------------------------------------- bf16
def to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float array → uint16 BF16 bits (round to nearest even; finite inputs)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    """uint16 BF16 bits → float32."""
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def quantize(name: str, a: np.ndarray) -> np.ndarray:
    """The stored form of weight `name`: float32 for the precision-critical keys, BF16 bits otherwise."""
    if name.endswith(_F32_KEYS):
        return np.ascontiguousarray(a, dtype=np.float32)
    return to_bf16_bits(a)


def dequantize(a: np.ndarray) -> np.ndarray:
    return from_bf16_bits(a) if a.dtype == np.uint16 else a


# ---------------------------------------------------------------------------------------------------- layout
def flatten(layers: list[dict], globals_: dict) -> dict[str, np.ndarray]:
    """Engine weight dicts (numpy or torch leaves) → {name: numpy array}. None leaves are skipped."""
    return {k: (v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v))
            for k, v in flatten_layout(layers, globals_).items()}


def flatten_layout(layers: list[dict], globals_: dict) -> dict:
    """Like flatten, keeping the leaves as they are (e.g. shape-only tensors)."""
    out: dict = {}

    def put(prefix: str, obj) -> None:
        if obj is None:
            return
        if isinstance(obj, dict):
            for k, v in obj.items():
                put(f"{prefix}.{k}" if prefix else k, v)
            return
        out[prefix] = obj

    for li, w in enumerate(layers):
        put(f"L{li}", w)
    for k, v in globals_.items():
        put(k, v)
    return out


def unflatten_into(template_layers: list[dict], template_globals: dict, arrays: dict[str, np.ndarray], convert
                   ) -> tuple[list[dict], dict]:
    """The template's structure with every leaf replaced by convert(arrays[name]); None leaves stay None."""
    def fill(prefix: str, obj):
        if obj is None:
            return None
        if isinstance(obj, dict):
            return {k: fill(f"{prefix}.{k}" if prefix else k, v) for k, v in obj.items()}
        return convert(arrays[prefix])

    layers = [fill(f"L{li}", w) for li, w in enumerate(template_layers)]
    return layers, {k: fill(k, v) for k, v in template_globals.items()}


# ---------------------------------------------------------------------------------------------------- files
def save(path: str | Path, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write the arrays (quantized, see the module docstring) and meta to a compressed .npz."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(meta, format=FORMAT, format_version=FORMAT_VERSION)
    data = {name: quantize(name, a) for name, a in arrays.items()}
    for name, a in data.items():
        if a.dtype == np.float32 and not np.isfinite(a).all():
            raise WeightsError(f"weight {name} is not finite; nothing written")
    data["__meta__"] = np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez_compressed(f, **data)
    return path


def read(path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """({name: float32 array}, meta) of a weights file. Raises WeightsError for an unreadable file."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"weights file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            raw = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise WeightsError(f"weights file {path.name} is not a readable .npz: {e}") from None
    m = raw.pop("__meta__", None)
    if m is None or m.dtype != np.uint8 or m.ndim != 1:
        raise WeightsError(f"weights file {path.name} has no metadata entry")
    try:
        meta = json.loads(m.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise WeightsError(f"weights file {path.name} has unreadable metadata") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise WeightsError(f"weights file {path.name} is not a K3 Explorer toy-weights file")
    if meta.get("format_version") != FORMAT_VERSION:
        raise WeightsError(f"weights file {path.name} has format version {meta.get('format_version')!r}; "
                           f"this build reads {FORMAT_VERSION}")
    arrays = {}
    for k, a in raw.items():
        if a.dtype not in (np.uint16, np.float32):
            raise WeightsError(f"weight {k} in {path.name} has dtype {a.dtype}; expected bf16 bits or float32")
        f = dequantize(a)
        if not np.isfinite(f).all():
            raise WeightsError(f"weight {k} in {path.name} is not finite")
        arrays[k] = f
    return arrays, meta


def check(arrays: dict[str, np.ndarray], meta: dict, expected: dict[str, tuple[int, ...]], config_name: str,
          dims: dict, vocab: list[str], name: str = "weights") -> None:
    """Raise WeightsError unless the file is for this config, these toy dims and this vocabulary, and holds
    exactly the expected arrays with the expected shapes."""
    if meta.get("config") != config_name:
        raise WeightsError(f"{name} are for config {meta.get('config')!r}, not {config_name!r}")
    if meta.get("dims") != dims:
        raise WeightsError(f"{name} are for toy dims {meta.get('dims')}, not {dims}")
    if meta.get("vocab") != list(vocab):
        raise WeightsError(f"{name} are for another toy vocabulary ({len(meta.get('vocab') or [])} pieces)")
    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        raise WeightsError(f"{name}: missing {missing[:3]} extra {extra[:3]}")
    for k, shape in expected.items():
        if tuple(arrays[k].shape) != tuple(shape):
            raise WeightsError(f"{name}: {k} has shape {tuple(arrays[k].shape)}, expected {tuple(shape)}")


__all__ = ["save", "read", "check", "flatten", "unflatten_into", "default_path", "WeightsError",
           "to_bf16_bits", "from_bf16_bits", "ASSET_NAME", "FORMAT_VERSION"]
