"""View files (`*.k3view`): one view of K3 Explorer, shareable — which model, prompt, knobs and weights, which
layer and trace step, the camera, the selection and the label language. Qt-free (no Qt, no torch, no scene),
so the CLI, the notebook API (app/api.py) and the window (File -> Save view… / Open view…) share it.

The file is JSON:

    {"format": "k3-explorer-view", "version": "1.0", "model": "kimi-k3", "weights": "trained",
     "prompt": "로봇이 컵을 집었다", "tokens": 4,
     "knobs": {"alpha": null, "beta": null, "temperature": 1.0, "top_p": 1.0, "expert_bias": {}, "sample_seed": 0},
     "layer": 37, "step": 6, "camera": {"distance": ..., "azimuth": ..., "elevation": ..., "fov": ..., "center": [x, y, z]},
     "selection": {"block": "L37/kda.state", "cell": [0, 3], "expert": 17}, "language": "en", "size": [1600, 900]}

`layer` and `step` are 1-based; `step` is the place in the whole trace (1..N), as the trace player's list and counter,
`k3-explorer export --step` and the API count it. Every version (1.0 on) stored this number (the window wrote its seek
position + 1), so older files open unchanged, though the player's list showed the 17-step pipeline place in older
versions. `camera` null means the framing the step gives; `size` is the 3D view's size in pixels when the view was saved
(the CLI's default image size). A view file is untrusted input: it is parsed as JSON only (nothing in it is ever
executed or imported), within a size and nesting limit, and every field is type-checked and bounded; a problem is a
ViewError naming the file and the field, and nothing is applied. Unknown keys are ignored (listed in `View.notes`), so a
newer minor version still opens; a newer major version is refused with a clear message. Writing is atomic
(app/files/atomic_io.py).
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from app.files import atomic_io
from app.files.view_compare import compare_json, read_compare
from app.files.view_knockouts import position_problem, read_knockouts
from compute.guards import bounded_json, guarded_io
from compute.config import ConfigError, available_configs
from compute.model_defaults import PREFILL_STEP, config_named, default_layer, keep_layer
from compute.trace import Knobs

FORMAT = "k3-explorer-view"
VERSION = (1, 4)  # 1.1 adds the optional "knockouts" key, 1.2 "explain3d", 1.3 "compare", 1.4 "explain3d.units" and
# "compare.stacks"; major.minor: a newer minor only adds keys (ignored here with a note, inside objects too); a newer
# major is refused
SUFFIX = ".k3view"
MAX_BYTES = 256 * 1024  # a view is well under 2 kB (the prompt dominates)
MAX_DEPTH = 8
MAX_PROMPT_CHARS = 32767  # what the prompt box holds (app/files/settings.PROMPT_CHAR_LIMIT)
MAX_PROMPT_TOKENS = 256  # compute.engine.MAX_PROMPT_TOKENS (that module loads torch); a test keeps them equal
MAX_NEW_TOKENS = 64
MAX_STEP = 15 + 6 * (MAX_NEW_TOKENS - 1)  # prefill steps + decode steps (app/player.py) with 64 tokens
MAX_EXPERT_BIAS = 1e6  # compute.engine._check_knobs
MAX_BIASED_EXPERTS = 1024
MAX_SEED = 10 ** 18 - 1  # compute.guards.bounded_json.MAX_INT_DIGITS (18) digits: every seed saved can be read back
MAX_SIDE = 8192  # app/export/image.MAX_SIDE (that module imports Qt)
MAX_BLOCK_CHARS = 200
MAX_CELL = 1 << 20
MAX_REACH = 5000.0
MAX_NOTES = 5  # scene/camera.MAX_REACH
WEIGHTS = ("trained", "random")
LANGUAGES = ("en", "ko")
_BLOCK_ID = re.compile(rf"[A-Za-z0-9_./:-]{{1,{MAX_BLOCK_CHARS}}}")  # a block id: at most MAX_BLOCK_CHARS


class ViewError(ValueError):
    """A view file that cannot be used: unreadable, not a view, a newer major version, or a bad field.
    `kind` is "read" | "format" | "version" | "field"; str() is one English line naming the file."""

    def __init__(self, path: str, kind: str, problem: str, field_name: str = ""):
        self.path, self.kind, self.problem, self.field = str(path), kind, problem, field_name
        where = f" field '{field_name}':" if field_name else ""
        super().__init__(f"{guarded_io.show_path(self.path) or repr(self.path)}:{where} {problem}")


@dataclass
class View:
    """One view, every field already validated (construct through `from_dict` / `load`, or `View()`)."""

    model: str = "kimi-k3"
    weights: str = "trained"
    prompt: str = "로봇이 컵을 집었다"
    tokens: int = 4
    knobs: Knobs = field(default_factory=Knobs)
    layer: int | None = None  # 1-based; None: the model's default layer (compute.model_defaults), set on creation
    step: int = PREFILL_STEP  # 1-based trace player step
    camera: dict | None = None
    block: str | None = None
    cell: tuple[int, int] | None = None
    expert: int | None = None
    language: str = "en"
    size: tuple[int, int] | None = None
    notes: list[str] = field(default_factory=list)  # unknown keys that were ignored
    # {"mode": "zero"|"mean", "tokens": [pos], "blocks": [[layer, part]], "experts": [[layer|None, id]],
    #  "sources": [AttnRes candidate] (optional)} or None
    knockouts: dict | None = None
    # what the 3D view draws of the Explain panel: {"lens": bool, "arcs": bool, "route": bool,
    # "route_threshold": 0..100, "position": int | None (None: the last prompt position), "units": true (optional:
    # the exploded layer's heads and experts lit by their total effects)}, or None (not recorded)
    explain3d: dict | None = None
    # the Compare dock's picked models and its Same-prompt page's prompt when not the view's (app/files/view_compare.py):
    # {"models": [name A, name B], "prompt": str | None}, or None (not recorded)
    compare: dict | None = None

    def __post_init__(self):
        self.layer = default_layer(config_named(self.model)) if self.layer is None else self.layer

    def to_dict(self) -> dict:
        k = self.knobs
        return {"format": FORMAT, "version": f"{VERSION[0]}.{VERSION[1]}", "model": self.model,
                "weights": self.weights, "prompt": self.prompt, "tokens": int(self.tokens),
                "knobs": {"alpha": _num_or_none(k.alpha), "beta": _num_or_none(k.beta),
                          "temperature": float(k.temperature), "top_p": float(k.top_p),
                          "expert_bias": {str(int(e)): float(b) for e, b in sorted(k.expert_bias.items())},
                          "sample_seed": int(k.sample_seed)},
                "layer": int(self.layer), "step": int(self.step),
                "camera": _camera_json(self.camera),
                "selection": {"block": self.block, "cell": list(self.cell) if self.cell else None,
                              "expert": self.expert},
                "language": self.language, "size": list(self.size) if self.size else None,
                **({"knockouts": _knockouts_json(self.knockouts)} if self.knockouts else {}),
                **({"explain3d": dict(self.explain3d)} if self.explain3d is not None else {}),
                **({"compare": compare_json(self.compare)} if self.compare is not None else {})}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, raw: Any, path: str = "<view>", model_config=None) -> "View":
        """Check a parsed document. Layers and experts are checked against the bundled config the view names,
        or against `model_config` (a compute.config.ModelConfig) when given: the model the caller will run.
        The explained position and the knocked-out tokens are checked against the view's own prompt."""
        view = _Reader(raw, path, model_config).view()
        check_positions(view, path)
        return view

    def with_changes(self, **changes) -> "View":  # another model: this layer where it has it, else its own
        return replace(self, **keep_layer(self.model, self.layer, changes))


