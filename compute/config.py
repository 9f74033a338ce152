"""Model configuration: a Hugging Face style config.json → `ModelConfig`.

The loader is general for the Kimi / DeepSeek family: Kimi K3 (assets/configs/kimi-k3.json), Kimi Linear,
Kimi K2 and DeepSeek-V3. Field names follow each model's own config.json; where the family uses two names for
one thing (``n_routed_experts`` / ``num_experts``) both are accepted. Features a model lacks (AttnRes, a
latent MoE, KDA layers, an MLA output gate) are simply absent (None / False).

Every problem with a file raises `ConfigError`, whose message names the file and the field — and nothing
else: a document larger than `MAX_BYTES` or nested deeper than `MAX_DEPTH`, an integer literal longer than
`MAX_INT_DIGITS`, NaN / Infinity, or a value outside its field's range (`LIMITS`) is a ConfigError too. The
ranges hold every model of the family (K3: 93 layers, 896 experts, vocab 163,840) and keep a config small
enough that the toy engine (compute.engine.ToyK3), which runs every layer with the real expert count, runs
any accepted config quickly.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compute.guards import bounded_json

CONFIG_DIR = Path(__file__).resolve().parents[1] / "assets" / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "kimi-k3.json"

MAX_BYTES = 1 << 20  # a Hugging Face config.json is a few kB
MAX_DEPTH = 32  # nesting of arrays / objects
MAX_INT_DIGITS = bounded_json.MAX_INT_DIGITS  # an integer literal (well inside Python's 4,300-digit limit)
MAX_LAYERS = 128  # K3 93, DeepSeek-V3 61
MAX_EXPERTS = 1024  # K3 896, K2 384, DeepSeek-V3 256
# The toy tokenizer gives the 256 bytes IDs 0..255, its toy pieces (about a hundred) free IDs above them and any other
# piece a hashed ID: a smaller vocabulary leaves it no room (it would search for a free ID for ever).
MIN_VOCAB = 1024

# field → (minimum, maximum), both inclusive. Fields bounded by another field are checked where they are read.
LIMITS: dict[str, tuple[float, float]] = {
    "num_hidden_layers": (1, MAX_LAYERS),
    "hidden_size": (1, 1 << 16),
    "vocab_size": (MIN_VOCAB, 1 << 22),
    "intermediate_size": (1, 1 << 20),
    "num_attention_heads": (1, 1024),
    "q_lora_rank": (1, 1 << 16),
    "kv_lora_rank": (1, 1 << 16),
    "qk_nope_head_dim": (0, 4096),
    "qk_rope_head_dim": (0, 4096),
    "v_head_dim": (1, 4096),
    "linear_attn_config.num_heads": (1, 1024),
    "linear_attn_config.head_dim": (1, 4096),
    "linear_attn_config.short_conv_kernel_size": (1, 64),
    "linear_attn_config.gate_lower_bound": (-50.0, 0.0),  # g = bound·sigmoid(.) ≤ 0: the state never grows
    "first_k_dense_replace": (0, MAX_LAYERS),
    "moe_layer_freq": (1, MAX_LAYERS),
    "n_routed_experts": (1, MAX_EXPERTS),
    "num_experts_per_tok": (1, MAX_EXPERTS),
    "n_group": (1, MAX_EXPERTS),
    "topk_group": (1, MAX_EXPERTS),
    "n_shared_experts": (0, 64),
    "moe_intermediate_size": (1, 1 << 20),
    "moe_latent_size": (1, 1 << 16),
    "routed_scaling_factor": (0.0, 100.0),
    "situ_glu_beta1": (0.01, 1000.0),  # SiTU-GLU divides by β
    "situ_glu_beta2": (0.01, 1000.0),
    "attn_res_block_size": (1, MAX_LAYERS),
    "max_position_embeddings": (1, 1 << 24),
    "rms_norm_eps": (1e-12, 1.0),  # > 0: RMSNorm of a zero row stays finite
    "rope_theta": (1.0, 1e10),
    "total_params_billion": (0.0, 1e6),
    "active_params_billion": (0.0, 1e6),
}
# why a minimum is what it is, added to the message
_WHY_MINIMUM = {"vocab_size": "the toy tokenizer needs room for 256 byte IDs, its toy pieces and hashed IDs",
                "situ_glu_beta1": "SiTU-GLU divides by it", "situ_glu_beta2": "SiTU-GLU divides by it"}
MAX_NAME_CHARS = 200


class ConfigError(ValueError):
    """A config file is unreadable or inconsistent. `field` and `path` say where."""

    def __init__(self, path: str | Path, field_name: str, problem: str):
        self.path = str(path)
        self.field = field_name
        self.problem = problem
        super().__init__(f"{self.path}: field '{field_name}': {problem}")


@dataclass(frozen=True)
class ModelConfig:
    """The architecture facts the app and the toy engine need (real sizes, not toy sizes)."""

    name: str
    path: str
    model_type: str
    num_hidden_layers: int
    hidden_size: int
    vocab_size: int
    intermediate_size: int  # dense MLP width
    mixer_types: tuple[str, ...]  # "kda" | "mla", one per layer (0-based)
    ffn_types: tuple[str, ...]  # "dense" | "moe", one per layer
    # MLA
    num_attention_heads: int
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    mla_use_rope: bool
    mla_output_gate: str | None  # "sigmoid" or None
    # KDA (None when the model has no KDA layers)
    kda_num_heads: int | None
    kda_head_dim: int | None
    kda_conv_size: int | None
    kda_gate_lower_bound: float | None  # K3: -5.0; None = Kimi Linear softplus gate
    # MoE
    n_routed_experts: int
    num_experts_per_tok: int
    n_shared_experts: int
    moe_intermediate_size: int
    moe_latent_size: int | None
    n_group: int
    topk_group: int
    routed_scaling_factor: float
    scoring_func: str
    norm_topk_prob: bool
    # misc
    hidden_act: str  # "situ_glu" | "silu"
    situ_glu_beta1: float
    situ_glu_beta2: float
    attn_res_block_size: int | None
    max_position_embeddings: int
    rms_norm_eps: float
    total_params_billion: float | None = None
    active_params_billion: float | None = None
    display_name: str = ""  # what texts call the model ("Kimi K3"); "" = `name`, the config's id ("kimi-k3")
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if not self.display_name:
            object.__setattr__(self, "display_name", self.name)

    @property
    def kda_layers(self) -> list[int]:
        """0-based indices of the KDA layers."""
        return [i for i, m in enumerate(self.mixer_types) if m == "kda"]

    @property
    def mla_layers(self) -> list[int]:
        """0-based indices of the MLA layers."""
        return [i for i, m in enumerate(self.mixer_types) if m == "mla"]

    @property
    def attn_res_stored_blocks(self) -> int:
        """Entries of the AttnRes block list after the last layer ([embedding, b1, ...]); 0 without AttnRes."""
        if not self.attn_res_block_size:
            return 0
        return len(range(0, self.num_hidden_layers, self.attn_res_block_size))

    @classmethod
    def from_json(cls, path: str | Path) -> "ModelConfig":
        path = Path(path)
        return cls.from_dict(parse_json(_read_text(path), path), path)

    @classmethod
    def from_dict(cls, raw: dict[str, Any], path: str | Path = "<dict>") -> "ModelConfig":
        if not isinstance(raw, dict):
            raise ConfigError(path, "<json>", "top level must be a JSON object")
        r = _Reader(raw, path)
        n_layers = r.int_("num_hidden_layers")
        hidden = r.int_("hidden_size")
        vocab = r.int_("vocab_size")
        inter = r.int_("intermediate_size")
        mixer, kda_heads, kda_dim, kda_conv, lower = _mixers(raw, path, n_layers)

        # --- FFN: dense for the first k layers, then MoE every moe_layer_freq ---
        first_dense = r.int_("first_k_dense_replace", default=0)
        freq = r.int_("moe_layer_freq", default=1)
        if first_dense > n_layers:
            raise ConfigError(path, "first_k_dense_replace", f"{first_dense} > num_hidden_layers {n_layers}")
        ffn = tuple("moe" if (i >= first_dense and i % freq == 0) else "dense" for i in range(n_layers))

        n_exp, top_k, n_group, topk_group = _routing(r, path)

        gate = raw.get("mla_output_gate")
        if gate is not None and gate != "sigmoid":
            raise ConfigError(path, "mla_output_gate",
                              f"unknown gate {_short(gate)} (expected \"sigmoid\" or null)")
        act = r.str_("hidden_act", default="silu")
        if act not in ("silu", "situ_glu"):
            raise ConfigError(path, "hidden_act",
                              f"unknown activation {_short(act)} (expected \"silu\" or \"situ_glu\")")
        scoring = r.str_alias(("scoring_func", "moe_router_activation_func"), default="sigmoid")
        if scoring not in ("sigmoid", "softmax"):
            raise ConfigError(path, "scoring_func", f"unknown scoring function {_short(scoring)}")
        arb = r.int_("attn_res_block_size", default=None, allow_none=True)
        if r.float_("rope_theta", default=None, allow_none=True) is None:
            raw = {k: v for k, v in raw.items() if k != "rope_theta"}  # null = the engine's default
        total = r.float_("total_params_billion", default=None, allow_none=True)
        active = r.float_("active_params_billion", default=None, allow_none=True)
        if total is not None and active is not None and active > total:
            raise ConfigError(path, "active_params_billion", f"{active} > total_params_billion {total}")

        name = _name(raw, path)
        return cls(
            name=name,
            display_name=_name(raw, path, "display_name", default=name),
            path=str(path),
            model_type=r.str_("model_type", default="unknown"),
            num_hidden_layers=n_layers,
            hidden_size=hidden,
            vocab_size=vocab,
            intermediate_size=inter,
            mixer_types=mixer,
            ffn_types=ffn,
            num_attention_heads=r.int_("num_attention_heads"),
            q_lora_rank=r.int_("q_lora_rank", default=None, allow_none=True),
            kv_lora_rank=r.int_("kv_lora_rank"),
            qk_nope_head_dim=r.int_("qk_nope_head_dim"),
            qk_rope_head_dim=r.int_("qk_rope_head_dim"),
            v_head_dim=r.int_("v_head_dim"),
            mla_use_rope=not r.bool_("mla_use_nope", default=False),
            mla_output_gate=gate,
            kda_num_heads=kda_heads,
            kda_head_dim=kda_dim,
            kda_conv_size=kda_conv,
            kda_gate_lower_bound=lower,
            n_routed_experts=n_exp,
            num_experts_per_tok=top_k,
            n_shared_experts=r.int_alias(("n_shared_experts", "num_shared_experts"), default=0),
            moe_intermediate_size=r.int_("moe_intermediate_size"),
            moe_latent_size=r.int_("moe_latent_size", default=None, allow_none=True),
            n_group=n_group,
            topk_group=topk_group,
            routed_scaling_factor=r.float_("routed_scaling_factor", default=1.0),
            scoring_func=scoring,
            norm_topk_prob=r.bool_alias(("norm_topk_prob", "moe_renormalize"), default=True),
            hidden_act=act,
            situ_glu_beta1=r.float_("situ_glu_beta1", default=4.0),
            situ_glu_beta2=r.float_("situ_glu_beta2", default=25.0),
            attn_res_block_size=arb,
            max_position_embeddings=r.int_("max_position_embeddings", default=4096),
            rms_norm_eps=r.float_("rms_norm_eps", default=1e-6),
            total_params_billion=total,
            active_params_billion=active,
            raw=dict(raw),
        )


def _mixers(raw: dict, path: str | Path, n_layers: int) -> tuple:
    """(mixer types, KDA heads, head dim, conv size, gate lower bound) from linear_attn_config (1-based lists);
    all MLA without it."""
    lin = raw.get("linear_attn_config")
    if lin is None:
        return ("mla",) * n_layers, None, None, None, None
    if not isinstance(lin, dict):
        raise ConfigError(path, "linear_attn_config", "must be an object")
    lr = _Reader(lin, path, prefix="linear_attn_config.")
    kda_l = lr.int_list("kda_layers")
    full_l = lr.int_list("full_attn_layers")
    mixer_list: list[str | None] = [None] * n_layers
    for fname, lst, kind in (("kda_layers", kda_l, "kda"), ("full_attn_layers", full_l, "mla")):
        for v in lst:
            if not 1 <= v <= n_layers:
                raise ConfigError(path, f"linear_attn_config.{fname}",
                                  f"layer {v} outside 1..{n_layers} (lists are 1-based)")
            if mixer_list[v - 1] is not None:
                raise ConfigError(path, f"linear_attn_config.{fname}", f"layer {v} listed more than once")
            mixer_list[v - 1] = kind
    missing = [i + 1 for i, m in enumerate(mixer_list) if m is None]
    if missing:
        raise ConfigError(path, "linear_attn_config.kda_layers",
                          f"layers {missing[:8]}{'...' if len(missing) > 8 else ''} are in neither "
                          "kda_layers nor full_attn_layers")
    return (tuple(mixer_list), lr.int_("num_heads"), lr.int_("head_dim"),
            lr.int_("short_conv_kernel_size", default=4),
            lr.float_("gate_lower_bound", default=None, allow_none=True))


def _routing(r: "_Reader", path: str | Path) -> tuple[int, int, int, int]:
    """(experts, top-k, groups, kept groups), consistent with each other."""
    n_exp = r.int_alias(("n_routed_experts", "num_experts"))
    top_k = r.int_alias(("num_experts_per_tok", "num_experts_per_token"))
    if top_k > n_exp:
        key = r.present(("num_experts_per_tok", "num_experts_per_token"))
        raise ConfigError(path, key, f"top-k {top_k} > number of experts {n_exp}")
    n_group = r.int_alias(("n_group", "num_expert_group"), default=1)
    topk_group = r.int_("topk_group", default=1)
    if n_exp % n_group:
        raise ConfigError(path, r.present(("n_group", "num_expert_group")) or "n_group",
                          f"{n_exp} experts do not split into {n_group} groups")
    if topk_group > n_group:
        raise ConfigError(path, "topk_group", f"{topk_group} > n_group {n_group}")
    if n_group > 1 and top_k > topk_group * (n_exp // n_group):
        raise ConfigError(path, r.present(("num_experts_per_tok", "num_experts_per_token")) or "num_experts_per_tok",
                          f"top-k {top_k} larger than the {topk_group * (n_exp // n_group)} experts in the kept groups")
    return n_exp, top_k, n_group, topk_group


def _name(raw: dict, path: str | Path, key: str = "name", default: str | None = None) -> str:
    """The short string at `key`; missing or empty: `default`, else the file's stem."""
    name = raw.get(key)
    if name is None or name == "":
        return Path(str(path)).stem if default is None else default
    if not isinstance(name, str):
        raise ConfigError(path, key, f"must be a string, got {type(name).__name__} {_short(name)}")
    if len(name) > MAX_NAME_CHARS:
        raise ConfigError(path, key, f"too long: {len(name)} characters (maximum {MAX_NAME_CHARS})")
    return name


