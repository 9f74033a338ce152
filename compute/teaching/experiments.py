"""Qt-free formulas behind the learning layer's experiments (Experiments and Learn docks).

Every function runs a real K3 formula (docs/spec/k3-math.md) on small, constructed teaching numbers; the UI labels
them "real K3 formula, toy numbers" and says what is constructed. float64 numpy throughout.

Sections: 1-D KDA (delta rule), Block AttnRes toy, router sigmoid + bias top-k, temperature / top-p,
attention toy (Q·K softmax per head), tokenizer -> embedding facts, serving cost arithmetic,
speculative-decoding expectation, HTTP chunking of a token stream.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# --- real K3 facts used by the experiments, read from K3's shipped config (assets/configs/kimi-k3.json) --------------
def _k3():
    from compute.config import default_config

    return default_config()


K3_VOCAB = _k3().vocab_size
K3_HIDDEN = _k3().hidden_size
K3_EXPERTS = _k3().n_routed_experts
K3_TOPK = _k3().num_experts_per_tok
BF16_BYTES = 2


# =============================================================================================================
# 1. KDA in one dimension (seed experiment 2)
# =============================================================================================================
KDA_S_PREV = 0.3


@dataclass(frozen=True)
class KdaStep1D:
    s_prev: float
    s_bar: float  # α·S_prev            (forget)
    error: float  # v − k·S̄            (what the memory got wrong)
    s_new: float  # S̄ + β·k·error      (delta-rule write)
    out: float  # q·S_new             (read after the update)


def kda_step_1d(alpha: float, beta: float, v: float, s_prev: float = KDA_S_PREV,
                k: float = 1.0, q: float = 1.0) -> KdaStep1D:
    """One KDA step with a scalar state (d_k = d_v = 1): S̄ = α·S_prev; err = v − k·S̄; S_new = S̄ + β·k·err;
    out = q·S_new. With k = q = 1 this is the seed's teaching version of S_t = (I − βkkᵀ)Diag(α)S + βkvᵀ."""
    s_bar = alpha * s_prev
    error = v - k * s_bar
    s_new = s_bar + beta * k * error
    return KdaStep1D(s_prev, s_bar, error, s_new, q * s_new)


def kda_sequence_1d(alpha: float, beta: float, v: np.ndarray, s0: float = KDA_S_PREV) -> np.ndarray:
    """Run the 1-D step over a sequence v [T]; returns S after each step [T] (k = q = 1)."""
    out = np.empty(len(v), dtype=np.float64)
    s = float(s0)
    for t, vt in enumerate(np.asarray(v, dtype=np.float64)):
        s = kda_step_1d(alpha, beta, float(vt), s).s_new
        out[t] = s
    return out