def load(path: str | os.PathLike) -> View:
    """Read and validate a view file; ViewError (one line) on any problem. The file is read through
    compute.guards.guarded_io: a FIFO, device, directory or socket (or a link to one) is refused without reading."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ViewError(repr(path), "read",
                        f"a view file must be given as a path (str or os.PathLike), got {type(path).__name__}")
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path.strip():
        raise ViewError(repr(path), "read", "no view file named (the file name is empty)")
    try:
        text = bounded_json.read_text(path, MAX_BYTES)
    except bounded_json.JSONLimitError as exc:
        raise _not_a_view(path, exc) from exc
    return loads(text, path)


def loads(text: str, path: str = "<view>", model_config=None) -> View:
    """Validate a view document given as text (see `load`; `model_config` as in View.from_dict)."""
    try:
        raw = bounded_json.load_object(text, MAX_BYTES, MAX_DEPTH)  # size, depth, integer length, no NaN
    except bounded_json.JSONLimitError as exc:
        raise _not_a_view(path, exc) from exc
    return View.from_dict(raw, path, model_config)


def check_model(view: View, config, path: str = "<view>", layer: bool = True) -> None:
    """ViewError naming the field unless the view's knobs (and, with `layer`, its layer) fit `config`, the
    compute.config.ModelConfig that will run it (a --config or a model opened in the window may differ from
    the bundled one the view names). Nothing is changed."""
    n_experts = config.n_routed_experts
    for expert in sorted(view.knobs.expert_bias):
        if not 0 <= int(expert) < n_experts:
            raise ViewError(path, "field", f"expert {int(expert)} is outside 0…{n_experts - 1} ({_short(config.name)} "
                            f"has {n_experts} routed experts)", "knobs.expert_bias")
    problem = _block_layer_problem(view.block, config.num_hidden_layers) if view.block else None
    if problem:
        raise ViewError(path, "field", f"{problem} ({_short(config.name)})", "selection.block")
    if layer and not 1 <= view.layer <= config.num_hidden_layers:
        raise ViewError(path, "field", f"{view.layer} is outside 1…{config.num_hidden_layers} "
                        f"({_short(config.name)} has {config.num_hidden_layers} layers)", "layer")
    if view.knockouts:  # the knocked-out blocks, experts and AttnRes sources exist in that model
        _Reader({}, path, config).knockouts(dict(view.knockouts), config)


def check_positions(view: View, path: str = "<view>") -> None:
    """ViewError naming the field unless the view's explained position and knocked-out tokens fit its prompt and
    token count (app/files/view_knockouts.py). Nothing is changed."""
    problem = position_problem(view)
    if problem:
        raise ViewError(path, "field", problem[1], problem[0])


def _not_a_view(path: str, exc: bounded_json.JSONLimitError) -> ViewError:
    if exc.kind == "read":
        return ViewError(path, "read", exc.problem)
    if exc.kind == "json":
        return ViewError(path, "format", f"not a K3 Explorer view: {exc.problem}")
    return ViewError(path, "format", f"{exc.problem}: not a K3 Explorer view")


def save(view: View, path: str | os.PathLike, model_config=None) -> str:
    """Write the view atomically; returns the path written. Raises atomic_io.WriteError, or ViewError (nothing
    written) when the view would not open again: the document is checked as `load` checks it first (a seed
    over MAX_SEED, an expert the model lacks, ...), so every saved view reopens."""
    View.from_dict(view.to_dict(), os.fspath(path), model_config)  # a bad field named, as load names it
    text = view.to_json()
    loads(text, os.fspath(path), model_config)  # and the text itself reads back (size, integer length)
    return atomic_io.write_bytes(os.fspath(path), text.encode("utf-8"))


def with_suffix(path: str) -> str:
    return path if path.lower().endswith(SUFFIX) else path + SUFFIX


def argument_values(view: View) -> dict:
    """The view as `k3-explorer export` option values (dest -> value)."""
    values = {"prompt": view.prompt, "tokens": view.tokens, "layer": view.layer, "step": view.step,
              "lang": view.language, "weights": view.weights}
    if view.size:
        values["size"] = f"{view.size[0]}x{view.size[1]}"
    return values


# ------------------------------------------------------------------------------------------- validation


class _Reader:
    """Checks one parsed document field by field; the first problem is a ViewError naming the field."""

    def __init__(self, raw: Any, path: str, model_config=None):
        self.raw, self.path = raw, str(path)
        self.model_config = model_config  # the config the layers and experts are checked against
        self.newer = False  # written by a newer minor version: keys unknown here are its additions (ignored)
        self.ignored: list[str] = []  # notes on the keys ignored inside objects

    def fail(self, name: str, problem: str) -> ViewError:
        return ViewError(self.path, "field", problem, name)

    def object(self, name: str, value: Any, keys: tuple[str, ...]) -> dict | None:
        """An optional object field (`explain3d`, `knockouts`, `compare`): None stays None; anything but an object
        with only `keys` is a ViewError naming the field (the first unknown key quoted, at most 40 characters)."""
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(name, f"must be an object {{{', '.join(keys)}}} or null")
        unknown = [k for k in value if k not in keys]
        if unknown and self.newer:  # a later minor version's additions: read what this version knows
            self.ignored += [f"ignored unknown key '{name}.{_key(str(k))}'" for k in unknown]
            return {k: v for k, v in value.items() if k in keys}
        if unknown:
            raise self.fail(name, f"unknown key '{_key(str(unknown[0]))}' ({', '.join(keys)})")
        return value

    def view(self) -> View:
        raw = self.raw
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ViewError(self.path, "format", f"not a K3 Explorer view (no \"format\": \"{FORMAT}\")")
        if _depth(raw) > MAX_DEPTH:
            raise ViewError(self.path, "format", f"nested more than {MAX_DEPTH} levels deep")
        self.version(raw.get("version"))
        known = {"format", "version", "model", "weights", "prompt", "tokens", "knobs", "layer", "step", "camera",
                 "selection", "language", "size", "knockouts", "explain3d", "compare"}
        notes = [f"ignored unknown key '{_key(k)}'" for k in raw if k not in known]
        model = self.choice("model", raw.get("model", "kimi-k3"), tuple(available_configs()))
        config = self.model_config or self.config(model)
        selection = raw.get("selection") or {}
        if not isinstance(selection, dict):
            raise self.fail("selection", "must be an object {block, cell, expert} or null")
        notes += [f"ignored unknown key 'selection.{_key(k)}'" for k in selection
                  if k not in ("block", "cell", "expert")]
        return View(model=model,
                    weights=self.choice("weights", raw.get("weights", "trained"), WEIGHTS),
                    prompt=self.prompt(raw.get("prompt")),
                    tokens=self.integer("tokens", raw.get("tokens", 4), 1, MAX_NEW_TOKENS),
                    knobs=self.knobs(raw.get("knobs", {}), notes, config.n_routed_experts),
                    layer=self.integer("layer", raw.get("layer", default_layer(config)), 1, config.num_hidden_layers),
                    step=self.integer("step", raw.get("step", 1), 1, MAX_STEP),
                    camera=self.camera(raw.get("camera")),
                    block=self.block(selection.get("block"), config.num_hidden_layers),
                    cell=self.pair("selection.cell", selection.get("cell"), 0, MAX_CELL),
                    expert=self.optional_int("selection.expert", selection.get("expert"), 0, 1 << 16),
                    language=self.choice("language", raw.get("language", "en"), LANGUAGES),
                    size=self.pair("size", raw.get("size"), 1, MAX_SIDE),
                    knockouts=self.knockouts(raw.get("knockouts"), config),
                    explain3d=self.explain3d(raw.get("explain3d")),
                    compare=read_compare(self, raw.get("compare"), tuple(available_configs())),
                    notes=_capped(notes + self.ignored))  # (last: the fields above add their ignored keys)

    def knockouts(self, value: Any, config) -> dict | None:
        return read_knockouts(self, value, config, MAX_PROMPT_TOKENS - 1)  # app/files/view_knockouts.py

    def explain3d(self, value: Any) -> dict | None:
        """The optional 3D drawings of the Explain panel (lens column, attention arcs, contribution route)."""
        if value is None:
            return None
        value = self.object("explain3d", value, ("lens", "arcs", "route", "route_threshold", "position", "units"))
        out = {}
        for k in ("lens", "arcs", "route"):
            v = value.get(k, False)
            if not isinstance(v, bool):
                raise self.fail(f"explain3d.{k}", f"must be true or false, got {_short(v)}")
            out[k] = v
        out["route_threshold"] = self.integer("explain3d.route_threshold", value.get("route_threshold", 30), 0, 100)
        out["position"] = self.optional_int("explain3d.position", value.get("position"), 0, MAX_PROMPT_TOKENS - 1)
        if "units" in value:  # the heads and experts lit by their total effects (issue 39.5); written only when on
            if not isinstance(value["units"], bool):
                raise self.fail("explain3d.units", f"must be true or false, got {_short(value['units'])}")
            if value["units"]:
                out["units"] = True
        return out

    def version(self, value: Any) -> None:
        text = value if isinstance(value, str) else ""
        m = re.fullmatch(r"(\d{1,6})\.(\d{1,6})", text)
        if not m:
            raise self.fail("version", f"must be \"MAJOR.MINOR\" text, got {_short(value)}")
        major = int(m.group(1))
        self.newer = major == VERSION[0] and int(m.group(2)) > VERSION[1]
        if major > VERSION[0]:
            raise ViewError(self.path, "version",
                            f"written by a newer K3 Explorer (view format {text}; this version reads "
                            f"{VERSION[0]}.x): update K3 Explorer to open it")
        if major < 1:
            raise self.fail("version", f"unknown view format {text}")

    def config(self, model: str):
        from compute.config import ModelConfig  # Qt-free, no torch

        try:
            return ModelConfig.from_json(available_configs()[model])
        except (ConfigError, KeyError) as exc:
            raise self.fail("model", f"the bundled config '{model}' cannot be read: {exc}") from exc

    def choice(self, name: str, value: Any, allowed: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(name, f"must be one of {', '.join(allowed)}, got {_short(value)}")
        return value

    def integer(self, name: str, value: Any, lo: int, hi: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(name, f"must be a whole number, got {_short(value)}")
        if not lo <= value <= hi:
            raise self.fail(name, f"{value} is outside {lo}…{hi}")
        return value

    def optional_int(self, name: str, value: Any, lo: int, hi: int) -> int | None:
        return None if value is None else self.integer(name, value, lo, hi)

    def number(self, name: str, value: Any, lo: float, hi: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(name, f"must be a finite number, got {_short(value)}")
        if not lo <= value <= hi:
            raise self.fail(name, f"{value:g} is outside {lo:g}…{hi:g}")
        return float(value)

    def pair(self, name: str, value: Any, lo: int, hi: int) -> tuple[int, int] | None:
        if value is None:
            return None
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(name, f"must be a list of two whole numbers or null, got {_short(value)}")
        return (self.integer(name, value[0], lo, hi), self.integer(name, value[1], lo, hi))

    def prompt(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail("prompt", "must be non-empty text")
        if len(value) > MAX_PROMPT_CHARS:
            raise self.fail("prompt", f"{len(value)} characters (at most {MAX_PROMPT_CHARS})")
        for i, ch in enumerate(value):
            if "\ud800" <= ch <= "\udfff":
                raise self.fail("prompt", f"lone surrogate U+{ord(ch):04X} at character {i + 1}: not valid text")
        from compute.language.tokenizer import ToyTokenizer  # Qt-free, no torch

        n = len(ToyTokenizer().split(value))
        if n > MAX_PROMPT_TOKENS:
            raise self.fail("prompt", f"{n} toy tokens; the engine takes at most {MAX_PROMPT_TOKENS}")
        return value

    def knobs(self, value: Any, notes: list[str], n_experts: int) -> Knobs:
        if not isinstance(value, dict):
            raise self.fail("knobs", "must be an object")
        fields = ("alpha", "beta", "temperature", "top_p", "expert_bias", "sample_seed")
        notes += [f"ignored unknown key 'knobs.{_key(k)}'" for k in value if k not in fields]
        alpha, beta = value.get("alpha"), value.get("beta")
        temperature = self.number("knobs.temperature", value.get("temperature", 1.0), 0.0, 1000.0)
        if 0 < temperature < 1e-6:
            raise self.fail("knobs.temperature", f"{temperature:g}: must be 0 (greedy) or at least 1e-06")
        top_p = self.number("knobs.top_p", value.get("top_p", 1.0), 0.0, 1.0)
        if top_p == 0:
            raise self.fail("knobs.top_p", "must be greater than 0")
        try:
            return Knobs(alpha=None if alpha is None else self.number("knobs.alpha", alpha, 0.0, 1.0),
                         beta=None if beta is None else self.number("knobs.beta", beta, 0.0, 1.0),
                         temperature=temperature, top_p=top_p,
                         expert_bias=self.expert_bias(value.get("expert_bias", {}), n_experts),
                         sample_seed=self.integer("knobs.sample_seed", value.get("sample_seed", 0), 0, MAX_SEED))
        except ValueError as exc:  # Knobs' own check (non-finite values); a ViewError passes through unchanged
            if isinstance(exc, ViewError):
                raise
            raise self.fail("knobs", str(exc)) from exc

    def expert_bias(self, value: Any, n_experts: int) -> dict[int, float]:
        if not isinstance(value, dict):
            raise self.fail("knobs.expert_bias", "must be an object {\"expert\": bias}")
        if len(value) > MAX_BIASED_EXPERTS:
            raise self.fail("knobs.expert_bias", f"{len(value)} experts (at most {MAX_BIASED_EXPERTS})")
        out = {}
        for key, bias in value.items():
            if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
                key = str(key)  # a Python dict from the API ({17: 2.0}); a file's keys are always text
            if not isinstance(key, str) or not re.fullmatch(r"\d{1,5}", key):
                raise self.fail("knobs.expert_bias", f"expert {_short(key)} is not an expert number")
            if int(key) >= n_experts:
                raise self.fail("knobs.expert_bias", f"expert {int(key)} is outside 0…{n_experts - 1} "
                                f"(the model has {n_experts} routed experts)")
            out[int(key)] = self.number(f"knobs.expert_bias.{key}", bias, -MAX_EXPERT_BIAS, MAX_EXPERT_BIAS)
        return out

    def camera(self, value: Any) -> dict | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail("camera", "must be an object {distance, azimuth, elevation, fov, center} or null")
        out = {"distance": self.number("camera.distance", value.get("distance"), 1e-6, MAX_REACH * 4),
               "azimuth": self.number("camera.azimuth", value.get("azimuth"), -360.0, 360.0),
               "elevation": self.number("camera.elevation", value.get("elevation"), -90.0, 90.0),
               "fov": self.number("camera.fov", value.get("fov"), 1.0, 170.0)}
        center = value.get("center")
        if not isinstance(center, list) or len(center) != 3:
            raise self.fail("camera.center", f"must be a list of three numbers, got {_short(center)}")
        out["center"] = [self.number("camera.center", v, -MAX_REACH, MAX_REACH) for v in center]
        return out

    def block(self, value: Any, n_layers: int) -> str | None:
        if value is None or value == "":
            return None
        if not isinstance(value, str) or not _BLOCK_ID.fullmatch(value):
            raise self.fail("selection.block", f"must be a block id like \"L37/kda.state\", got {_short(value)}")
        problem = _block_layer_problem(value, n_layers)
        if problem:
            raise self.fail("selection.block", problem)
        return value


def _block_layer_problem(block: str, n_layers: int) -> str | None:
    """Why a block id's "L<n>/" layer does not exist in a model of n_layers layers, or None."""
    m = re.match(r"L(\d+)/", block)
    if m and not 1 <= int(m.group(1)) <= n_layers:
        return f"{block[:60]} names layer {int(m.group(1))}; the model has layers 1…{n_layers}"
    return None


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _camera_json(camera: dict | None) -> dict | None:
    if camera is None:
        return None
    out = {k: float(camera[k]) for k in ("distance", "azimuth", "elevation", "fov") if k in camera}
    if "center" in camera:
        out["center"] = [float(v) for v in camera["center"]]
    return out


def _knockouts_json(ko: dict) -> dict:
    return {"mode": ko.get("mode", "zero"), "tokens": [int(p) for p in ko.get("tokens", ())],
            "blocks": [[int(ly), str(pt)] for ly, pt in ko.get("blocks", ())],
            "experts": [[None if ly is None else int(ly), int(e)] for ly, e in ko.get("experts", ())],
            **({"sources": [int(c) for c in ko["sources"]]} if ko.get("sources") else {})}


def _num_or_none(value) -> float | None:
    return None if value is None else float(value)


def _capped(notes: list[str]) -> list[str]:
    return notes[:MAX_NOTES] + ([f"and {len(notes) - MAX_NOTES} more"] if len(notes) > MAX_NOTES else [])


def _key(key: str, limit: int = 40) -> str:
    """A key for a note: printable, at most `limit` characters."""
    text = key.encode("unicode_escape").decode("ascii") if not key.isprintable() else key
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
