"""Which weights the toy engine runs, as float64 numpy arrays before compute.engine converts them for its backend:
the shipped trained toy (compute.weights.default_path(), or a given file) when it is this model's, else the seeded
random model, with the reason. The layout (names, shapes, draw order) is compute.weights'."""
from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from compute import weights as weights_io
from compute.weights import WeightsError, WeightsMismatch, WeightsMissing

SEED_MASK = (1 << 64) - 1  # numpy seeds are non-negative: a negative seed wraps
_log = logging.getLogger("compute.engine")  # the engine's messages, under its name (the app's log, the tests)


def dims_dict(d) -> dict[str, int]:
    """A ToyDims as {field: int} (what a weights file's metadata records)."""
    return {k: int(v) for k, v in asdict(d).items()}


@dataclass
class ToyWeights:
    """One weight set in float64 numpy: `layers` in the engine's per-layer form (compute.weights.draw_layout)."""

    embedding: np.ndarray
    lm_head: np.ndarray
    final_norm: np.ndarray
    w_out: np.ndarray
    layers: list[dict]
    name: str  # "trained" | "random": which ones run
    note: str = ""  # why trained weights did not run ("" when they do, or were not asked for)
    fallback: str = ""  # the same as a code: "" | "other_model" | "missing" | "damaged"
    meta: dict = field(default_factory=dict)  # the trained file's metadata
    # what compute.engine derives from these arrays (its dtype's copies, the compiled pass's stacked weights),
    # shared by every engine built from one memo entry; guarded by SHARED_LOCK
    shared: dict = field(default_factory=dict, repr=False, compare=False)


SHARED_LOCK = threading.Lock()  # guards ToyWeights.shared (engines are built on several threads)


class _Memo:
    """The last few weight sets read or drawn, so that the engines a session builds again and again (the window's
    first engine and its compiled one, the explanation's second engine, each model switch back) neither read,
    check and widen a weights file nor draw a random model twice. Every array is read-only: engines share them.

    A trained set is keyed by its file's content (a BLAKE2 digest of the bytes, read through the same guard as the
    weights reader), so a file changed in place is read and checked again; a random set by its config, dims,
    vocabulary size and seed. Bounded to `size` sets and `max_bytes` of float64 arrays (a K3 toy: ~40 MB, as much
    again in what the engines derive from it); a set over half of `max_bytes` (a notebook's wide toy dims) is not
    kept, so the memo never holds on to a model no engine uses. Thread-safe."""

    def __init__(self, size: int = 3, max_bytes: int = 256 << 20):
        self.size = size
        self.max_bytes = max_bytes
        self._sets: OrderedDict = OrderedDict()
        self._bytes: dict = {}  # key -> the set's array bytes, counted once when it is put
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key) -> ToyWeights | None:
        if key is None:
            return None
        with self._lock:
            w = self._sets.get(key)
            if w is None:
                self.misses += 1
                return None
            self._sets.move_to_end(key)
            self.hits += 1
            return w

    def put(self, key, w: ToyWeights) -> ToyWeights:
        if key is None:
            return w
        _read_only(w)
        n = nbytes(w)
        if n > self.max_bytes // 2:
            return w
        with self._lock:
            self._sets[key], self._bytes[key] = w, n
            self._sets.move_to_end(key)
            while len(self._sets) > self.size or sum(self._bytes.values()) > self.max_bytes:
                old, _ = self._sets.popitem(last=False)
                del self._bytes[old]
        return w

    def __len__(self) -> int:
        with self._lock:
            return len(self._sets)

    def clear(self) -> None:
        with self._lock:
            self._sets.clear()
            self._bytes.clear()


MEMO = _Memo()


def _arrays(w: ToyWeights):
    """Every array of w (the globals, then each layer's nested dicts)."""
    stack = [w.embedding, w.lm_head, w.final_norm, w.w_out, *w.layers]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, np.ndarray):
            yield obj


def nbytes(w: ToyWeights) -> int:
    """Bytes of w's arrays."""
    return sum(a.nbytes for a in _arrays(w))


def _read_only(w: ToyWeights) -> None:
    """Every array of w read-only (the engines that share them must not write into each other's weights)."""
    for a in _arrays(w):
        a.setflags(write=False)


def _handed_out(w: ToyWeights) -> ToyWeights:
    """A memo entry as one engine's own record: its own containers (layers' dicts, meta), the shared arrays and
    the shared derived dict."""
    def copy(obj):
        return {k: copy(v) for k, v in obj.items()} if isinstance(obj, dict) else obj
    return replace(w, layers=[copy(layer) for layer in w.layers], meta=copy(w.meta))


def config_key(config):
    """The config as a memo key: itself (a frozen dataclass compares and hashes by its fields), else its repr."""
    try:
        hash(config)
        return config
    except TypeError:
        return repr(config)


def _file_digest(path: Path) -> str | None:
    """BLAKE2 digest of a regular weights file's bytes, read in 1 MiB chunks under the reader's own cap (never the
    whole file in memory), or None when it is not one (then nothing is memoised and the reader says what is wrong
    with it)."""
    from compute.guards.guarded_io import open_regular

    h = hashlib.blake2b(digest_size=20)
    n = 0
    try:
        with open_regular(path, weights_io.MAX_FILE_BYTES) as fh:
            while chunk := fh.read(1 << 20):
                n += len(chunk)
                if n > weights_io.MAX_FILE_BYTES:  # grew past the cap while read
                    return None
                h.update(chunk)
    except (OSError, ValueError, TypeError):
        return None
    return h.hexdigest()


