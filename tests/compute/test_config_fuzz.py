"""Fuzzing the config loader's promise: for any document, `ModelConfig.from_json` either returns
a config or raises ConfigError — never another exception — and every config it accepts runs the toy engine
to finite numbers within 5 s.

Documents: the bundled configs mutated (keys dropped, wrong types, extreme and non-finite numbers, huge
integer literals, deep nesting, layer counts with matching layer lists, routing groups, truncated text) and
random JSON. Derandomized, so a run is repeatable; about 1,000 documents.
"""
import copy
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compute.config import ConfigError, ModelConfig, available_configs

N_DOCUMENTS = 1000
RUN_SECONDS = 30.0  # a hang guard only (a run takes 0.1-1 s; on a loaded 2-core CI machine one took > 5 s)
HUGE = "<4,301-digit integer>"  # json.dumps cannot write it: put in the text afterwards
PROMPT = "the robot 모델 🙂 zq"  # toy pieces, Hangul, UTF-8 byte pieces and a hashed word piece

BASES = {name: json.loads(p.read_text(encoding="utf-8")) for name, p in available_configs().items()}
TOP_KEYS = sorted({k for b in BASES.values() for k in b} | {"rope_theta", "name", "unknown_field"})
LIN_KEYS = sorted({k for b in BASES.values() for k in b.get("linear_attn_config", {})})

numbers = st.one_of(
    st.integers(-3, 20),
    st.sampled_from([0, 1, 2, 8, 61, 93, 128, 129, 256, 320, 321, 896, 1023, 1024, 1025, 4096, 163840,
                     1 << 24, 1 << 31, 1 << 63, 10 ** 18, 10 ** 19, 10 ** 400, HUGE]),
    st.integers(-10 ** 20, 10 ** 20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-320, 1e-12, 1e-6, 0.5, -0.0, -5.0, -50.0, -51.0, 2.5, 1e308]),
)
scalars = st.one_of(numbers, st.none(), st.booleans(), st.text(max_size=8),
                    st.sampled_from(["NaN", "Infinity", "1e999", "", "sigmoid", "situ_glu", "silu", "softmax"]))
values = st.one_of(scalars, st.lists(scalars, max_size=4),
                   st.dictionaries(st.text(max_size=4), scalars, max_size=3),
                   st.tuples(scalars, st.integers(1, 300)).map(lambda t: _nest(t[0], t[1])))


def _nest(v, depth: int):
    for _ in range(depth):
        v = [v]
    return v


def _layers(doc: dict, n: int, every: int) -> None:
    """num_hidden_layers = n with matching 1-based layer lists (every `every`-th layer MLA)."""
    doc["num_hidden_layers"] = n
    lin = doc.get("linear_attn_config")
    if isinstance(lin, dict):
        lin["kda_layers"] = [i for i in range(1, n + 1) if i % every]
        lin["full_attn_layers"] = [i for i in range(1, n + 1) if i % every == 0]


def _groups(doc: dict, n_group: int, topk_group: int) -> None:
    n_exp = doc.get("n_routed_experts", doc.get("num_experts"))
    if isinstance(n_exp, int) and not isinstance(n_exp, bool) and n_exp > 0:
        divisors = [d for d in range(1, min(n_exp, 1024) + 1) if n_exp % d == 0]
        g = divisors[n_group % len(divisors)]
        doc["n_group"], doc["topk_group"] = g, 1 + topk_group % g


ops = st.one_of(
    st.tuples(st.just("drop"), st.sampled_from(TOP_KEYS)),
    st.tuples(st.just("drop_lin"), st.sampled_from(LIN_KEYS)),
    st.tuples(st.just("set"), st.sampled_from(TOP_KEYS), values),
    st.tuples(st.just("set_lin"), st.sampled_from(LIN_KEYS), values),
    st.tuples(st.just("layers"), st.integers(1, 140), st.integers(1, 8)),
    st.tuples(st.just("groups"), st.integers(0, 64), st.integers(0, 64)),
    st.tuples(st.just("experts"), st.sampled_from([1, 2, 16, 64, 256, 1000, 1024]), st.integers(1, 64)),
    st.tuples(st.just("scalar"), st.sampled_from(["vocab_size", "situ_glu_beta1", "situ_glu_beta2", "rms_norm_eps",
                                                   "routed_scaling_factor", "attn_res_block_size", "rope_theta",
                                                   "n_shared_experts", "first_k_dense_replace", "moe_layer_freq"]),
              numbers),
)