# ---------------------------------------------------------------------- reading a document


def _read_text(path: Path) -> str:
    """The file's text, at most MAX_BYTES bytes of UTF-8."""
    try:
        return bounded_json.read_text(path, MAX_BYTES)
    except bounded_json.JSONLimitError as exc:
        raise ConfigError(path, "<file>", _problem(exc)) from exc


def parse_json(text: str, path: str | Path = "<text>") -> dict:
    """json.loads for config documents: size, depth, integer length and non-finite numbers bounded
    (compute.guards.bounded_json); any problem, or a top level that is not an object, is a ConfigError."""
    try:
        return bounded_json.load_object(text, MAX_BYTES, MAX_DEPTH)
    except bounded_json.JSONLimitError as exc:
        raise ConfigError(path, "<json>" if exc.kind == "json" else "<file>", _problem(exc)) from exc


def _problem(exc: bounded_json.JSONLimitError) -> str:
    return f"{exc.problem}: not a model config" if exc.kind == "size" else exc.problem


def _short(v: Any, limit: int = 60) -> str:
    """repr(v), cut to `limit` characters for a one-line message."""
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_MISSING = object()

# the family's second names for a field → the name its limits are filed under
_CANONICAL = {"num_experts": "n_routed_experts", "num_experts_per_token": "num_experts_per_tok",
              "num_expert_group": "n_group", "num_shared_experts": "n_shared_experts"}