def random_weights(config, dims, n_vocab: int, seed: int) -> ToyWeights:
    """The seeded random model, drawn in float64 numpy (every backend converts these same numbers); read-only
    arrays, drawn once per (config, dims, vocabulary size, seed) while the memo holds them."""
    key = ("random", config_key(config), config_key(dims), int(n_vocab), int(seed) & SEED_MASK)
    hit = MEMO.get(key)
    if hit is not None:
        return _handed_out(hit)
    return _handed_out(MEMO.put(key, _draw_random(config, dims, n_vocab, seed)))


def _draw_random(config, dims, n_vocab: int, seed: int) -> ToyWeights:
    gen = np.random.default_rng(int(seed) & SEED_MASK)

    def rnd(*shape, scale=1.0):
        return gen.standard_normal(shape) * scale

    def uni(n, lo, hi):
        return gen.uniform(lo, hi, n)

    return ToyWeights(*weights_io.draw_layout(config, dims, n_vocab, rnd, uni), name="random")


def trained_weights(config, dims, vocab: list[str], path=None) -> ToyWeights:
    """The trained asset (or `path`), read and checked: the metadata first (this config, dims and vocabulary,
    else WeightsMismatch), then names and shapes before anything is allocated (WeightsError). Read-only arrays,
    read once per file content (and config, dims, vocabulary) while the memo holds them."""
    p = weights_io.shipped_path(config.name) if path is None else Path(path)
    digest = _file_digest(p)
    key = None if digest is None else ("trained", digest, config_key(config), config_key(dims), tuple(vocab))
    hit = MEMO.get(key)
    if hit is not None:
        return _handed_out(hit)
    return _handed_out(MEMO.put(key, _read_trained(config, dims, vocab, p)))


def _read_trained(config, dims, vocab: list[str], p: Path) -> ToyWeights:
    name = f"weights file {p.name}"
    shapes = weights_io.layout_shapes(config, dims, len(vocab))
    arrays, meta = weights_io.read(p, shapes, lambda meta: weights_io.check_meta(
        meta, config.name, dims_dict(dims), list(vocab), name))
    flat = weights_io.unpack({k: a.astype(np.float64) for k, a in arrays.items()}, shapes, name)
    layers, glob = weights_io.nest(flat, config.num_hidden_layers)
    return ToyWeights(glob["embedding"], glob["lm_head"], glob["final_norm"], glob["w_out"], layers,
                      name="trained", meta=meta)


def _has_trained_toy(config, dims, n_vocab: int) -> bool:
    """A trained toy ships for this model: its config name and toy dims (compute.weights.has_trained_toy), and the
    weight layout of the bundled config of that name (a user's config.json that borrows the name but not the
    layers is another model, not a damaged file)."""
    if not weights_io.has_trained_toy(config.name, dims_dict(dims)):
        return False
    from compute.config import available_configs
    from compute.model_defaults import config_named

    if config.name not in available_configs():
        return False
    shipped = config_named(config.name)
    return config is shipped or (shipped.name == config.name and weights_io.layout_shapes(config, dims, n_vocab)
                                 == weights_io.layout_shapes(shipped, dims, n_vocab))


def choose_weights(config, dims, vocab: list[str], seed: int, weights: str = "trained", path=None) -> ToyWeights:
    """weights="trained": the trained toy when one ships for this model and its file is sound (a given `path` is
    read whatever the model, and a bad one raises WeightsError); otherwise the seeded random model with the reason
    in `note` / `fallback`. weights="random": the seeded random model."""
    if weights not in ("trained", "random"):
        raise ValueError(f"weights must be 'trained' or 'random', got {weights!r}")
    note = fallback = ""
    if weights == "trained" and path is None and not _has_trained_toy(config, dims, len(vocab)):
        # no trained toy ships for this model: said so whether or not the K3 file is installed (or sound)
        toys = ", ".join(repr(n) for n in weights_io.SHIPPED_TOYS)
        other = ("" if config.name not in weights_io.SHIPPED_TOYS else " at other toy dims"
                 if dims_dict(dims) != dims_dict(type(dims)()) else " with another layer layout")
        note = (f"trained weights not used: no trained toy for this model (the shipped ones are for {toys} at the "
                f"default toy dims; this is {config.name!r}{other})")
        fallback = "other_model"
        _log.info("%s; running random weights", note)
    elif weights == "trained":
        try:
            return trained_weights(config, dims, vocab, path)
        except WeightsError as e:
            if path is not None:
                raise
            note = f"trained weights not used: {e}"
            fallback = ("other_model" if isinstance(e, WeightsMismatch) else
                        "missing" if isinstance(e, WeightsMissing) else "damaged")
            # a damaged file is worth a warning on stderr (CLI, API, window); a missing one is an install
            # choice, and a file for another model is how every other model runs
            _log.log(logging.WARNING if fallback == "damaged" else logging.INFO, "%s; running random weights", note)
    w = random_weights(config, dims, len(vocab), seed)  # the caller's own record (a memo entry stays as it is)
    w.note, w.fallback = note, fallback
    return w


__all__ = ["ToyWeights", "MEMO", "SHARED_LOCK", "choose_weights", "config_key", "random_weights", "trained_weights", "dims_dict", "SEED_MASK"]
