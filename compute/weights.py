"""Save and load the toy K3's weights as a versioned asset (.npz, no pickles).

The zip members are stored, not deflated: BF16 weights of a trained net look random to zlib (it saves ~20%
of 9 MB) and inflating them took longer than the 200 ms load budget; stored, a load is a few reads. Members carry
a fixed timestamp, so the same arrays and metadata give the same file bytes (files written before 2026-12-03,
the shipped v1 one included, carry their write time).

A weight is named by its place in the engine's per-layer dicts ("L12.kda.in", "L1.moe.w13") or globally
("embedding", "lm_head", "final_norm", "w_out"); the layout itself (names, shapes, the random draw order) is
compute.weights_layout's, re-exported here (draw_layout, layout_shapes, nest, GLOBAL_KEYS). The file stores each per-layer key once, stacked over the
layers that have it in layer order ("layers.kda.in" [69, 8, 42] = L0, L1, L2, L4, ... of K3), so it holds a
few dozen arrays rather than 1,834 (loading is then one read per kind), plus "__meta__": UTF-8 JSON bytes
(uint8) with the format version, config name, toy dims, seed, vocabulary and the training report.

Storage: BF16 (the top 16 bits of a float32, rounded to nearest even, kept as uint16) for every weight
except the few where 8 bits of mantissa would move the model: the router bias (Quantile Balancing sets
it to the 1e-3 scale where top-k ties are decided), KDA's A_log and dt_bias — those stay float32.

Loading never executes anything from the file (no pickles: compute.guards.weights_archive parses the zip directory
and each .npy header itself, bounded, before allocating) and checks every array's name, shape, dtype,
finiteness and magnitude against the layout the engine expects; any failure — a mismatch, a damaged or
hostile file, a FIFO or device at the path — raises WeightsError with a one-line message.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from compute.weights_layout import GLOBAL_KEYS, draw_layout, layout_shapes, nest  # noqa: F401 - re-exported
from compute.weights_layout import split_layer_name as _split_layer_name

FORMAT = "k3-explorer-toy-weights"
FORMAT_VERSION = 1
ASSET_VERSION = "v2"
ASSET_NAME = f"toy-k3-{ASSET_VERSION}.npz"
_F32_KEYS = ("moe.bias", "kda.A_log", "kda.dt_bias")
_DTYPES = ("<u2", "<f4")  # the stored forms (BF16 bits, float32), little-endian, by dtype string
MAX_FILE_BYTES = 256 << 20  # the shipped toy file is ~9.7 MB
MAX_MEMBER_BYTES = 128 << 20
MAX_ELEMENTS = 32 << 20  # per array
MAX_META_BYTES = 1 << 20
MAX_META_DEPTH = 32
MAX_ABS_WEIGHT = 1e4  # a trained toy weight is within ±5; a larger one is damage (BF16 reaches 3.4e38)
_BF16_MAX_ABS_BITS = 0x461C  # the largest BF16 <= MAX_ABS_WEIGHT (9984; 0x461D = 10048); checked in the tests
_META_TYPES = {"config": str, "dims": dict, "vocab": list, "seed": int, "asset_version": str, "task": str,
               "report": dict, "format": str, "provenance": dict}


# The shipped trained toy: the model it is for (the engine says "no trained toy for this model" for any other
# config or toy dims without opening the file) and its checksums. "sha256": the file as shipped (the same line is
# in assets/weights/SHA256SUMS, for `sha256sum -c`); "weights_sha256": weights_digest of its arrays, what a rebuild
# (`make weights`, `python -m compute.training.train --verify FILE`) is compared with. The v2 file was written by `make
# weights` in a clean clone at commit a52b56a; a run of the same recipe in another process and tree gave the same
# weights digest, and the file holds no timing, so a rebuild at that commit is the same file byte for byte.
SHIPPED_TOY = {"file": ASSET_NAME, "config": "kimi-k3", "recipe": "v2", "seed": 0,
               "sha256": "a9d2c972f5eecc015220bc63480dac9acbeaaee913ecb405df8deae0dc480f89",
               "weights_sha256": "5f3b43b6ad8da8929ff77edff2ea5cba36af19c8df9abf54538edbc50c331f9d"}


# The trained toy of each model that has one, by config name: the recipe family of K3's (compute.training.train RECIPES,
# seed 0, one thread) run with that model's config (`make weights MODEL=<name>`), in its own file; the same keys as
# SHIPPED_TOY. The engine runs a model's toy by default; any other model (a user's config.json) runs random weights.
# Kimi Linear's toy (recipe v2-linear, compute/training/train_recipes.py): made 2026-12-05 as its two stages by hand (`--recipe
# v2`, then the second stage with --init on that file: the same chain run_recipe runs, which test_train checks
# bit for bit), so its provenance names no recipe and its report the two stages. Scores (`--score`): every-prefix
# greedy ko 99.1 %, en 100 %, held-out 100 %, repeated object 100 %; sampled at T = 1 98.8 % whole documents.
SHIPPED_TOYS: dict[str, dict] = {
    SHIPPED_TOY["config"]: SHIPPED_TOY,
    "kimi-linear-48b": {"file": "toy-kimi-linear-48b-v2.npz", "config": "kimi-linear-48b", "recipe": "v2-linear",
                        "seed": 0,
                        "sha256": "91d3d01ddbf47695c6e504cfd74fbf2f9c8f45b0d37f871c9542c6d53367d58f",
                        "weights_sha256": "eb456d8936f5eb0cc6063abf0df636b7f8e4be225132ed1442f278d8aa981579"},
    # DeepSeek-V3's toy (recipe v2-mla): made 2026-12-05 as its three stages by hand, the same way (v2, the second
    # stage with --init, the third with --init at commit 43b9e53, clean tree). Scores (`--score`): every-prefix greedy
    # ko 100 %, en 100 %, held-out 100 %, repeated object 100 %; sampled at T = 1 98.0 % whole documents.
    "deepseek-v3": {"file": "toy-deepseek-v3-v2.npz", "config": "deepseek-v3", "recipe": "v2-mla", "seed": 0,
                    "sha256": "8ef8a4bc04d4d4764d2786318aad2299bce529ba852837b64ffee2975cce3d62",
                    "weights_sha256": "e181fc1f3e36a36100d901677b10faf133d2cdd64951d5f373fab2f126a1fc9b"},
    # Kimi K2's toy: the same recipe v2-mla, made the same way (v2, then the second and third stages with --init, the
    # third at commit 9f1a039, clean tree). Scores (`--score`): every-prefix greedy ko 100 %, en 100 %, held-out 100 %,
    # repeated object 100 %; sampled at T = 1 96.9 % whole documents.
    "kimi-k2": {"file": "toy-kimi-k2-v2.npz", "config": "kimi-k2", "recipe": "v2-mla", "seed": 0,
                "sha256": "f38cd1bc12006971d99b23477841ce9c204eaaea7b07cd20b770e213e73b5b1b",
                "weights_sha256": "93df384d4ac06f3da56f3c73e229fca523f4242183bd41bf84e4005abc9945f8"},
}


def shipped_toy(config_name: str) -> dict | None:
    """The registry entry (SHIPPED_TOYS) of the trained toy that ships for this config name, or None."""
    return SHIPPED_TOYS.get(config_name)


def shipped_path(config_name: str) -> Path:
    """Where that model's shipped toy lives (K3's: default_path()); WeightsMissing when none ships for it."""
    entry = shipped_toy(config_name)
    if entry is None:
        raise WeightsMissing(f"no trained toy ships for {_brief(config_name)}")
    if entry is SHIPPED_TOY:
        return default_path()
    from assets import asset_path

    return asset_path("weights", entry["file"])


def has_trained_toy(config_name: str, dims: dict) -> bool:
    """A trained toy ships for this config name at these toy dims ({field: int}, engine.dims_dict)."""
    from dataclasses import asdict

    from compute.dims import ToyDims

    return config_name in SHIPPED_TOYS and dims == {k: int(v) for k, v in asdict(ToyDims()).items()}


def weights_digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 (hex) of a weights file's arrays ({stored name: array}, as read returns them): every name, dtype,
    shape and the bytes, in name order — the weights alone, not the metadata."""
    import hashlib

    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{a.dtype.str}|{tuple(a.shape)}\n".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class WeightsError(ValueError):
    """A weights file that cannot be used (missing, corrupt, or not for this model)."""