class _Reader:
    """Typed, range-checked field access with ConfigError messages that name the file and the field."""

    def __init__(self, raw: dict, path: str | Path, prefix: str = ""):
        self.raw, self.path, self.prefix = raw, path, prefix

    def _get(self, key: str, default: Any) -> Any:
        if key in self.raw:
            return self.raw[key]
        if default is _MISSING:
            raise ConfigError(self.path, self.prefix + key, "missing")
        return default

    def _fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(self.path, self.prefix + key, problem)

    def _check_range(self, key: str, v: float) -> None:
        lo, hi = LIMITS[self.prefix + _CANONICAL.get(key, key)]
        if v < lo:
            word = "negative" if v < 0 <= lo else "too small"
            why = _WHY_MINIMUM.get(self.prefix + _CANONICAL.get(key, key))
            raise self._fail(key, f"{word}: {_short(v)} (minimum {lo}{': ' + why if why else ''})")
        if v > hi:
            raise self._fail(key, f"too large: {_short(v)} (maximum {hi})")

    def present(self, keys: tuple[str, ...]) -> str | None:
        for k in keys:
            if k in self.raw:
                return self.prefix + k
        return None

    def int_(self, key: str, default: Any = _MISSING, allow_none: bool = False) -> Any:
        v = self._get(key, default)
        if v is None and (allow_none or key not in self.raw):
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise self._fail(key, f"must be an integer, got {type(v).__name__} {_short(v)}")
        self._check_range(key, v)
        return v

    def int_alias(self, keys: tuple[str, ...], default: Any = _MISSING) -> Any:
        for k in keys:
            if k in self.raw:
                return self.int_(k)
        if default is _MISSING:
            raise self._fail(keys[0], f"missing (also looked for {', '.join(keys[1:])})")
        return default

    def float_(self, key: str, default: Any = _MISSING, allow_none: bool = False) -> Any:
        v = self._get(key, default)
        if v is None and (allow_none or key not in self.raw):
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self._fail(key, f"must be a number, got {type(v).__name__} {_short(v)}")
        if isinstance(v, float) and not math.isfinite(v):
            raise self._fail(key, f"must be a finite number, got {v}")
        self._check_range(key, v)  # before float(): a huge int would overflow it
        return float(v)

    def bool_(self, key: str, default: Any = _MISSING) -> bool:
        v = self._get(key, default)
        if not isinstance(v, bool):
            raise self._fail(key, f"must be true or false, got {_short(v)}")
        return v

    def bool_alias(self, keys: tuple[str, ...], default: bool) -> bool:
        for k in keys:
            if k in self.raw:
                return self.bool_(k)
        return default

    def str_(self, key: str, default: Any = _MISSING) -> str:
        v = self._get(key, default)
        if not isinstance(v, str):
            raise self._fail(key, f"must be a string, got {type(v).__name__} {_short(v)}")
        if len(v) > MAX_NAME_CHARS:
            raise self._fail(key, f"too long: {len(v)} characters (maximum {MAX_NAME_CHARS})")
        return v

    def str_alias(self, keys: tuple[str, ...], default: str) -> str:
        for k in keys:
            if k in self.raw:
                return self.str_(k)
        return default

    def int_list(self, key: str) -> list[int]:
        v = self._get(key, _MISSING)
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
            raise self._fail(key, "must be a list of integers")
        return v


def load_default() -> ModelConfig:
    """Kimi K3's config (assets/configs/kimi-k3.json)."""
    return ModelConfig.from_json(DEFAULT_CONFIG)


@functools.lru_cache(maxsize=1)
def default_config() -> ModelConfig:
    """Kimi K3's config read once per process and shared (ModelConfig is frozen): the window, the scene and the
    labels' dims all start from it, and reading it each time cost start-up ~10 ms."""
    return load_default()


def available_configs() -> dict[str, Path]:
    """name (file stem) → path of every config shipped in assets/configs."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.json"))}