def kda_demo_inputs(v: float, steps: int = 16) -> np.ndarray:
    """The 'many steps' input: v held for the first half, then 0 (so the plot shows writing, then decay and
    overwriting). Constructed. Shape [steps]."""
    seq = np.zeros(steps, dtype=np.float64)
    seq[: steps // 2] = v
    return seq


# =============================================================================================================
# 2. Block AttnRes toy (seed experiment 3)
# =============================================================================================================
ATTNRES_BLOCKS = np.array([0.9, -0.6, 0.3, 1.5])  # constructed 1-D summaries of four earlier blocks


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along axis."""
    x = np.asarray(x, dtype=np.float64)
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


@dataclass(frozen=True)
class AttnResToy:
    scores: np.ndarray  # [N] s_c = w · key_c
    weights: np.ndarray  # [N] softmax(s)
    mixed: float  # Σ_c weights_c · V_c
    plain: float  # plain residual: Σ_c V_c (every block added with weight 1)


def attnres_toy(strength: float, important: int, values: np.ndarray = ATTNRES_BLOCKS) -> AttnResToy:
    """AttnRes over N 1-D block summaries V [N]. The key of block c is 1 where it holds the important feature
    and 0 elsewhere (the simplification the seed uses); the pseudo-query has strength w, so s_c = w·key_c,
    a = softmax(s), mixed = Σ a_c V_c. The real K3 score is RMSNorm(V_c)·w over 7,168 dims (docs/spec/k3-math.md §4)."""
    values = np.asarray(values, dtype=np.float64)
    if not 0 <= important < len(values):
        raise ValueError(f"important block {important} out of range 0..{len(values) - 1}")
    keys = np.zeros(len(values))
    keys[important] = 1.0
    scores = strength * keys
    weights = softmax(scores)
    return AttnResToy(scores, weights, float(weights @ values), float(values.sum()))


# =============================================================================================================
# 3. Router: sigmoid + bias -> top-k, weights from the unbiased scores (seed experiment 4)
# =============================================================================================================
MOE_FEATURES = ("code", "korean", "math")


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


@dataclass(frozen=True)
class RouteResult:
    scores: np.ndarray  # [E] s = sigmoid(logits)
    biased: np.ndarray  # [E] s + b (selection only)
    idx: np.ndarray  # [k] selected experts, best biased score first
    weights: np.ndarray  # [k] s[idx] / Σ s[idx]
    cutoff: float  # the k-th best biased score


def route_topk(logits: np.ndarray, bias: np.ndarray, k: int = K3_TOPK, scale: float = 1.0) -> RouteResult:
    """K3 router for one token: s = sigmoid(logits) [E]; idx = topk(s + b, k); w = s[idx]/(Σ s[idx] + 1e-20)·scale."""
    scores = sigmoid(logits)
    biased = scores + np.asarray(bias, dtype=np.float64)
    idx = np.argsort(-biased, kind="stable")[:k]
    w = scores[idx] / (scores[idx].sum() + 1e-20) * scale
    return RouteResult(scores, biased, idx, w, float(biased[idx[-1]]))


def moe_toy_logits(feature: str, focus_expert: int = 17, n: int = K3_EXPERTS, k: int = K3_TOPK) -> np.ndarray:
    """Constructed router logits for one token [n]: seeded normal per input feature, with `focus_expert` placed
    just below the k-th best (its score sits between ranks k+3 and k+4), so a small bias pulls it in."""
    if feature not in MOE_FEATURES:
        raise ValueError(f"unknown feature {feature!r}")
    rng = np.random.default_rng(1000 + MOE_FEATURES.index(feature))
    logits = rng.normal(0.0, 1.2, n)
    logits[focus_expert] = -np.inf
    order = np.sort(logits)[::-1]
    logits[focus_expert] = 0.5 * (order[k + 2] + order[k + 3])
    return logits


# =============================================================================================================
# 4. Temperature and top-p (seed experiment 5; Hugging Face semantics, docs/spec/k3-math.md §5)
# =============================================================================================================
SAMPLING_LOGITS = np.array([3.1, 2.4, 1.7, 0.6, -0.4])  # constructed logits of 5 candidate tokens


def temperature_probs(logits: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(logits / T) [V]; T <= 0 means greedy (one-hot on the argmax)."""
    logits = np.asarray(logits, dtype=np.float64)
    if temperature <= 0:
        p = np.zeros_like(logits)
        p[int(np.argmax(logits))] = 1.0
        return p
    return softmax(logits / temperature)


def top_p_probs(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """HF top-p on softmax(logits/T): sort ascending, cum = cumsum; drop tokens with cum <= 1 − top_p, always
    keep the top one; renormalise. Returns probabilities [V] in the original order."""
    p = temperature_probs(logits, temperature)
    order = np.argsort(p, kind="stable")  # ascending
    cum = np.cumsum(p[order])
    drop = cum <= 1.0 - top_p
    drop[-1] = False
    kept = p.copy()
    kept[order[drop]] = 0.0
    return kept / kept.sum()


def sample_index(probs: np.ndarray, seed: int) -> int:
    """Seeded draw from probs [V] (inverse CDF with one uniform from numpy's default_rng(seed))."""
    u = np.random.default_rng(seed).random()
    cdf = np.cumsum(probs)
    return int(min(np.searchsorted(cdf, u * cdf[-1], side="right"), len(probs) - 1))


# =============================================================================================================
# 5. Streaming: HTTP chunks carry variable-length text, not tokens
# =============================================================================================================
def chunk_stream(pieces: list[str], seed: int = 7, max_tokens_per_chunk: int = 3) -> list[list[int]]:
    """Group token indices into HTTP chunks of 1..max tokens (seeded, as a server flushing on its own timer).
    Returns one list of token indices per chunk; concatenated they are 0..len-1 in order."""
    rng = np.random.default_rng(seed)
    chunks, i = [], 0
    while i < len(pieces):
        n = int(rng.integers(1, max_tokens_per_chunk + 1))
        chunks.append(list(range(i, min(i + n, len(pieces)))))
        i += n
    return chunks


# =============================================================================================================
# 6. Attention toy (C5): Q·K softmax per head over "로봇이 컵을 탁자에서 집었다"
# =============================================================================================================
ATTN_TOKENS_KO = ("로봇이", "컵을", "탁자에서", "집었다")
ATTN_TOKENS_EN = ("The robot", "the cup", "from the table", "picked up")
ATTN_HEADS = 3

# Constructed toy embeddings [4 tokens, 4 features]: roughly (agent, object, place, action) + small mixing.
_ATTN_X = np.array([
    [1.0, 0.1, 0.0, 0.2],
    [0.1, 1.0, 0.2, 0.0],
    [0.0, 0.2, 1.0, 0.1],
    [0.2, 0.1, 0.1, 1.0],
])
_ATTN_WK = np.eye(4)
# Per-head W_q [4, 4]: every head maps the "action" feature onto a different role (constructed).
_ATTN_WQ = np.stack([
    np.eye(4) * 0.6 + np.outer([0, 0, 0, 1], [0, 4.0, 0, 0]),  # head 1: action looks for the object
    np.eye(4) * 0.6 + np.outer([0, 0, 0, 1], [0, 0, 4.0, 0]) + np.outer([0, 1, 0, 0], [0, 0, 2.4, 0]),  # place
    np.eye(4) * 0.6 + np.outer([0, 0, 0, 1], [4.0, 0, 0, 0]) + np.outer([0, 1, 0, 0], [2.4, 0, 0, 0]),  # agent
])


def attention_toy(head: int, causal: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Toy attention of one head: Q = X W_q^h [T, d], K = X W_k [T, d], scores = Q Kᵀ / sqrt(d) [T, T]
    (future positions masked to −inf when causal), A = softmax(scores) row-wise [T, T]. Returns (Q, K, A)."""
    if not 0 <= head < ATTN_HEADS:
        raise ValueError(f"head {head} out of range")
    q = _ATTN_X @ _ATTN_WQ[head]
    k = _ATTN_X @ _ATTN_WK
    scores = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        scores = np.where(np.tril(np.ones_like(scores)) > 0, scores, -np.inf)
    return q, k, softmax(scores, axis=-1)


def attention_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X [T, 4], W_q [H, 4, 4], W_k [4, 4]) of the toy, for tests and the 'show the numbers' view."""
    return _ATTN_X.copy(), _ATTN_WQ.copy(), _ATTN_WK.copy()


# =============================================================================================================
# 7. Tokenizer -> embedding (C6)
# =============================================================================================================
def utf8_bytes(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def embedding_row_bytes(hidden: int = K3_HIDDEN, bytes_per_number: int = BF16_BYTES) -> int:
    """Bytes of one embedding row: hidden × bytes per number (BF16: 7,168 × 2 = 14,336)."""
    return hidden * bytes_per_number


def embedding_table_bytes(vocab: int = K3_VOCAB, hidden: int = K3_HIDDEN, bytes_per_number: int = BF16_BYTES) -> int:
    return vocab * hidden * bytes_per_number


def toy_embedding_row(token_id: int, width: int = 8) -> np.ndarray:
    """A seeded toy embedding row [width] for an ID (fallback when no engine trace is available)."""
    return np.random.default_rng(token_id).normal(0.0, 1.0, width)


# =============================================================================================================
# 8. Serving arithmetic (X5)
# =============================================================================================================
def cost_per_turn(tokens_in: float, tokens_out: float, price_in_per_m: float, price_out_per_m: float) -> float:
    """Dollars for one turn: in × $in/1e6 + out × $out/1e6."""
    return tokens_in * price_in_per_m / 1e6 + tokens_out * price_out_per_m / 1e6


def mla_cache_bytes_per_token(config=None, bytes_per_number: float = BF16_BYTES) -> float:
    """MLA latent cache per token over all MLA layers of `config` (None: K3's; 576 numbers × 24 layers × 2 B =
    27,648 B). The formula is compute.teaching.memory.cache_bytes, the one every view uses."""
    from compute.teaching import memory

    return memory.cache_bytes(_shape(config), cache_bytes_per_number=bytes_per_number).mla_per_token


def kda_state_bytes(config=None, bytes_per_number: float = 4) -> float:
    """KDA state per sequence of `config` (None: K3's), constant in length: layers × heads × d_k × d_v × 4 B (fp32);
    0 for a model without KDA layers. compute.teaching.memory.cache_bytes."""
    from compute.teaching import memory

    return memory.cache_bytes(_shape(config), state_bytes_per_number=bytes_per_number).kda_per_sequence


def _shape(config):
    from compute.teaching import memory

    return memory.K3_SHAPE if config is None else memory.CacheShape.from_config(config)


def speculative_expected_tokens(acceptance: float, draft_len: int) -> float:
    """Expected tokens produced per target-model pass when each of `draft_len` draft tokens is accepted
    independently with probability a: (1 − a^(γ+1)) / (1 − a)  (Leviathan et al. 2023); γ + 1 when a = 1."""
    if not 0.0 <= acceptance <= 1.0:
        raise ValueError("acceptance must be in [0, 1]")
    if draft_len < 0:
        raise ValueError("draft length must be >= 0")
    if acceptance == 1.0:
        return float(draft_len + 1)
    return (1.0 - acceptance ** (draft_len + 1)) / (1.0 - acceptance)