class WeightsMismatch(WeightsError):
    """A sound weights file made for another config, other toy dims or another vocabulary: nothing is wrong
    with it, it just isn't this model's (the engine falls back to random weights without a warning)."""


class WeightsMissing(WeightsError):
    """No weights file at the path (an install without the trained toy)."""


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


def pack(flat: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{"L<i>.<key>": a} → {"layers.<key>": stacked over the layers in order}; global names unchanged."""
    groups: dict[str, list[tuple[int, np.ndarray]]] = {}
    out: dict[str, np.ndarray] = {}
    for name, a in flat.items():
        li, key = _split_layer_name(name)
        if li is None:
            out[name] = np.asarray(a)
        else:
            groups.setdefault(key, []).append((li, np.asarray(a)))
    for key, items in groups.items():
        items.sort(key=lambda t: t[0])
        out["layers." + key] = np.stack([a for _, a in items])
    return out


def unpack(packed: dict[str, np.ndarray], expected: dict[str, tuple[int, ...]], name: str = "weights"
           ) -> dict[str, np.ndarray]:
    """The inverse of pack for the expected {flat name: shape}: views into the stacked arrays. Raises
    WeightsError when an array is missing, extra, or of another shape."""
    groups: dict[str, list[tuple[int, str, tuple[int, ...]]]] = {}
    want: dict[str, tuple[int, ...]] = {}
    for n, shape in expected.items():
        li, key = _split_layer_name(n)
        if li is None:
            want[n] = tuple(shape)
        else:
            groups.setdefault(key, []).append((li, n, tuple(shape)))
    for key, items in groups.items():
        items.sort()
        shapes = {s for _, _, s in items}
        if len(shapes) != 1:
            raise WeightsError(f"{name}: layers disagree on the shape of {key}")
        want["layers." + key] = (len(items),) + shapes.pop()
    missing = sorted(set(want) - set(packed))
    extra = sorted(set(packed) - set(want))
    if missing or extra:
        raise WeightsError(f"{name}: missing {missing[:3]} extra {extra[:3]}")
    for k, shape in want.items():
        if tuple(packed[k].shape) != shape:
            raise WeightsError(f"{name}: {k} has shape {tuple(packed[k].shape)}, expected {shape}")
    out = {n: packed[n] for n in want if not n.startswith("layers.")}
    for key, items in groups.items():
        stacked = packed["layers." + key]
        for i, (_, n, _) in enumerate(items):
            out[n] = stacked[i]
    return out


# ---------------------------------------------------------------------------------------------------- files
def save(path: str | Path, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write the arrays (quantized, see the module docstring) and meta to an .npz (stored, not deflated) through
    the commands' guarded writer (compute.guards.safe_write): a regular file or a new one only (a device, FIFO, link or
    folder at `path` is refused: safe_write.WriteError, an OSError), a temporary file in the target folder flushed
    to disk and renamed over `path`, with the usual mode (the old file's bits, else 0666 less the umask). An
    interrupted or failed write (disk full) leaves any earlier file at `path` as it was."""
    from compute.guards import safe_write

    path = Path(path)
    meta = dict(meta, format=FORMAT, format_version=FORMAT_VERSION)
    data = {name: quantize(name, a) for name, a in pack(arrays).items()}
    for name, a in data.items():
        if a.dtype == np.float32 and not np.isfinite(a).all():
            raise WeightsError(f"weight {name} is not finite; nothing written")
    try:  # no NaN / Infinity: the reader (compute.guards.bounded_json) refuses them, so the file would not load
        text = json.dumps(meta, ensure_ascii=False, allow_nan=False)
    except ValueError as e:
        raise WeightsError(f"the weights' metadata is not finite JSON ({e}); nothing written") from None
    data["__meta__"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    safe_write.write_with(path, lambda f: _write_npz(f, data), make_folder=True)
    return path


_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # every member's zip timestamp: the same arrays and metadata give the same bytes


def _write_npz(f, data: dict[str, np.ndarray]) -> None:
    """The arrays as an .npz (what np.load and compute.guards.weights_archive read: "<name>.npy" members) in their order,
    stored, not deflated (BF16 weights deflate by only ~20% and inflating costs more than the load budget), with
    fixed member timestamps and no zip64 records, so a file's bytes depend on its arrays and metadata alone."""
    import zipfile

    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as z:
        for name, a in data.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with z.open(info, "w") as member:
                np.lib.format.write_array(member, np.ascontiguousarray(a), allow_pickle=False)


def packed_shapes(expected: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """{stored name: shape} of the file for the engine's {flat name: shape} (what pack makes of them):
    per-layer keys stacked over the layers that have them. WeightsError when layers disagree on a shape."""
    groups: dict[str, list[tuple[int, ...]]] = {}
    out: dict[str, tuple[int, ...]] = {}
    for n, shape in expected.items():
        li, key = _split_layer_name(n)
        if li is None:
            out[n] = tuple(shape)
        else:
            groups.setdefault(key, []).append(tuple(shape))
    for key, shapes in groups.items():
        if len(set(shapes)) != 1:
            raise WeightsError(f"layers disagree on the shape of {key}")
        out["layers." + key] = (len(shapes),) + shapes[0]
    return out


def read(path: str | Path, expected: dict[str, tuple[int, ...]] | None = None, check=None
         ) -> tuple[dict[str, np.ndarray], dict]:
    """({stored name: float32 array}, meta) of a weights file (per-layer weights stacked, see pack/unpack).

    Bounded (compute.guards.weights_archive): the file is opened through compute.guards.guarded_io (a regular file of at
    most MAX_FILE_BYTES); the zip directory (compression stored / deflated only, declared sizes capped) and
    every .npy header (dtype bf16 bits / float32, C order, element count capped, and with `expected` — the
    engine's {flat name: shape}, see ToyK3.weight_shapes — exactly the expected names and shapes) are checked
    before any array is allocated; the metadata goes through compute.guards.bounded_json (size and depth bounded) and
    its fields are type-checked; every weight must be finite with |w| <= MAX_ABS_WEIGHT. Every failure is a
    WeightsError with one line (the engine then falls back to random weights).

    check: f(meta), called on the metadata before any array is read (e.g. check_meta: a file for other toy
    dims is then refused for that reason, not for the first array of another shape)."""
    from compute.guards import weights_archive

    try:
        path = Path(path)
    except TypeError:
        raise WeightsError(f"not a weights file path: {type(path).__name__}") from None
    shown = _shown(path)
    if not os.path.lexists(path):
        from compute.guards.guarded_io import show_path

        raise WeightsMissing(f"weights file not found: {show_path(path)}")
    want = None
    if expected is not None:
        want = packed_shapes(expected)
        want["__meta__"] = None
    allowed = {k: set(_DTYPES) for k in want} if want is not None else set(_DTYPES) | {"|u1"}
    if want is not None:
        allowed["__meta__"] = {"|u1"}
    def archive(**kw) -> dict[str, np.ndarray]:
        try:
            return weights_archive.read_arrays(path, max_file_bytes=MAX_FILE_BYTES, max_member_bytes=MAX_MEMBER_BYTES,
                                               max_elements=MAX_ELEMENTS, **kw)
        except weights_archive.ArchiveError as e:
            raise WeightsError(f"weights file {shown} {e}") from None

    # the metadata first (the directory checked by the caps only): what the file is for decides before its shapes
    m = archive(allowed_dtypes=set(_DTYPES) | {"|u1"}, only={"__meta__"}).get("__meta__")
    if m is None or m.dtype != np.uint8 or m.ndim != 1:
        raise WeightsError(f"weights file {shown} has no metadata entry")
    meta = _read_meta(m, shown)
    if check is not None:
        check(meta)
    raw = archive(allowed_dtypes=allowed, expected=None if want is None else
                  {k: v for k, v in want.items() if v is not None}, only=set(want) - {"__meta__"} if want else None)
    raw.pop("__meta__", None)
    if want is not None:
        missing = sorted(set(want) - set(raw) - {"__meta__"})
        if missing:
            raise WeightsError(f"weights file {shown}: missing {missing[:3]}")
    arrays = {}
    for k, a in raw.items():
        if a.dtype.str == "|u1":
            raise WeightsError(f"weight {k} in {shown} has dtype uint8; expected bf16 bits or float32")
        if a.dtype == np.uint16:  # BF16 bits: |w| orders as the bits without the sign; NaN / inf lie above
            ok = a.size == 0 or int(np.bitwise_and(a, np.uint16(0x7FFF)).max()) <= _BF16_MAX_ABS_BITS
        else:
            ok = bool((np.abs(a) <= MAX_ABS_WEIGHT).all())  # NaN fails the comparison too
        f = dequantize(a) if a.dtype == np.uint16 else a.copy()  # a new, writable array either way
        if not ok:
            what = "is not finite" if not np.isfinite(f).all() else \
                f"holds a value of magnitude {float(np.abs(f).max()):.3g} (at most {MAX_ABS_WEIGHT:g})"
            raise WeightsError(f"weight {k} in {shown} {what}")
        arrays[k] = f
    return arrays, meta


def _shown(path: Path) -> str:
    from compute.guards.guarded_io import show_path

    return show_path(path.name, 80)


def _read_meta(m: np.ndarray, shown: str) -> dict:
    """The metadata dict of the __meta__ bytes: bounded JSON, the format checked, known fields type-checked."""
    from compute.guards import bounded_json

    if m.size > MAX_META_BYTES:
        raise WeightsError(f"weights file {shown} has {m.size} bytes of metadata (at most {MAX_META_BYTES})")
    try:
        meta = bounded_json.load_object(m.tobytes().decode("utf-8"), MAX_META_BYTES, MAX_META_DEPTH)
    except UnicodeDecodeError:
        raise WeightsError(f"weights file {shown} has unreadable metadata: not UTF-8") from None
    except bounded_json.JSONLimitError as e:
        raise WeightsError(f"weights file {shown} has unreadable metadata: {e.problem}") from None
    if meta.get("format") != FORMAT:
        raise WeightsError(f"weights file {shown} is not a K3 Explorer toy-weights file")
    v = meta.get("format_version")
    if v != FORMAT_VERSION or type(v) is not int:
        raise WeightsError(f"weights file {shown} has format version {_brief(v)}; this build reads {FORMAT_VERSION}")
    for key, types in _META_TYPES.items():
        if key in meta and not (isinstance(meta[key], types) and not isinstance(meta[key], bool)):
            raise WeightsError(f"weights file {shown} has metadata {key!r} of type {type(meta[key]).__name__}")
    dims = meta.get("dims")
    if dims is not None and not all(type(x) is int for x in dims.values()):
        raise WeightsError(f"weights file {shown} has metadata 'dims' that are not all integers")
    vocab = meta.get("vocab")
    if vocab is not None and not all(isinstance(x, str) for x in vocab):
        raise WeightsError(f"weights file {shown} has metadata 'vocab' that is not a list of strings")
    return meta


def _brief(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_meta(meta: dict, config_name: str, dims: dict, vocab: list[str], name: str = "weights") -> None:
    """Raise WeightsError unless the file is for this config, these toy dims and this vocabulary (any other
    type than the expected one for a field is a mismatch too)."""
    if not isinstance(meta, dict):
        raise WeightsError(f"{name} have no metadata")
    if meta.get("config") != config_name:
        raise WeightsMismatch(f"{name} are for config {_brief(meta.get('config'))}, not {config_name!r}")
    got = meta.get("dims")
    if got != dims:
        diff = [f"{k}={_brief(got.get(k))} (here {v})" for k, v in dims.items() if got.get(k) != v] \
            if isinstance(got, dict) else [_brief(got)]
        raise WeightsMismatch(f"{name} are for other toy dims: {', '.join(diff[:4]) or 'other keys'}")
    got_vocab = meta.get("vocab")
    if got_vocab != list(vocab):
        n = len(got_vocab) if isinstance(got_vocab, list) else _brief(got_vocab)
        raise WeightsMismatch(f"{name} are for another toy vocabulary ({n} pieces)")


__all__ = ["save", "read", "check_meta", "pack", "unpack", "flatten", "flatten_layout", "default_path", "WeightsError",
           "draw_layout", "layout_shapes", "nest", "GLOBAL_KEYS", "SHIPPED_TOY", "SHIPPED_TOYS", "shipped_toy",
           "shipped_path", "has_trained_toy", "weights_digest",
           "file_sha256",
           "WeightsMismatch", "WeightsMissing",
           "to_bf16_bits", "from_bf16_bits", "ASSET_NAME", "FORMAT_VERSION", "packed_shapes", "MAX_ABS_WEIGHT"]
