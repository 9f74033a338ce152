"""Quantile Balancing simulator: a deliberately skewed router over a batch of tokens, and K3's bias update.

Qt-free. The routing and the bias rule are the engine's own operators (`compute.ops.moe.route`,
`compute.ops.moe.quantile_balance`, docs/spec/k3-math.md §3); this module only makes a skewed batch, calls them
update after update, and records the load per expert.

The skewed router (a constructed teaching batch, not K3's weights):

    logits_ij = x_i · W_j + p_j            x_i ~ N(0, I_d) token features [m, d]; W [d, n] ~ N(0, 1/d)
                                           p_j = skew · z_j, z_j ~ N(0, 1): a fixed popularity per expert
    s_ij      = sigmoid(logits_ij)          the router's sigmoid scores [m, n]

Each update t:  load_t = bincount(topk(s + b_t, k));  b_{t+1} = quantile_balance(s, b_t, k).
By default the same batch is routed again with the new bias (how close the rule gets to the fair share);
with `fresh_batches=True` every update draws a new batch from the same skewed router, as in training where
the bias computed on one batch is used for the next one.

    ideal load  q = m · k / n              (every expert gets its fair share of the m·k slots)
    imbalance   max_j load_j / q

When to stop (`stop_reason`): at the target (max-load/ideal below TARGET), or when the balance has levelled
off: the best max-load/ideal of the last PATIENCE updates is not lower, by at least MIN_GAIN, than the best of
all the updates before them. Loads are whole tokens, so the ratio moves in steps of 1/q and often settles
above the target (the same batch routed again: the ties at the quantile keep a few experts one or two tokens
over q; with fresh batches the sampling noise of a new batch does).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


TARGET = 1.02  # max-load/ideal counted as balanced
PATIENCE = 5  # updates without improvement before the balance counts as levelled off
MIN_GAIN = 1e-3  # a smaller drop in the best max-load/ideal is no improvement


@dataclass(frozen=True)
class QBStop:
    reason: str  # "target" or "levelled"
    value: float  # "target": the max-load/ideal reached; "levelled": the best one, not bettered since
    updates: int  # the update at which the rule fired


@dataclass
class QBRecord:
    update: int  # 0 = before any update
    bias: np.ndarray  # [n] the bias used for this routing
    load: np.ndarray  # [n] tokens routed to each expert
    max_over_ideal: float


@dataclass
class QBSimulator:
    n_experts: int = 896
    top_k: int = 16
    n_tokens: int = 4088  # = 56 · 73: q = m·k/n = 73 exactly
    skew: float = 0.25
    d_features: int = 16
    seed: int = 0
    fresh_batches: bool = False
    history: list[QBRecord] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.top_k < self.n_experts:
            raise ValueError(f"top_k must be in [1, n_experts); got {self.top_k} of {self.n_experts}")
        if self.n_tokens < 1:
            raise ValueError(f"n_tokens must be >= 1; got {self.n_tokens}")
        self._rng = np.random.default_rng(self.seed)
        self.W = self._rng.normal(0.0, 1.0 / np.sqrt(self.d_features), (self.d_features, self.n_experts))
        self.popularity = self.skew * self._rng.normal(0.0, 1.0, self.n_experts)
        self.logits = self.draw_batch()
        self.bias = np.zeros(self.n_experts)
        self.history = [self._record(0)]

    # --- the batch -------------------------------------------------------------------------------
    def draw_batch(self) -> np.ndarray:
        """A new batch of router logits [m, n] from the skewed router."""
        x = self._rng.normal(0.0, 1.0, (self.n_tokens, self.d_features))
        return x @ self.W + self.popularity

    @property
    def scores(self) -> np.ndarray:
        """s = sigmoid(logits) [m, n]."""
        return 1.0 / (1.0 + np.exp(-self.logits))

    @property
    def ideal(self) -> float:
        """q = m·k/n, every expert's fair share of the batch's m·k routing slots."""
        return self.n_tokens * self.top_k / self.n_experts

    # --- the engine's operators --------------------------------------------------------------------
    def load(self, bias: np.ndarray) -> np.ndarray:
        """Tokens per expert [n] when the batch is routed with `bias` (compute.ops.moe.route, K3 gate)."""
        from compute.ops.moe import route

        _, idx = route(np.asarray(self.logits, dtype=np.float64), np.asarray(bias, dtype=np.float64), self.top_k)
        return np.bincount(idx.reshape(-1), minlength=self.n_experts)

    def next_bias(self) -> np.ndarray:
        """b' = quantile_balance(s, b, k) on the current batch (compute.ops.moe.quantile_balance)."""
        from compute.ops.moe import quantile_balance

        return np.asarray(quantile_balance(self.scores, self.bias, self.top_k), dtype=np.float64)

    # --- updates -----------------------------------------------------------------------------------
    def _record(self, update: int) -> QBRecord:
        load = self.load(self.bias)
        return QBRecord(update, self.bias.copy(), load, float(load.max() / self.ideal))

    def update(self) -> QBRecord:
        """One Quantile Balancing update; returns the record of routing with the new bias."""
        self.bias = self.next_bias()
        if self.fresh_batches:
            self.logits = self.draw_batch()
        rec = self._record(len(self.history))
        self.history.append(rec)
        return rec

    @property
    def before(self) -> QBRecord:
        return self.history[0]

    @property
    def current(self) -> QBRecord:
        return self.history[-1]

    def imbalance_curve(self) -> np.ndarray:
        """max-load/ideal for update 0, 1, 2, ... [len(history)]."""
        return np.array([r.max_over_ideal for r in self.history])

    def stop_reason(self, target: float = TARGET, patience: int = PATIENCE,
                    min_gain: float = MIN_GAIN) -> QBStop | None:
        """Why updating should stop now, or None while the balance still improves (see the module doc)."""
        curve = self.imbalance_curve()
        now = len(self.history) - 1
        if now >= 1 and curve[-1] < target:
            return QBStop("target", float(curve[-1]), now)
        if curve.size >= patience + 2:  # the window of `patience` updates, and at least one update before it
            earlier, recent = float(curve[1:-patience].min()), float(curve[-patience:].min())
            if recent > earlier - min_gain:
                return QBStop("levelled", min(earlier, recent), now)
        return None