def _apply(doc: dict, op: tuple) -> None:
    kind = op[0]
    lin = doc.get("linear_attn_config")
    if kind == "drop":
        doc.pop(op[1], None)
    elif kind == "drop_lin" and isinstance(lin, dict):
        lin.pop(op[1], None)
    elif kind in ("set", "scalar"):
        doc[op[1]] = op[2]
    elif kind == "set_lin" and isinstance(lin, dict):
        lin[op[1]] = op[2]
    elif kind == "layers":
        _layers(doc, op[1], op[2])
    elif kind == "groups":
        _groups(doc, op[1], op[2])
    elif kind == "experts":
        doc["n_routed_experts"] = op[1]
        doc.pop("num_experts", None)
        doc["num_experts_per_tok"] = min(op[1], op[2])
        doc.pop("num_experts_per_token", None)
        doc["n_group"], doc["topk_group"] = 1, 1
        doc.pop("num_expert_group", None)


@st.composite
def mutated(draw) -> str:
    doc = copy.deepcopy(BASES[draw(st.sampled_from(sorted(BASES)))])
    for op in draw(st.lists(ops, max_size=4)):
        _apply(doc, op)
    text = json.dumps(doc, allow_nan=True)  # non-finite floats become NaN / Infinity literals
    text = text.replace(json.dumps(HUGE), "9" * 4301)
    cut = draw(st.one_of(st.none(), st.integers(0, len(text))))
    return text if cut is None else text[:cut]


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6)),
                           lambda children: st.lists(children, max_size=4)
                           | st.dictionaries(st.text(max_size=6), children, max_size=4),
                           max_leaves=20)
documents = st.one_of(
    mutated(), mutated(), mutated(), mutated(),
    json_values.map(lambda v: json.dumps(v, allow_nan=True)),
    st.integers(1, 200_000).map(lambda n: '{"num_hidden_layers": ' + "[" * n + "]" * n + "}"),
    st.text(max_size=40),
)


def _finite_trace(trace) -> bool:
    """No NaN or inf anywhere, except the masked (−inf) entries of the attention scores."""
    arrays = [(k, a) for p in trace.passes for lt in p.layers for k, a in lt.tensors.items()]
    arrays += [(k, a) for p in trace.passes for k, a in p.final.items()]
    for key, a in arrays:
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
            continue
        # one pass over the array: outside the attention scores any NaN, +inf or -inf is non-finite
        if (not np.isfinite(a).all()) if key != "mla.scores" else (np.isnan(a).any() or np.isposinf(a).any()):
            return False
    return True


def test_any_document_is_a_config_or_a_config_error():
    from compute.engine import ToyK3
    from compute.trace import Knobs

    seen = {"documents": 0, "accepted": 0, "runs": 0, "slowest": 0.0, "run_seconds": 0.0}
    models: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"

        @settings(max_examples=N_DOCUMENTS, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(documents)
        def check(text):
            seen["documents"] += 1
            path.write_text(text, encoding="utf-8")
            try:
                cfg = ModelConfig.from_json(path)
            except ConfigError as exc:
                assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)
                return
            seen["accepted"] += 1
            key = (cfg, cfg.raw.get("rope_theta"))
            if key in models:
                return
            t0 = time.perf_counter()
            trace = ToyK3(cfg, device="cpu").run(PROMPT, max_new_tokens=1, knobs=Knobs(temperature=0.0))
            took = time.perf_counter() - t0
            models[key] = took
            seen["runs"] += 1
            seen["slowest"] = max(seen["slowest"], took)
            seen["run_seconds"] += took
            assert took < RUN_SECONDS, f"{took:.1f} s for {text[:200]}"
            assert len(trace.passes[0].layers) == cfg.num_hidden_layers
            assert _finite_trace(trace), text[:300]
            assert math.isclose(float(trace.passes[0].final["probs"].sum()), 1.0)

        check()
    print(seen)
    assert seen["documents"] >= N_DOCUMENTS
    assert seen["runs"] >= 50, seen  # the generator must reach accepted configs too
