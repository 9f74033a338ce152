"""Model configuration: a Hugging Face style config.json → `ModelConfig`.

The loader is general for the Kimi / DeepSeek family: Kimi K3 (assets/configs/kimi-k3.json), Kimi Linear,
Kimi K2 and DeepSeek-V3. Field names follow each model's own config.json; where the family uses two names for
one thing (``n_routed_experts`` / ``num_experts``) both are accepted. Features a model lacks (AttnRes, a
latent MoE, KDA layers, an MLA output gate) are simply absent (None / False).

Every problem with a file raises `ConfigError`, whose message names the file and the field.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).resolve().parents[1] / "assets" / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "kimi-k3.json"


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
    raw: dict = field(default_factory=dict, repr=False, compare=False)

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
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(path, "<file>", f"cannot read: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(path, "<file>", "not UTF-8 text") from exc
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(path, "<json>", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
        if not isinstance(raw, dict):
            raise ConfigError(path, "<json>", "top level must be a JSON object")
        return cls.from_dict(raw, path)

    @classmethod
    def from_dict(cls, raw: dict[str, Any], path: str | Path = "<dict>") -> "ModelConfig":
        r = _Reader(raw, path)
        n_layers = r.int_("num_hidden_layers", minimum=1)
        hidden = r.int_("hidden_size", minimum=1)
        vocab = r.int_("vocab_size", minimum=1)
        inter = r.int_("intermediate_size", minimum=1)

        # --- mixers: KDA / MLA layer lists (1-based in the file) ---
        lin = raw.get("linear_attn_config")
        if lin is None:
            mixer = ("mla",) * n_layers
            kda_heads = kda_dim = kda_conv = None
            lower = None
        else:
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
                        raise ConfigError(path, f"linear_attn_config.{fname}",
                                          f"layer {v} listed more than once")
                    mixer_list[v - 1] = kind
            missing = [i + 1 for i, m in enumerate(mixer_list) if m is None]
            if missing:
                raise ConfigError(path, "linear_attn_config.kda_layers",
                                  f"layers {missing[:8]}{'...' if len(missing) > 8 else ''} are in neither "
                                  "kda_layers nor full_attn_layers")
            mixer = tuple(mixer_list)  # type: ignore[arg-type]
            kda_heads = lr.int_("num_heads", minimum=1)
            kda_dim = lr.int_("head_dim", minimum=1)
            kda_conv = lr.int_("short_conv_kernel_size", minimum=1, default=4)
            lower = lr.float_("gate_lower_bound", default=None, allow_none=True)

        # --- FFN: dense for the first k layers, then MoE every moe_layer_freq ---
        first_dense = r.int_("first_k_dense_replace", minimum=0, default=0)
        freq = r.int_("moe_layer_freq", minimum=1, default=1)
        if first_dense > n_layers:
            raise ConfigError(path, "first_k_dense_replace", f"{first_dense} > num_hidden_layers {n_layers}")
        ffn = tuple("moe" if (i >= first_dense and i % freq == 0) else "dense" for i in range(n_layers))

        n_exp = r.int_alias(("n_routed_experts", "num_experts"), minimum=1)
        top_k = r.int_alias(("num_experts_per_tok", "num_experts_per_token"), minimum=1)
        if top_k > n_exp:
            key = r.present(("num_experts_per_tok", "num_experts_per_token"))
            raise ConfigError(path, key, f"top-k {top_k} > number of experts {n_exp}")
        n_group = r.int_alias(("n_group", "num_expert_group"), minimum=1, default=1)
        topk_group = r.int_("topk_group", minimum=1, default=1)
        if n_exp % n_group:
            raise ConfigError(path, r.present(("n_group", "num_expert_group")) or "n_group",
                              f"{n_exp} experts do not split into {n_group} groups")
        if topk_group > n_group:
            raise ConfigError(path, "topk_group", f"{topk_group} > n_group {n_group}")
        if n_group > 1 and top_k > topk_group * (n_exp // n_group):
            raise ConfigError(path, "num_experts_per_tok", "top-k larger than the experts in the kept groups")

        gate = raw.get("mla_output_gate")
        if gate is not None and gate != "sigmoid":
            raise ConfigError(path, "mla_output_gate", f"unknown gate {gate!r} (expected \"sigmoid\" or null)")
        act = r.str_("hidden_act", default="silu")
        if act not in ("silu", "situ_glu"):
            raise ConfigError(path, "hidden_act", f"unknown activation {act!r} (expected \"silu\" or \"situ_glu\")")
        scoring = r.str_alias(("scoring_func", "moe_router_activation_func"), default="sigmoid")
        if scoring not in ("sigmoid", "softmax"):
            raise ConfigError(path, "scoring_func", f"unknown scoring function {scoring!r}")
        arb = r.int_("attn_res_block_size", minimum=1, default=None, allow_none=True)

        return cls(
            name=str(raw.get("name") or Path(str(path)).stem),
            path=str(path),
            model_type=r.str_("model_type", default="unknown"),
            num_hidden_layers=n_layers,
            hidden_size=hidden,
            vocab_size=vocab,
            intermediate_size=inter,
            mixer_types=mixer,
            ffn_types=ffn,
            num_attention_heads=r.int_("num_attention_heads", minimum=1),
            q_lora_rank=r.int_("q_lora_rank", minimum=1, default=None, allow_none=True),
            kv_lora_rank=r.int_("kv_lora_rank", minimum=1),
            qk_nope_head_dim=r.int_("qk_nope_head_dim", minimum=0),
            qk_rope_head_dim=r.int_("qk_rope_head_dim", minimum=0),
            v_head_dim=r.int_("v_head_dim", minimum=1),
            mla_use_rope=not r.bool_("mla_use_nope", default=False),
            mla_output_gate=gate,
            kda_num_heads=kda_heads,
            kda_head_dim=kda_dim,
            kda_conv_size=kda_conv,
            kda_gate_lower_bound=lower,
            n_routed_experts=n_exp,
            num_experts_per_tok=top_k,
            n_shared_experts=r.int_alias(("n_shared_experts", "num_shared_experts"), minimum=0, default=0),
            moe_intermediate_size=r.int_("moe_intermediate_size", minimum=1),
            moe_latent_size=r.int_("moe_latent_size", minimum=1, default=None, allow_none=True),
            n_group=n_group,
            topk_group=topk_group,
            routed_scaling_factor=r.float_("routed_scaling_factor", default=1.0, minimum=0.0),
            scoring_func=scoring,
            norm_topk_prob=r.bool_alias(("norm_topk_prob", "moe_renormalize"), default=True),
            hidden_act=act,
            situ_glu_beta1=r.float_("situ_glu_beta1", default=4.0, minimum=0.0),
            situ_glu_beta2=r.float_("situ_glu_beta2", default=25.0, minimum=0.0),
            attn_res_block_size=arb,
            max_position_embeddings=r.int_("max_position_embeddings", minimum=1, default=4096),
            rms_norm_eps=r.float_("rms_norm_eps", default=1e-6, minimum=0.0),
            total_params_billion=r.float_("total_params_billion", default=None, allow_none=True, minimum=0.0),
            active_params_billion=r.float_("active_params_billion", default=None, allow_none=True, minimum=0.0),
            raw=dict(raw),
        )


_MISSING = object()


class _Reader:
    """Typed field access with ConfigError messages that name the file and the field."""

    def __init__(self, raw: dict, path: str | Path, prefix: str = ""):
        self.raw, self.path, self.prefix = raw, path, prefix

    def _get(self, key: str, default: Any) -> Any:
        if key in self.raw:
            return self.raw[key]
        if default is _MISSING:
            raise ConfigError(self.path, self.prefix + key, "missing")
        return default

    def present(self, keys: tuple[str, ...]) -> str | None:
        for k in keys:
            if k in self.raw:
                return self.prefix + k
        return None

    def int_(self, key: str, minimum: int | None = None, default: Any = _MISSING, allow_none: bool = False) -> Any:
        v = self._get(key, default)
        if v is None and (allow_none or key not in self.raw):
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(self.path, self.prefix + key, f"must be an integer, got {type(v).__name__} {v!r}")
        if minimum is not None and v < minimum:
            word = "negative" if v < 0 else "too small"
            raise ConfigError(self.path, self.prefix + key, f"{word}: {v} (minimum {minimum})")
        return v

    def int_alias(self, keys: tuple[str, ...], minimum: int | None = None, default: Any = _MISSING) -> Any:
        for k in keys:
            if k in self.raw:
                return self.int_(k, minimum=minimum)
        if default is _MISSING:
            raise ConfigError(self.path, self.prefix + keys[0], f"missing (also looked for {', '.join(keys[1:])})")
        return default

    def float_(self, key: str, default: Any = _MISSING, allow_none: bool = False, minimum: float | None = None) -> Any:
        v = self._get(key, default)
        if v is None and (allow_none or key not in self.raw):
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ConfigError(self.path, self.prefix + key, f"must be a number, got {type(v).__name__} {v!r}")
        if minimum is not None and v < minimum:
            raise ConfigError(self.path, self.prefix + key, f"negative: {v}")
        return float(v)

    def bool_(self, key: str, default: Any = _MISSING) -> bool:
        v = self._get(key, default)
        if not isinstance(v, bool):
            raise ConfigError(self.path, self.prefix + key, f"must be true or false, got {v!r}")
        return v

    def bool_alias(self, keys: tuple[str, ...], default: bool) -> bool:
        for k in keys:
            if k in self.raw:
                return self.bool_(k)
        return default

    def str_(self, key: str, default: Any = _MISSING) -> str:
        v = self._get(key, default)
        if not isinstance(v, str):
            raise ConfigError(self.path, self.prefix + key, f"must be a string, got {type(v).__name__} {v!r}")
        return v

    def str_alias(self, keys: tuple[str, ...], default: str) -> str:
        for k in keys:
            if k in self.raw:
                return self.str_(k)
        return default

    def int_list(self, key: str) -> list[int]:
        v = self._get(key, _MISSING)
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
            raise ConfigError(self.path, self.prefix + key, "must be a list of integers")
        return v


def load_default() -> ModelConfig:
    """Kimi K3's config (assets/configs/kimi-k3.json)."""
    return ModelConfig.from_json(DEFAULT_CONFIG)


def available_configs() -> dict[str, Path]:
    """name (file stem) → path of every config shipped in assets/configs."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.json"))}
